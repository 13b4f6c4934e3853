"""The package is typed: it ships `py.typed` (PEP 561), mypy passes over it with the project's
configuration (strict on the public API and the engine), and `generate`'s overloads give one
`Generation` for one prompt and a list for a batch."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import seer

SRC = Path(seer.__file__).parent
ROOT = SRC.parents[1]

needs_mypy = pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None,
    reason="mypy is not installed (it comes with the dev extra: pip install -e '.[dev]')",
)


def _mypy(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", *args], cwd=cwd, capture_output=True, text=True
    )


def test_the_package_ships_py_typed():
    assert (SRC / "py.typed").is_file()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"py.typed"' in pyproject  # in the package data, so in the wheel


@needs_mypy
def test_mypy_passes_over_the_package():
    """The configuration in pyproject.toml ([tool.mypy]: files = src/seer)."""
    run = _mypy()
    assert run.returncode == 0, run.stdout + run.stderr


@needs_mypy
def test_generate_is_typed_by_what_it_is_given(tmp_path):
    """A user's code type-checks against the facade: one prompt -> Generation, a list ->
    list[Generation] (and a mistake is caught)."""
    (tmp_path / "use.py").write_text(
        textwrap.dedent(
            """
            import seer

            lm = seer.load("builtin")
            reveal_type(lm.generate("hi"))
            reveal_type(lm.generate(["hi", "there"]))
            reveal_type(lm.generate([[1, 2, 3]]))
            reveal_type(lm.stream("hi"))
            one: seer.Generation = lm.generate(["hi"])
            """
        )
    )
    run = _mypy(str(tmp_path / "use.py"))  # the project's configuration (and its cache)
    out = run.stdout
    lines = [line for line in out.splitlines() if "use.py" in line]
    one, many = (
        "seer.engine.request.RequestResult",
        r"(builtins\.)?list\[seer.engine.request.RequestResult\]",
    )
    assert re.search(f'Revealed type is "{one}"$', lines[0]), out
    assert re.search(f'Revealed type is "{many}"$', lines[1]), out
    assert re.search(f'Revealed type is "{many}"$', lines[2]), out
    assert "Iterator[seer.engine.request.StreamChunk]" in lines[3], out
    assert "error: Incompatible types in assignment" in lines[4], out
    assert len(lines) == 5 and run.returncode == 1, out  # that one error


def test_the_count_of_type_suppressions_only_goes_down():
    """Override entries x error kinds switched off, plus `# type: ignore` comments, equal the
    committed ceiling (tests/typing_ceiling.txt): above it is new debt; below it, the commit
    that paid some lowers the ceiling with it (`python tools/typing_debt.py` shows the count)."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "typing_debt.py"), "--check"],
        capture_output=True,
        text=True,
    )
    print(run.stdout)  # the count, per override and file (pytest -s, or on failure)
    assert run.returncode == 0, run.stdout + run.stderr
