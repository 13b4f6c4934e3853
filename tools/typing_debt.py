"""Count what the type checker is told to overlook in `src/seer`, against a committed ceiling.

The count is each mypy override's modules times the error codes it switches off (or times one,
for `ignore_errors`), plus every `# type: ignore` comment in the package; overrides that only
silence missing third-party stubs (`ignore_missing_imports`) are not counted. The ceiling in
`tests/typing_ceiling.txt` is the count today: the check fails when the count goes above it,
and also when it goes below, so that the commit that lowers the count lowers the ceiling too.

    python tools/typing_debt.py           # the count, per override and per file
    python tools/typing_debt.py --check   # the same; exit 1 unless it equals the ceiling
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CEILING = ROOT / "tests" / "typing_ceiling.txt"
IGNORE = re.compile(r"#\s*type:\s*ignore")


def overrides(pyproject: Path = ROOT / "pyproject.toml") -> list[tuple[list[str], int]]:
    """(modules, error kinds switched off) of each override that switches errors off."""
    config = tomllib.loads(pyproject.read_text())
    out = []
    for entry in config["tool"]["mypy"].get("overrides", []):
        modules = entry["module"]
        modules = [modules] if isinstance(modules, str) else list(modules)
        if entry.get("ignore_errors"):
            out.append((modules, 1))
        elif entry.get("disable_error_code"):
            out.append((modules, len(entry["disable_error_code"])))
    return out


def ignores(src: Path = ROOT / "src" / "seer") -> dict[str, int]:
    """`# type: ignore` comments per file (path relative to the repository)."""
    found = {}
    for path in sorted(src.rglob("*.py")):
        n = len(IGNORE.findall(path.read_text()))
        if n:
            found[str(path.relative_to(ROOT))] = n
    return found


def count() -> int:
    return sum(len(m) * k for m, k in overrides()) + sum(ignores().values())


def main(argv: list[str]) -> int:
    for modules, kinds in overrides():
        names = ", ".join(modules)
        print(f"{len(modules) * kinds:4d}  override: {kinds} error kinds off in {names}")
    for path, n in ignores().items():
        print(f"{n:4d}  type: ignore in {path}")
    total = count()
    ceiling = int(CEILING.read_text().split()[0])
    print(f"{total:4d}  suppressions in all (ceiling {ceiling}, {CEILING.relative_to(ROOT)})")
    if "--check" not in argv:
        return 0
    if total > ceiling:
        print(f"{total - ceiling} suppression(s) above the ceiling: type the code instead")
        return 1
    if total < ceiling:
        print(f"the count went down: write {total} in {CEILING.relative_to(ROOT)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
