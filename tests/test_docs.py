"""Every Python block of README.md and of the documentation site (docs/*.md) runs as written,
on the shipped models; the site's pages are all in its navigation and the README's links resolve.

The only substitutions: a model folder passed to `seer.load` becomes "builtin-v1" (or
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

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if p.relative_to(DOCS).parts[0] != "results")
# the site's prose (model cards in their folders); docs/results/ holds artifacts
MULTIMODAL = re.compile(r"lavida|llava|llada-v|mmada|vqa", re.I)


def python_blocks(path: Path = README) -> list[tuple[str, str]]:
    """("file:first line", code) of every ```python block of one Markdown file."""
    text = path.read_text()
    return [
        (f"{path.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 2}", m.group(1))
        for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M)
    ]


def all_blocks() -> list[tuple[str, str]]:
    return [block for path in [README, *PAGES] for block in python_blocks(path)]


def on_builtin_models(code: str) -> str:
    def model(m: re.Match) -> str:
        name = "builtin-vqa" if MULTIMODAL.search(m.group(2)) else "builtin-v1"
        return f'{m.group(1)}"{name}"'

    code = re.sub(r'(seer\.load\()"([^"]+)"', model, code)
    return code.replace('device="cuda"', 'device="cpu"')


def test_the_readme_and_the_site_have_python_blocks():
    assert len(python_blocks()) >= 1
    assert len(all_blocks()) >= 5


SERVER = "http://127.0.0.1:8000"


def _files(folder: Path) -> None:
    images = resources.files("seer") / "assets" / "images"
    shutil.copy(str(images / "00_colour.png"), folder / "cat.png")
    shutil.copy(str(images / "04_chart.png"), folder / "chart.png")
    rows = [{"prompt": "add 4 and 5", "answer": "4 plus 5 is 9"}, {"prompt": "spell cat"}]
    (folder / "prompts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize(("line", "code"), all_blocks(), ids=lambda v: str(v)[:30])
def test_docs_block_runs(line, code, tmp_path, monkeypatch):
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
        exec(compile(code, line, "exec"), namespace)
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
        'lm = seer.load("builtin-v1", device="cpu")\nvlm = seer.load("builtin-vqa")'
    )


def test_every_page_is_in_the_sites_navigation():
    nav = re.findall(r":\s*(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    assert sorted(nav) == sorted(p.relative_to(DOCS).as_posix() for p in PAGES)


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: p.name)
def test_relative_links_resolve(path):
    """A link or image to a file of this repository names a file that exists (the site build checks
    its own pages too; this covers the README, which the site does not build)."""
    for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        assert (path.parent / target.split("#")[0]).exists(), f"{path.name}: {target}"


def test_the_options_page_is_what_the_specs_say():
    """docs/options.md is rendered from the option specs (the site's build renders it afresh);
    the committed copy, which GitHub shows, must match: `python docs/hooks/options.py`."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_options", DOCS / "hooks" / "options.py")
    options = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(options)
    page = (DOCS / "options.md").read_text()
    assert page == options.render(), "docs/options.md is stale: run python docs/hooks/options.py"
    from seer.boundary.config import SeerConfig
    from seer.sampling import SamplingParams
    from seer.spec import specs

    for cls in (SamplingParams, SeerConfig):  # every declared option has its row
        for f, _ in specs(cls):
            assert f"| `{f.name}` |" in page, f.name


def test_no_issue_numbers_in_the_docs():
    """The docs speak to users about the product: no tracker references."""
    for path in [README, *PAGES]:
        text = path.read_text()
        assert not re.search(r"\bissues? [0-9]|(?<![&\w])#[0-9]+\b", text, re.I), path.name
