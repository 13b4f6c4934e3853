"""ρ-EOS's declaration (Yang et al. 2026, arXiv 2601.22527): its options, traits and rules.

The hooks are in `seer.diffusion.rho_eos`. The options are named after the official `generate`
arguments (in their help), with the official script's defaults (`scripts/eval_LLaDA_rho_EOS.sh`);
giving any of them turns ρ-EOS on (`implies`). `gen_length` is its cap (the official
`max_gen_length`); `steps` and `block_length` do not apply (`rho_block` does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from seer.errors import SeerError
from seer.policies import Declaration, Traits, fits_cap
from seer.spec import option

GROUP = "rho-EOS"  # the CLI group of its options
GROUP_HELP = (
    "variable-length denoising (Yang et al. 2026, arXiv 2601.22527): the window starts at "
    "--rho-initial and grows or shrinks every step by the end-token density; --gen-length is "
    "its cap; --steps and --block-length do not apply. Defaults: the official script's"
)
SCHEDULERS = ("exp", "linear", "const")  # how K grows with the distance to the band


def _opt(default: float | int | str, help: str, flag: str, **kw: Any) -> Any:
    """A ρ-EOS option: its own CLI group, in the API, and giving it turns ρ-EOS on."""
    if isinstance(default, float):
        kw.update(lo=0, hi=1, note="a value in [0, 1]")
    elif isinstance(default, int):
        kw.update(lo=1)
    return option(default, help, flag=flag, group=GROUP, api=True, implies="rho_eos", **kw)


@dataclass(slots=True, frozen=True)
class RhoEos:
    """ρ-EOS's options (`SamplingParams(policies=(RhoEos(rho_initial=32),))`)."""

    rho_initial: int = _opt(64, "initial_gen_length: the first window", "--rho-initial")
    rho_block: int = _opt(32, "block_length: blocks over the changing window", "--rho-block")
    rho_expand: int = _opt(
        8, "expansion_factor: the unit K of every growth and shrink (x1..x8)", "--rho-expand"
    )
    rho_reveal: float = _opt(
        0.9, "high_conf_threshold: reveal every block mask above it (at least one)", "--rho-reveal"
    )
    rho_low: float = _opt(
        0.4, "low_density_threshold: the window grows while the density is below it", "--rho-low"
    )
    rho_high: float = _opt(
        0.6,
        "high_density_threshold: the window shrinks while the density is above it",
        "--rho-high",
    )
    rho_eos_tokens: int = _opt(
        32,
        "eos_check_tokens: end-token positions averaged from the window's end",
        "--rho-eos-tokens",
    )
    rho_scheduler: str = _opt(
        "exp",
        "scheduler: how K grows with the density's distance to the band (exp 1,2,4,8; linear "
        "1,2,3..8; const 1)",
        "--rho-scheduler",
        choices=SCHEDULERS,
        noun="rho_scheduler",
    )


def check(p: Any) -> None:
    if p.rho_low > p.rho_high:
        raise SeerError(
            f"rho_low {p.rho_low} exceeds rho_high {p.rho_high}: the window keeps its "
            "length while the density lies between them; give rho_low <= rho_high"
        )
    fits_cap(p, "rho_initial", "rho-EOS")


DECLARATION: Declaration = Declaration(
    name="rho_eos",
    options=RhoEos,
    switch=option(
        False,
        "turn rho-EOS on (the --rho-* options do too)",
        flag="--rho-eos",
        group=GROUP,
        api=True,
    ),
    # the window changes every step and it has its own reveal and end rules
    traits=Traits(
        sets_length=True,
        caches=("none",),
        whole_window=True,
        alone=True,
        rules=("low_confidence",),
        refuses=("suffix", "logits_eos_inf", "confidence_eos_eot_inf"),
    ),
    hooks="seer.diffusion.rho_eos",
    check=check,
    how="it changes the window every step",
    group=GROUP,
    group_help=GROUP_HELP,
    doc="Variable-length denoising (Yang et al. 2026): the window starts at `rho_initial` and, "
    "in the same steps that denoise it, grows while the end-token density is under "
    "`rho_low` and shrinks while it is over `rho_high`; `gen_length` is its cap, `steps` "
    "and `block_length` do not apply. Giving any of these options turns ρ-EOS on; the "
    "defaults are the official script's.",
)
