"""DAEDAL's declaration (Li et al. 2025, arXiv 2508.00819): its options, traits and rules.

The hooks are in `seer.diffusion.daedal`. The options are named after the official `generate`
arguments (in their help), with the official script's defaults (`scripts/eval_LLaDA_DAEDAL.sh`);
giving any of them turns DAEDAL on (`implies`). `gen_length` is its cap (the official
`max_gen_length`); `steps` and `block_length` do not apply (`daedal_block` does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from seer.policies import Declaration, Traits, fits_cap
from seer.spec import option

GROUP = "DAEDAL"  # the CLI group of its options
GROUP_HELP = (
    "variable-length denoising (Li et al. 2025, arXiv 2508.00819): the window starts short, "
    "grows while the end is unsure, and grows inside at unsure masks; --gen-length is its cap; "
    "--steps and --block-length do not apply. Defaults: the official script's"
)


def _opt(default: float | int, help: str, flag: str) -> Any:
    """A DAEDAL option: its own CLI group, in the API, and giving it turns DAEDAL on."""
    if isinstance(default, float):
        kw: dict[str, Any] = dict(lo=0, hi=1, note="a confidence in [0, 1]")
    else:
        kw = dict(lo=1)
    return option(default, help, flag=flag, group=GROUP, api=True, implies="daedal", **kw)


@dataclass(slots=True, frozen=True)
class Daedal:
    """DAEDAL's options (`SamplingParams(policies=(Daedal(daedal_initial=32),))`)."""

    daedal_initial: int = _opt(64, "initial_gen_length: the first window", "--daedal-initial")
    daedal_block: int = _opt(32, "block_length: blocks over the growing window", "--daedal-block")
    daedal_expand: int = _opt(
        8,
        "expansion_factor: masks added per sizing step and per insertion point",
        "--daedal-expand",
    )
    daedal_high: float = _opt(
        0.9, "high_conf_threshold: reveal every block mask above it (at least one)", "--daedal-high"
    )
    daedal_low: float = _opt(
        0.1, "low_conf_threshold: a mask below it may become an insertion point", "--daedal-low"
    )
    daedal_eos: float = _opt(
        0.5,
        "eos_confidence_threshold: sizing stops once the end confidence reaches it",
        "--daedal-eos",
    )
    daedal_expand_eos: float = _opt(
        0.9,
        "expand_eos_confidence_threshold: no insertion once the end confidence reaches it",
        "--daedal-expand-eos",
    )
    daedal_eos_tokens: int = _opt(
        32,
        "eos_check_tokens: end-token positions averaged from the window's end",
        "--daedal-eos-tokens",
    )


def check(p: Any) -> None:
    fits_cap(p, "daedal_initial", "DAEDAL")


DECLARATION: Declaration = Declaration(
    name="daedal",
    options=Daedal,
    switch=option(
        False,
        "turn DAEDAL on (the --daedal-* options do too)",
        flag="--daedal",
        group=GROUP,
        api=True,
    ),
    # it moves tokens inside the window and has its own reveal and end rules
    traits=Traits(
        sets_length=True,
        caches=("none",),
        whole_window=True,
        alone=True,
        rules=("low_confidence",),
        refuses=("suffix", "logits_eos_inf", "confidence_eos_eot_inf"),
    ),
    hooks="seer.diffusion.daedal",
    check=check,
    how="it inserts masks inside the window",
    group=GROUP,
    group_help=GROUP_HELP,
    doc="Variable-length denoising (Li et al. 2025): the window starts short, grows while the "
    "end is unsure and grows inside at unsure masks; `gen_length` is its cap, `steps` and "
    "`block_length` do not apply. Giving any of these options turns DAEDAL on; the "
    "defaults are the official script's.",
)
