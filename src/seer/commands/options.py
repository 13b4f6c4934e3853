"""Option groups shared by the subcommands, and the helpers that turn them into library calls.

The CLI invents no defaults: an option the user did not give is None and is left out of the
call, so the library (the model's defaults: `seer.json`, `generation_config.json`, the official
sampler's) decides. The sampling and Seer groups are generated from the fields of
`SamplingParams` and `SeerConfig` (`seer.spec`): a flag's range check is the library's, said as
an argparse error (one line) before any model loads; everything else is validated by the
library (a `SeerError`, one line).
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import fields
from typing import TYPE_CHECKING

from seer import spec
from seer.boundary.config import SeerConfig
from seer.engine.config import EngineConfig
from seer.sampling import BUILTIN_MODELS, DAEDAL, RHO_EOS, SamplingParams
from seer.serve.config import ServerConfig

if TYPE_CHECKING:
    from seer.lm import DiffusionLM

IMAGE_HELP = "image file or data:image/...;base64 URI (multimodal models)"
BUILTIN = BUILTIN_MODELS
log = logging.getLogger("seer.cli")


# -- argparse types: a bad value is one `seer: error: argument --x: ...` line -----------------
def number(kind: type, lo: float | None = None, hi: float | None = None, *, open_lo=False):
    """An argparse type: int or float within [lo, hi] (lo excluded with open_lo)."""
    return spec.number(kind, spec.Spec("", lo=lo, hi=hi, open_lo=open_lo))


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


def folder_out(value: str) -> str:
    """An argparse type for an output folder: an existing file is refused before any work."""
    from pathlib import Path

    path = Path(value).expanduser()
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"'{value}' is a file; give a folder to write into")
    return value


def nonempty(value: str) -> str:
    """An argparse type for a text that must hold something (a stop string)."""
    if not text(value):
        raise argparse.ArgumentTypeError("must not be empty")
    return value


def file_out(value: str) -> str:
    """An argparse type for an output file: an existing folder is refused before any work."""
    from pathlib import Path

    if Path(value).expanduser().is_dir():
        raise argparse.ArgumentTypeError(f"'{value}' is a folder; give the path of a file to write")
    return value


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


# -- sampling: the groups are generated from SamplingParams' fields (seer.spec) ----------------
SAMPLING_GROUP = "sampling (default: the model's own)"
DAEDAL_HELP = (
    "variable-length denoising (Li et al. 2025, arXiv 2508.00819): the window starts short, "
    "grows while the end is unsure, and grows inside at unsure masks; --gen-length is its cap; "
    "--steps and --block-length do not apply. Defaults: the official script's"
)
RHO_EOS_HELP = (
    "variable-length denoising (Yang et al. 2026, arXiv 2601.22527): the window starts at "
    "--rho-initial and grows or shrinks every step by the end-token density; --gen-length is "
    "its cap; --steps and --block-length do not apply. Defaults: the official script's"
)
SAMPLING = tuple(f.name for f, s in spec.specs(SamplingParams) if s.flag)  # the fields on the CLI


def add_sampling(p: argparse.ArgumentParser) -> None:
    """The sampling options, one flag per SamplingParams field that declares one."""
    groups = {"": p.add_argument_group(SAMPLING_GROUP),
              DAEDAL: p.add_argument_group(DAEDAL, DAEDAL_HELP),
              RHO_EOS: p.add_argument_group(RHO_EOS, RHO_EOS_HELP)}  # fmt: skip
    for f, s in spec.specs(SamplingParams):
        if s.flag:
            groups[s.group].add_argument(s.flag, *s.aliases, **spec.argparse_kwargs(f, s, f.name))


def add_sampling_flags(p, *names: str) -> None:
    """Some SamplingParams options alone (`--gen-length` of calibrate, profile and bench), as
    `add_sampling` makes them."""
    for f, s in spec.specs(SamplingParams):
        if f.name in names:
            p.add_argument(s.flag, *s.aliases, **spec.argparse_kwargs(f, s, f.name))


def sampling(args) -> dict:
    """The sampling options the user gave (others are left to the model's defaults); a
    --daedal-* option turns DAEDAL on, a --rho-* option rho-EOS."""
    out = {k: getattr(args, k) for k in SAMPLING if getattr(args, k, None) is not None}
    return spec.implied(SamplingParams, out)


def params(lm: DiffusionLM, args):
    """`SamplingParams` for `lm`: the model's defaults with the user's options over them. An
    option that can do nothing with the others is said in one line (`--early-stop` with one
    block)."""
    p = lm.sampling(**sampling(args))
    block = p.block_length or p.gen_length
    if p.early_stop and not p.sets_length and block >= p.gen_length:
        log.warning(f"seer: warning: --early-stop does nothing here: it ends a row after a "
                    f"finished block, and the window ({p.gen_length}) is one block ({block}); "
                    "give --block-length below --gen-length")  # fmt: skip
    if getattr(args, "dpad_window", None) is not None and p.cache != "dpad":
        log.warning(f"seer: warning: --dpad-window does nothing under --cache {p.cache}; "
                    "it sets DPad's suffix, so add --cache dpad")  # fmt: skip
    return p


# -- Seer: the group is generated from SeerConfig's fields --------------------------------------
# (flag, SeerConfig field, argparse type, help) of the valued options; the library validates
# the names (signal, rule, ...) and the values against the model (layer count) in one line
SEER_FLAGS = tuple(
    (s.flag, f.name, spec.argparse_kwargs(f, s, "", choices=False)["type"], s.help)
    for f, s in spec.specs(SeerConfig)
    if spec.kind(f) is not bool
)


def add_seer(p: argparse.ArgumentParser, switch: bool = True) -> None:
    """The Seer group. `switch`: add --seer (commands where Seer is optional)."""
    g = p.add_argument_group(
        "Seer", "boundary detection and truncation; each option overrides the model's seer.json "
        "(or the paper's defaults) and turns Seer on"
    )  # fmt: skip
    if switch:
        g.add_argument("--seer", action="store_true", help="truncate the window at the boundary")
    for f, s in spec.specs(SeerConfig):
        if s.flag is None:
            continue
        g.add_argument(s.flag, **spec.argparse_kwargs(f, s, f"seer_{f.name}", choices=False))


def seer_options(args) -> dict:
    """The Seer settings the user gave, as SeerConfig field -> value."""
    names = [f.name for f in fields(SeerConfig)]
    return {f: getattr(args, f"seer_{f}") for f in names if getattr(args, f"seer_{f}") is not None}


def seer(args):
    """The `seer=` argument of the library: None (off), True (the model's defaults) or a dict
    of settings over them."""
    options = seer_options(args)
    if options:
        return options
    return True if getattr(args, "seer", False) else None


# -- the engine and the server: flags generated from EngineConfig / ServerConfig ---------------
ENGINE_FLAGS = ("max_batch", "max_queue", "max_tokens_per_step")  # the engine's user options


def add_engine(p: argparse.ArgumentParser, names=ENGINE_FLAGS) -> None:
    """The engine's options (`EngineConfig`'s flags among `names`), each saying its default."""
    spec.add_flags(p.add_argument_group("engine"), EngineConfig, names)


def engine_options(args) -> dict:
    """Every `EngineConfig` option of the command: the ones given over the spec's defaults."""
    return spec.defaults(EngineConfig) | spec.given(args, EngineConfig)


def add_server(p: argparse.ArgumentParser, names=None) -> None:
    """The server's options (`ServerConfig`'s flags; only `names` when given)."""
    spec.add_flags(p, ServerConfig, names)


def server_config(args) -> ServerConfig:
    """The server's options: the flags given over `ServerConfig`'s defaults."""
    return ServerConfig(**spec.given(args, ServerConfig))
