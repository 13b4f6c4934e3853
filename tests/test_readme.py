"""Every Python block of README.md runs as written, on the shipped models.

The only substitutions: a model folder passed to `seer.load` becomes "builtin" (or
"builtin-vqa" for a multimodal checkpoint's folder), `device="cuda"` becomes "cpu", and a block
that talks to `seer serve` at http://127.0.0.1:8000 gets a real `seer serve --model builtin-vqa`
on a free port. Each block runs in a folder that holds the files the README names: `cat.png`,
`chart.png` (sample images of the package) and `prompts.jsonl`.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
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


SERVER = "http://127.0.0.1:8000"


def _files(folder: Path) -> None:
    images = resources.files("seer") / "assets" / "images"
    shutil.copy(str(images / "00_colour.png"), folder / "cat.png")
    shutil.copy(str(images / "04_chart.png"), folder / "chart.png")
    rows = [{"prompt": "add 4 and 5", "answer": "4 plus 5 is 9"}, {"prompt": "spell cat"}]
    (folder / "prompts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize(("line", "code"), python_blocks(), ids=lambda v: str(v)[:20])
def test_readme_block_runs(line, code, tmp_path, monkeypatch):
    _files(tmp_path)
    monkeypatch.chdir(tmp_path)
    code = on_builtin_models(code)
    server = None
    if SERVER in code:
        sys.path.insert(0, str(Path(__file__).parent / "serve"))
        from serve_helpers import Server  # skips when the serve extra is not installed

        server = Server("--model", "builtin-vqa").wait()
        code = code.replace(SERVER, server.url)
    namespace: dict = {"__name__": "readme"}
    try:
        exec(compile(code, f"README.md:{line}", "exec"), namespace)
    finally:
        if server is not None:
            server.stop()
    for value in namespace.values():  # a batch of answers is never all empty
        if isinstance(value, list) and value and type(value[0]).__name__ == "Generation":
            assert any(g.text for g in value), value


def test_the_substitution():
    code = 'lm = seer.load("/models/LLaDA-8B-Instruct", device="cuda")\n'
    code += 'vlm = seer.load("/models/lavida-llada-v1.0-instruct")'
    assert on_builtin_models(code) == (
        'lm = seer.load("builtin", device="cpu")\nvlm = seer.load("builtin-vqa")'
    )
