"""`seer` command line: generate | demo | profile | calibrate | bench | batch | make-checkpoint.

Dispatch only: each subcommand is a module of `seer.commands` (`add_parser` + `main`) that
imports torch and the library inside `main`, so `seer --help` and option errors are fast.
User mistakes (`SeerError`, bad options) print one line and exit with status 2; anything else
is a bug and shows a trace. `--quiet` (or SEER_NO_PROGRESS=1) turns progress displays off.
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
        p.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                       help="no progress bars or spinners")  # fmt: skip
    return ap


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # --help, or an option error already printed as one line
        return e.code if isinstance(e.code, int) else 2
    from seer import progress
    from seer.errors import SeerError

    if args.quiet or os.environ.get("SEER_NO_PROGRESS", "") not in ("", "0"):
        progress.set_enabled(False)
    progress.set_lines(_every(os.environ.get("SEER_PROGRESS_EVERY", "")))
    try:
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
