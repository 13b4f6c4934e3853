"""No published page cites a retired model's record as if it were of the shipped models.

A record is of a retired model when it lies in a `release1/` folder (release 1 of `builtin`'s
weights), when it names `builtin-v1` / `builtin-vqa-v1`, or when it names `builtin` /
`builtin-vqa` with a 64-position window (the first models' window: they shipped under those names
until the 128-window models replaced them, and their records keep the old names); the few
records that name neither (a figure, a start-up time, a Ray run) are listed in `RENAMED`.
Every link or path in README.md and the site's pages to such a record must sit in a paragraph or
table that says so ("retired", the retired model's name, "release 1"), or in a section whose
heading or first paragraph does.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_docs import PAGES, README, ROOT

from seerbench import records

RESULTS = ROOT / "docs" / "results"
RETIRED = ("builtin-v1", "builtin-vqa-v1")
# records of the first models, measured while they were `builtin` / `builtin-vqa`, that name no
# window to tell them apart (reviewed: each dated before 2026-12-02, when the 128-window models
# took those names)
RENAMED = {
    "bench_serving.txt": "builtin-v1, builtin-vqa-v1 (2026-12-01)",
    "bench_ray.txt": "builtin-v1 (2026-12-01)",
    "bench_ray_serve.txt": "builtin-v1 (2026-12-01)",
    "startup.txt": "builtin-v1 (`seer generate --model builtin`, 2026-12-01)",
    "detect_cut.txt": "builtin-v1 (its text: window 64, vocab 189)",
    "sweep_tau.txt": "builtin-v1 (its title: gen_length 64)",
    "figures/seer-demo.png": "builtin-v1 (demo.txt's figure)",
    "figures/seer-demo-vqa.png": "builtin-vqa-v1 (demo-vqa.txt's figure)",
    "figures/serving_latency.png": "builtin-v1, builtin-vqa-v1 (bench_serving.txt's figure)",
}
LABEL = re.compile(r"retired|builtin-v1|builtin-vqa-v1|\brelease 1\b", re.I)


def record(path: Path) -> dict | None:
    """A record's JSON: the file (.json), or the last line of a log that is a JSON object (raw
    records plain or gzipped: `seerbench.records`)."""
    if path.suffix == ".json":
        return json.loads(path.read_text())
    if path.suffix not in (".txt", ".jsonl", ".md") and not path.name.endswith(".jsonl.gz"):
        return None
    for line in reversed(records.read_text(path).splitlines()):
        if line.strip():
            try:
                value = json.loads(line)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


def retired(path: Path) -> str | None:
    """The retired model a file under docs/ is of (None: the shipped models, or no model)."""
    rel = path.relative_to(ROOT)
    if "release1" in rel.parts:
        return "release 1 of builtin"
    if path.is_dir():
        files = [f for f in path.rglob("*") if f.is_file()]
        found = [retired(f) for f in files]
        return found[0] if files and all(found) else None
    if path.is_relative_to(RESULTS) and path.relative_to(RESULTS).as_posix() in RENAMED:
        return RENAMED[path.relative_to(RESULTS).as_posix()]
    rec = record(path)
    # a table or plot without a record of its own: its run's record (the same name, or the
    # folder's report.json for a calibration's plots)
    for other in (path.with_suffix(".json"), path.with_suffix(".txt"), path.parent / "report.json"):
        if rec is None and other != path and other.exists():
            rec = record(other)
    if rec is None:
        return None
    model, window = rec.get("model"), rec.get("gen_length")
    if model in RETIRED:
        return model
    if model in ("builtin", "builtin-vqa") and window == 64:
        return f"{model}-v1 (named {model} in its record)"
    return None


def references(path: Path, text: str | None = None) -> list[tuple[int, Path]]:
    """(offset, file) of every link to a file of the repository and every `docs/...` path named
    in a page's prose (a glob such as `raw_builtin*.jsonl` is left out, and so is a command's
    output path in a code block: a command is not a citation)."""
    text = path.read_text() if text is None else text
    code = [m.span() for m in re.finditer(r"^```.*?^```", text, re.S | re.M)]
    out = []
    for m in re.finditer(r"\]\(([^)\s#]+)[^)]*\)", text):
        if not re.match(r"[a-z]+:", m.group(1)):
            out.append((m.start(), (path.parent / m.group(1)).resolve()))
    for m in re.finditer(r"(?<![\w/(])docs/[\w./-]+", text):
        target = m.group(0).rstrip(".,;:")
        if "*" not in target:
            out.append((m.start(), ROOT / target))
    return [
        (at, f)
        for at, f in out
        if f.exists() and f.is_relative_to(ROOT / "docs") and not any(a <= at < b for a, b in code)
    ]


def context(text: str, at: int) -> list[str]:
    """The paragraph (or table) holding offset `at`, its section's heading and that section's
    first paragraph."""
    blocks = [(m.start(), m.group(0)) for m in re.finditer(r"(?:[^\n]+\n?)+", text)]
    mine = next(b for s, b in reversed(blocks) if s <= at)
    heading = [(s, b) for s, b in blocks if s <= at and b.startswith("#")]
    if not heading:
        return [mine]
    start, head = heading[-1]
    after = [b for s, b in blocks if s > start]
    return [mine, head, after[0] if after else ""]


def unlabelled(path: Path, text: str | None = None) -> list[str]:
    text = path.read_text() if text is None else text
    bad = set()
    for at, target in references(path, text):
        model = retired(target)
        if model and not any(LABEL.search(part) for part in context(text, at)):
            line = text[:at].count("\n") + 1
            bad.add(f"{path.relative_to(ROOT)}:{line}: {target.relative_to(ROOT)} ({model})")
    return sorted(bad)


def test_the_retired_records_are_found():
    """The rule finds what it must: release 1, the first models' records under their old names,
    a calibration's plots, a folder of retired records; and not the shipped comparison."""
    assert retired(RESULTS / "compare" / "release1" / "compare-builtin.json")
    assert retired(RESULTS / "bench_seer.txt").startswith("builtin-v1")  # `builtin`, window 64
    old = RESULTS / "compare" / "bench_compare_builtin-vqa"  # the first VQA model's comparison
    assert retired(old.with_suffix(".txt")).startswith("builtin-vqa-v1")
    assert retired(old.with_suffix(".md")).startswith("builtin-vqa-v1")  # by its .txt record
    assert retired(RESULTS / "compare" / "compare-builtin.png") is None  # by its .json record
    assert retired(RESULTS / "calibration" / "sparsity_aligned.png")
    assert retired(RESULTS / "calibration-vqa")
    assert retired(RESULTS / "compare" / "shipped" / "compare-builtin.json") is None
    assert retired(RESULTS / "compare" / "compare-builtin-vqa.json") is None  # today's weights
    assert retired(RESULTS / "calibration-v2") is None  # release 2 beside release1/
    for name in RENAMED:
        assert (RESULTS / name).exists(), name


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: p.name)
def test_retired_records_are_cited_as_retired(path):
    bad = unlabelled(path)
    assert not bad, "a retired model's record cited without saying so:\n" + "\n".join(bad)


def test_an_unlabelled_citation_fails():
    """The realistic bad edit: the README cites the first text model's benchmark as a result."""
    edit = README.read_text() + (
        "\n## More results\n\nSeer is 5.5× faster at the same accuracy on the built-in text "
        "model ([bench_seer.txt](docs/results/bench_seer.txt)).\n"
    )
    line = edit[: edit.index("[bench_seer.txt]")].count("\n") + 1
    assert unlabelled(README, edit) == [
        f"README.md:{line}: docs/results/bench_seer.txt (builtin-v1 (named builtin in its record))"
    ]
    labelled = edit.replace("the built-in text model", "the retired first text model, `builtin-v1`")
    assert unlabelled(README, labelled) == []
