"""Option groups shared by the subcommands, and the helpers that turn them into library calls.

The CLI invents no defaults: an option the user did not give is None and is left out of the
call, so the library (the model's defaults: `seer.json`, `generation_config.json`, the official
sampler's) decides. Range checks that need no model happen here, as argparse errors (one line);
everything else is validated by the library (a `SeerError`, one line).
"""

from __future__ import annotations

import argparse
import logging
import math

from seer.config import CACHES, DAEDAL_FLOATS, DAEDAL_INTS, RULES, SCHEDULES

IMAGE_HELP = "image file or data:image/...;base64 URI (multimodal models)"
BUILTIN = ("builtin", "builtin-vqa")  # the models shipped in the package, loadable by name
log = logging.getLogger("seer.cli")


# -- argparse types: a bad value is one `seer: error: argument --x: ...` line -----------------
def number(kind: type, lo: float | None = None, hi: float | None = None, *, open_lo=False):
    """An argparse type: int or float within [lo, hi] (lo excluded with open_lo)."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {kind.__name__}, got {text!r}") from None
        if kind is float and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
        if lo is not None and (value <= lo if open_lo else value < lo):
            raise argparse.ArgumentTypeError(f"must be {'>' if open_lo else '>='} {lo}, got {text}")
        if hi is not None and value > hi:
            raise argparse.ArgumentTypeError(f"must be <= {hi}, got {text}")
        return value

    parse.__name__ = kind.__name__
    return parse


def text(value: str) -> str:
    """An argparse type for prompts: refuse bytes that are not UTF-8 (surrogate escapes)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(
            "is not valid UTF-8 text; check the terminal's encoding (e.g. LANG=C.UTF-8)"
        ) from None
    return value


POSITIVE = number(int, 1)
NONNEG = number(int, 0)


# -- the model --------------------------------------------------------------------------------
def add_model(p: argparse.ArgumentParser, default: str | None, help: str | None = None) -> None:
    """--model, --dtype, --device. `default`: None makes --model required."""
    p.add_argument(
        "--model",
        required=default is None,
        default=default,
        help=help or f"model folder, or {' / '.join(BUILTIN)} (the shipped models)",
    )
    p.add_argument("--dtype", default=None, help="float32 | bfloat16 | float16 (default float32)")
    p.add_argument("--device", default=None, help="cpu | cuda | cuda:N (default cpu)")


def model_path(name) -> str:
    """The folder a --model argument names (a shipped model's name resolved), as a string: for
    workers that load the model themselves."""
    from seer.models.loader import model_folder

    return str(model_folder(name))


def load(args, name=None):
    """The model of `--model` (or `name`), loaded under a progress spinner."""
    import seer
    from seer import progress

    name = name or args.model
    kw = {k: getattr(args, k) for k in ("dtype", "device") if getattr(args, k, None) is not None}
    with progress.status(f"loading {name}"):
        return seer.load(name, **kw)


# -- sampling ---------------------------------------------------------------------------------
SAMPLING = ("gen_length", "steps", "block_length", "temperature", "remasking", "alg_temp",
            "top_p", "top_k", "cfg_scale", "seed", "schedule", "threshold", "factor",
            "early_stop", "cache", "dpad_window", "daedal", *DAEDAL_INTS,
            *DAEDAL_FLOATS)  # fmt: skip


def add_sampling(p: argparse.ArgumentParser, cache: bool = True) -> None:
    g = p.add_argument_group("sampling (default: the model's own)")
    g.add_argument("--gen-length", type=POSITIVE, default=None, help="answer window (tokens)")
    g.add_argument("--steps", type=POSITIVE, default=None, help="denoising steps")
    g.add_argument("--block-length", type=POSITIVE, default=None, help="semi-AR block length")
    g.add_argument("--temperature", type=number(float, 0), default=None, help="0 = greedy")
    g.add_argument("--remasking", "--alg", dest="remasking", choices=RULES, default=None)
    g.add_argument("--alg-temp", type=number(float, 0), default=None,
                   help="Dream: position sampling temperature")  # fmt: skip
    g.add_argument("--top-p", type=number(float, 0, 1, open_lo=True), default=None)
    g.add_argument("--top-k", type=POSITIVE, default=None)
    g.add_argument("--cfg-scale", type=number(float, 0), default=None, help="LLaDA: CFG scale")
    g.add_argument("--schedule", choices=SCHEDULES, default=None,
                   help="reveal counts (default: the rule's)")  # fmt: skip
    g.add_argument("--seed", type=int, default=None, help="seed of every random draw")
    g.add_argument(
        "--threshold",
        type=number(float, 0, 1),
        default=None,
        help="Fast-dLLM parallel decoding: reveal every masked position of the block whose "
        "confidence is >= this (at least one per step)",
    )
    g.add_argument(
        "--factor",
        type=number(float),
        default=None,
        help="Fast-dLLM factor-based parallel decoding",
    )
    g.add_argument(
        "--early-stop",
        action="store_true",
        default=None,
        help="dInfer: end once a completed block holds [EOS] (needs --block-length < gen-length)",
    )
    add_daedal(p)
    if cache:
        g.add_argument(
            "--cache",
            choices=CACHES,
            default=None,
            help="KV cache: prefix or dual (Fast-dLLM, per semi-AR block), prefix_lm (LaViDa: "
            "the prompt encoded once, alone), dpad (DPad's suffix dropout: the masks past the "
            "block's --dpad-window are left out of each forward) (default none)",
        )
        g.add_argument(
            "--dpad-window",
            type=number(int, 0),
            default=None,
            metavar="N",
            help="--cache dpad: suffix positions kept past the block (default 16)",
        )


# (flag, SamplingParams field, type, the official `generate` argument it is)
DAEDAL_FLAGS = (
    ("--daedal-initial", "daedal_initial", POSITIVE, "initial_gen_length: the first window"),
    ("--daedal-block", "daedal_block", POSITIVE, "block_length: blocks over the growing window"),
    ("--daedal-expand", "daedal_expand", POSITIVE,
     "expansion_factor: masks added per sizing step and per insertion point"),
    ("--daedal-high", "daedal_high", number(float, 0, 1),
     "high_conf_threshold: reveal every block mask above it (at least one)"),
    ("--daedal-low", "daedal_low", number(float, 0, 1),
     "low_conf_threshold: a mask below it may become an insertion point"),
    ("--daedal-eos", "daedal_eos", number(float, 0, 1),
     "eos_confidence_threshold: sizing stops once the end confidence reaches it"),
    ("--daedal-expand-eos", "daedal_expand_eos", number(float, 0, 1),
     "expand_eos_confidence_threshold: no insertion once the end confidence reaches it"),
    ("--daedal-eos-tokens", "daedal_eos_tokens", POSITIVE,
     "eos_check_tokens: end-token positions averaged from the window's end"),
)  # fmt: skip


def add_daedal(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "DAEDAL", "variable-length denoising (Li et al. 2025, arXiv 2508.00819): the window starts "
        "short, grows while the end is unsure, and grows inside at unsure masks; --gen-length is "
        "its cap; --steps and --block-length do not apply. Defaults: the official script's"
    )  # fmt: skip
    g.add_argument("--daedal", action="store_true", default=None,
                   help="turn DAEDAL on (the --daedal-* options do too)")  # fmt: skip
    for flag, field, kind, help in DAEDAL_FLAGS:
        g.add_argument(flag, dest=field, type=kind, default=None, help=help,
                       metavar="N" if kind is POSITIVE else "X")  # fmt: skip


def sampling(args) -> dict:
    """The sampling options the user gave (others are left to the model's defaults); a
    --daedal-* option turns DAEDAL on."""
    out = {k: getattr(args, k) for k in SAMPLING if getattr(args, k, None) is not None}
    if any(k.startswith("daedal_") for k in out):
        out["daedal"] = True
    return out


def params(lm, args):
    """`SamplingParams` for `lm`: the model's defaults with the user's options over them. An
    option that can do nothing with the others is said in one line (`--early-stop` with one
    block)."""
    p = lm.sampling(**sampling(args))
    block = p.block_length or p.gen_length
    if p.early_stop and not p.daedal and block >= p.gen_length:
        log.warning(f"seer: warning: --early-stop does nothing here: it ends a row after a "
                    f"finished block, and the window ({p.gen_length}) is one block ({block}); "
                    "give --block-length below --gen-length")  # fmt: skip
    return p


# -- Seer -------------------------------------------------------------------------------------
# (flag, SeerConfig field, argparse type, help); the library validates the values against the
# model (layer count, signal) and says in one line when it picks another setting.
SEER_FLAGS = (
    ("--seer-signal", "signal", str, "boundary signal: sparsity | eos_prob | combined"),
    ("--seer-layer", "layer", NONNEG, "probe layer (0-based)"),
    ("--seer-theta", "theta", number(float, 0, open_lo=True), "zero threshold of |activation|"),
    ("--seer-tensor", "tensor", str, "probed tensor: down (down-projection input) | gate"),
    ("--seer-rule", "rule", str, "sparsity rule: snr (the paper's) | changepoint"),
    ("--seer-direction", "direction", str, "sparsity jump: rising (paper) | falling"),
    ("--seer-tau-jump", "tau_jump", number(float, 0), "SNR rule: minimum step"),
    ("--seer-gamma", "gamma", number(float, 0), "SNR rule: plateau spread (share of the step)"),
    ("--seer-lookahead", "lookahead", POSITIVE, "SNR rule: plateau window"),
    ("--seer-z", "z", number(float, 0), "changepoint rule: minimum t statistic"),
    ("--seer-eos-tau", "eos_tau", number(float, 0, 1), "eos_prob: probability of padding"),
    ("--seer-eos-run", "eos_run", POSITIVE, "eos_prob: positions above eos-tau in a row"),
    ("--seer-margin", "margin", NONNEG, "positions kept after the boundary"),
    ("--seer-bucket", "bucket", POSITIVE, "round the window up to a multiple of this"),
    ("--seer-growth", "growth", number(float, 1, open_lo=True), "guard: window growth factor"),
    ("--seer-guard-slack", "guard_slack", NONNEG, "guard: end positions that count as cut"),
)


def add_seer(p: argparse.ArgumentParser, switch: bool = True) -> None:
    """The Seer group. `switch`: add --seer (commands where Seer is optional)."""
    g = p.add_argument_group(
        "Seer", "boundary detection and truncation; each option overrides the model's seer.json "
        "(or the paper's defaults) and turns Seer on"
    )  # fmt: skip
    if switch:
        g.add_argument("--seer", action="store_true", help="truncate the window at the boundary")
    for flag, field, kind, help in SEER_FLAGS:
        metavar = {str: "NAME", int: "N", "int": "N"}.get(kind, getattr(kind, "__name__", "X"))
        metavar = {"int": "N", "float": "X"}.get(metavar, metavar)
        g.add_argument(flag, dest=f"seer_{field}", type=kind, default=None, help=help,
                       metavar=metavar)  # fmt: skip
    g.add_argument("--seer-guard", dest="seer_guard", action=argparse.BooleanOptionalAction,
                   default=None, help="grow the window when an answer reaches the cut")  # fmt: skip
    g.add_argument("--seer-cut-in-step0", dest="seer_cut_in_step0", default=None,
                   action=argparse.BooleanOptionalAction,
                   help="cut inside step 0, after the probe layer (sparsity only)")  # fmt: skip


def seer_options(args) -> dict:
    """The Seer settings the user gave, as SeerConfig field -> value."""
    names = [f for _, f, _, _ in SEER_FLAGS] + ["guard", "cut_in_step0"]
    return {f: getattr(args, f"seer_{f}") for f in names if getattr(args, f"seer_{f}") is not None}


def seer(args):
    """The `seer=` argument of the library: None (off), True (the model's defaults) or a dict
    of settings over them."""
    options = seer_options(args)
    if options:
        return options
    return True if getattr(args, "seer", False) else None
