"""Every Python block of README.md runs as written, on the shipped models.

The only substitutions: a model folder passed to `seer.load` becomes "builtin" (or
"builtin-vqa" for a multimodal checkpoint's folder), and `device="cuda"` becomes "cpu"; the
block runs in a folder that holds a `cat.png` (one of the package's sample images).
"""

from __future__ import annotations

import re
import shutil
from importlib import resources
from pathlib import Path

import pytest

README = Path(__file__).parents[1] / "README.md"
MULTIMODAL = re.compile(r"lavida|llava|llada-v|mmada|vqa", re.I)


def python_blocks() -> list[tuple[int, str]]:
    """(first line number, code) of every ```python block."""
    text = README.read_text()
    return [
        (text[: m.start()].count("\n") + 2, m.group(1))
        for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M)
    ]


def on_builtin_models(code: str) -> str:
    def model(m: re.Match) -> str:
        name = "builtin-vqa" if MULTIMODAL.search(m.group(2)) else "builtin"
        return f'{m.group(1)}"{name}"'

    code = re.sub(r'(seer\.load\()"([^"]+)"', model, code)
    return code.replace('device="cuda"', 'device="cpu"')


def test_the_readme_has_python_blocks():
    assert len(python_blocks()) >= 2


@pytest.mark.parametrize(("line", "code"), python_blocks(), ids=lambda v: str(v)[:20])
def test_readme_block_runs(line, code, tmp_path, monkeypatch):
    sample = resources.files("seer") / "assets" / "images" / "00_colour.png"
    shutil.copy(str(sample), tmp_path / "cat.png")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "readme"}
    exec(compile(on_builtin_models(code), f"README.md:{line}", "exec"), namespace)
    for value in namespace.values():  # a batch of answers is never all empty
        if isinstance(value, list) and value and type(value[0]).__name__ == "Generation":
            assert any(g.text for g in value), value


def test_the_substitution():
    code = 'lm = seer.load("/models/LLaDA-8B-Instruct", device="cuda")\n'
    code += 'vlm = seer.load("/models/lavida-llada-v1.0-instruct")'
    assert on_builtin_models(code) == (
        'lm = seer.load("builtin", device="cpu")\nvlm = seer.load("builtin-vqa")'
    )
