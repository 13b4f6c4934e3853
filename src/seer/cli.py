"""`seer` command line: generate | demo | profile | calibrate | bench | batch | make-checkpoint.

Dispatch only: each subcommand is a module of `seer.commands` (`add_parser` + `main`) that
imports torch and the library inside `main`, so `seer --help` and option errors are fast.
User mistakes (`SeerError`, bad options) print one line and exit with status 2; anything else
is a bug and shows a trace. What can be refused without the model is refused before torch is
imported: an unknown option (named, with the nearest known one and the subcommand's help), the
model's folder or built-in name (a near miss named), an empty prompt, a --gen-length beyond the
context config.json states (`seer.commands.options.precheck`). `--quiet` (or
SEER_NO_PROGRESS=1) turns progress displays off.
"""

from __future__ import annotations

import argparse
import os
import sys
from importlib import import_module

from seer.commands import COMMANDS


class _Parser(argparse.ArgumentParser):
    """Option errors as one line, like every other user error."""

    def error(self, message: str):
        self.exit(2, f"seer: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="seer", description=__doc__.splitlines()[0])
    ap.add_argument("-q", "--quiet", action="store_true", help="no progress bars or spinners")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in COMMANDS:
        import_module(f"seer.commands.{name}").add_parser(sub)
    for p in sub.choices.values():  # `seer demo --quiet` as well as `seer --quiet demo`
        p.add_argument(
            "-q",
            "--quiet",
            action="store_true",
            default=argparse.SUPPRESS,
            help="no progress bars or spinners",
        )
    return ap


def unknown_option(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """The one-line error for the first option the subcommand does not know (argparse would
    name it only after a missing required option, and point to `seer --help`), with the
    nearest known option; None when every option is known."""
    import difflib

    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    i = next((i for i, a in enumerate(argv) if a in sub.choices), None)
    if i is None:
        return None
    cmd = sub.choices[argv[i]]
    known = [o for a in cmd._actions for o in a.option_strings if o.startswith("--")]
    for arg in argv[i + 1 :]:
        if arg == "--":
            break
        key = arg.split("=", 1)[0]
        if not key.startswith("--") or key in known:
            continue
        if len([o for o in known if o.startswith(key)]) == 1:  # argparse's abbreviations
            continue
        near = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f"; did you mean {near[0]}?" if near else ""
        return f"seer: error: unknown option {key} for {cmd.prog}{hint} (see {cmd.prog} --help)"
    return None


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # `seer ... | head`: the reader left; no traceback at exit either
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if "-h" not in argv and "--help" not in argv and (line := unknown_option(parser, argv)):
        print(line, file=sys.stderr)
        return 2
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, or an option error already printed as one line
        return e.code if isinstance(e.code, int) else 2
    from seer import progress
    from seer.commands.options import precheck
    from seer.errors import SeerError

    if args.quiet or os.environ.get("SEER_NO_PROGRESS", "") not in ("", "0"):
        progress.set_enabled(False)
    progress.set_lines(_every(os.environ.get("SEER_PROGRESS_EVERY", "")))
    try:
        precheck(args)  # the model's folder or name, --gen-length: before torch is imported
        return args.func(args)
    except SeerError as e:
        print(f"seer: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a path the user named cannot be read or written
        if e.filename is None:
            raise
        print(f"seer: error: {e.filename}: {e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("seer: interrupted", file=sys.stderr)
        return 130


def _every(text: str) -> float:
    """Seconds between progress lines off a terminal (`SEER_PROGRESS_EVERY`, default 30)."""
    try:
        every = float(text) if text.strip() else 30.0
    except ValueError:
        every = 30.0
    return every if every > 0 else 30.0


if __name__ == "__main__":
    sys.exit(main())
