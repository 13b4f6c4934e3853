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
from pathlib import Path
from typing import TYPE_CHECKING

from seer import spec
from seer.boundary.config import SeerConfig
from seer.engine.config import EngineConfig
from seer.policies import REGISTRY
from seer.sampling import BUILTIN_MODELS, SHIPPED_MODELS, SamplingParams, builtin_folder
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


def prompt(value: str) -> str:
    """An argparse type for --prompt: valid UTF-8 text with something besides white space."""
    if not text(value).strip():
        raise argparse.ArgumentTypeError("empty prompt: give some text")
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
def add_model(
    p: argparse.ArgumentParser, default: str | None, help: str | None = None, threads: bool = True
) -> None:
    """--model, --dtype, --device, --threads (unless `threads` is False: a command with its own).
    `default`: None makes --model required."""
    p.add_argument(
        "--model",
        required=default is None,
        default=default,
        help=help or f"model folder, or {' / '.join(SHIPPED_MODELS)} (the shipped models)",
    )
    p.add_argument("--dtype", default=None, help="float32 | bfloat16 | float16 (default float32)")
    p.add_argument("--device", default=None, help="cpu | cuda | cuda:N (default cpu)")
    if not threads:
        return
    p.add_argument(
        "--threads",
        type=POSITIVE,
        default=None,
        help="torch's intra-op threads on the CPU (default: 1 for a model under "
        "50 M parameters such as the built-in ones, else one per core; "
        "OMP_NUM_THREADS is respected)",
    )


def folder_of(name: str) -> Path:
    """The folder a --model argument names (a built-in model's: `builtin_folder`), torch-free."""
    if name in BUILTIN:
        return builtin_folder(name)
    return Path(name).expanduser()


def check_model(name: str) -> dict:
    """A --model argument checked before torch loads: a built-in name, or a folder holding a
    config.json (a near miss of a built-in name is named). Returns the config ({} when it cannot
    be read: the loader says why)."""
    import difflib
    import json

    from seer.errors import SeerError

    folder = folder_of(name)
    if not folder.is_dir():
        near = difflib.get_close_matches(name.lower(), BUILTIN, n=1, cutoff=0.6)
        if near and not Path(name).exists():
            raise SeerError(
                f"model folder {name!r} does not exist and is not a built-in "
                f"model's name; did you mean {near[0]}?"
            )
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise SeerError(
            f"model folder {name!r} {what}; pass a local model folder or {' / '.join(BUILTIN)}"
        )
    config = folder / "config.json"
    if not config.is_file():
        raise SeerError(f"{folder} has no config.json; is this a model folder?")
    try:
        raw = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}  # the loader says what is wrong with it, in its own words
    return raw if isinstance(raw, dict) else {}


CONTEXT_KEYS = ("max_sequence_length", "max_position_embeddings")  # config.json's context size


def check_gen_length(name: str, raw: dict, gen_length: int | None) -> None:
    """--gen-length against the context config.json states (at least one prompt token must fit
    beside the window); the exact check with the prompt's length is the library's."""
    from seer.errors import SeerError

    sizes = [v for k in CONTEXT_KEYS if isinstance(v := raw.get(k), int) and v > 0]
    if gen_length is None or not sizes or gen_length < max(sizes):
        return
    raise SeerError(
        f"--gen-length {gen_length} does not fit {name}'s context of {max(sizes)} "
        "positions (prompt + answer window); lower --gen-length"
    )


def precheck(args) -> None:
    """What can be refused before torch is imported: the model's folder or name, and
    --gen-length against its config.json (`seer.cli` calls this before the command runs)."""
    name = getattr(args, "model", None)
    if name is None and getattr(args, "command", "") == "demo":
        return
    if getattr(args, "ray_address", None):  # a model path on the Ray cluster, not here
        return
    if not isinstance(name, str) or not hasattr(args, "dtype"):
        return
    if name == "":  # profile's default: the built-in model for its prompt
        name = "builtin-vqa" if getattr(args, "image", None) else "builtin"
    raw = check_model(name)
    check_gen_length(name, raw, getattr(args, "gen_length", None))


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
    keys = ("dtype", "device", "threads")
    kw = {k: getattr(args, k) for k in keys if getattr(args, k, None) is not None}
    where = f"{name} from {folder_of(name)}" if str(name) in BUILTIN else str(name)
    with progress.status(f"loading {where}", first=True):
        return seer.load(name, **kw)


# -- sampling: the groups are generated from SamplingParams' fields (seer.spec) ----------------
SAMPLING_GROUP = "sampling (default: the model's own)"
SAMPLING = tuple(f.name for f, s in spec.specs(SamplingParams) if s.flag)  # the fields on the CLI


def add_sampling(p: argparse.ArgumentParser) -> None:
    """The sampling options, one flag per SamplingParams field that declares one."""
    groups = {"": p.add_argument_group(SAMPLING_GROUP)}
    for d in REGISTRY:  # a policy's options in its own group, if it declares one
        if d.group:
            groups[d.group] = p.add_argument_group(d.group, d.group_help)
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
        log.warning(
            f"seer: warning: --early-stop does nothing here: it ends a row after a "
            f"finished block, and the window ({p.gen_length}) is one block ({block}); "
            "give --block-length below --gen-length"
        )
    if getattr(args, "dpad_window", None) is not None and p.cache != "dpad":
        log.warning(
            f"seer: warning: --dpad-window does nothing under --cache {p.cache}; "
            "it sets DPad's suffix, so add --cache dpad"
        )
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
        "Seer",
        "boundary detection and truncation; each option overrides the model's seer.json "
        "(or the paper's defaults) and turns Seer on",
    )
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
# the engine's user options
ENGINE_FLAGS = ("max_batch", "max_queue", "max_tokens_per_step", "grouping", "merge_on")


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
