#!/usr/bin/env python
"""Golden fixture for ParallelBench: the official metrics on hand-made predictions, and the
official prompts of our fake checkout.

Official code (none of it is in this repository; it is imported from a checkout at run time):
furiosa-ai/ParallelBench, ``dataset/parallel_bench/metrics.py`` (the per-sample metric functions
of ``parallel_bench_metric_func_map``) and ``dataset/parallel_bench/__init__.py``
(``ParallelBench.compute_metrics``, which turns a metric's value into the ``score`` /
``score_strict`` it reports, and ``ParallelBench.__getitem__``, which builds a row's chat).

1. Metrics: for each re-implemented metric, predictions and references written here (invented
   names and symbols, none taken from ParallelBench's data), scored by the official
   ``compute_metrics(..., output_per_sample=True)``: per case ``score`` (what it reports as
   score) and ``score_strict``.
2. Prompts: every row of our fake checkout (tests/fixtures/parallelbench, files we wrote in the
   official format) through the official ``ParallelBench(task)[i]``; the loader's file lookup
   (``dataset.parallel_bench.data.task._get_task_file``) is pointed at the fake checkout, nothing
   else is changed. Recorded: the chat (``messages``) and the label.

Recipe (used for tests/fixtures/golden/parallelbench/golden.json)::

    python3 -m venv /tmp/pbvenv
    /tmp/pbvenv/bin/pip install evaluate datasets pandas pyyaml numpy tqdm language_tool_python
    /tmp/pbvenv/bin/python tools/goldens/make_parallelbench_golden.py \\
        --parallelbench /work/ParallelBench --commit 72de8f73246ae5b7c742c7eeae9a9853a90084ac \\
        --out tests/fixtures/golden/parallelbench/golden.json

The metrics' import chain needs ``evaluate`` and ``language_tool_python`` importable (no model is
downloaded and no grammar server is started: the re-implemented metrics use neither). Versions
used: Python 3.11.7, evaluate 0.4.6, datasets 5.2.0, pandas 3.1.1, numpy 2.4.6, PyYAML 6.0.4.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "tests" / "fixtures" / "parallelbench"

FIRST = [
    "Ada",
    "Bram",
    "Cleo",
    "Dov",
    "Esme",
    "Finn",
    "Gus",
    "Hana",
    "Ivo",
    "Juno",
    "Kit",
    "Lior",
    "Mae",
    "Nils",
    "Opal",
    "Pia",
    "Quin",
    "Rafe",
    "Sol",
    "Tova",
]
LAST = [
    "Quill",
    "Osei",
    "Marsh",
    "Pike",
    "Lund",
    "Roe",
    "Tate",
    "Vell",
    "Crane",
    "Park",
    "Moss",
    "Dray",
    "Fenn",
    "Hale",
    "Ives",
    "Kerr",
]


def names(rng: random.Random, n: int) -> list[str]:
    pool = [f"{a} {b}" for a in FIRST for b in LAST]
    return rng.sample(pool, n)


def canon(items) -> str:
    return "[" + ", ".join(f'"{x}"' for x in items) + "]"


def list_forms(items: list[str]) -> list[str]:
    """The same list written many ways (some readable, some not)."""
    c = canon(items)
    q = ", ".join(f'"{x}"' for x in items)
    return [
        c,
        f"Here is the final list: {c}",
        f"{c}\nThat is the list.",
        f"```json\n{c}\n```",
        "[" + ", ".join(items) + "]",  # no quotes
        "[" + ", ".join(f"'{x}'" for x in items) + "]",  # single quotes
        q,  # no brackets
        "[" + q,  # no closing bracket
        q + "]",  # no opening bracket
        "[" + ",".join(f'"{x}"' for x in items) + "]",  # no spaces
        "[ " + " ,  ".join(f'"{x}"' for x in items) + " ]",  # extra spaces
        "[\n" + ",\n".join(f'  "{x}"' for x in items) + "\n]",  # one per line
        "[" + q + ",]",  # trailing comma
        "[" + c + "]",  # nested
        f"[1, 2] and then {c}",  # an earlier list
        f'{c} or maybe ["{(items or ["x"])[0]}"]',  # a later list wins
        "[\t" + ",\t".join(f'"{x}"' for x in items) + "]",  # tabs
        c.lower(),
        " " + c + " \n",
        '["' + '", "'.join(items) + '"]',
        "[" + ", ".join(f'""{x}""' for x in items) + "]",  # doubled quotes
        "[" + ", ".join(f'"{x}' for x in items) + "]",  # missing closing quotes
    ]


def list_cases(rng: random.Random) -> list[tuple[str, object]]:
    """(prediction, reference) pairs for list_match_score."""
    out = []
    for n in (1, 2, 3, 4, 6):
        items = names(rng, n)
        ref = canon(items)
        preds = list_forms(items)
        preds += [
            canon(items[::-1]),
            canon(items[:-1]),
            canon([*items, items[0]]),
            canon(items[1:] + items[:1]),
            "",
            "   ",
            "[]",
            '[""]',
            "[,]",
            "None",
            canon([*items[:-1], items[-1] + " Jr"]),
            canon(items).replace('", "', '" , "'),
        ]
        out += [(p, ref) for p in preds]
    # references written in other ways
    items = names(rng, 3)
    for ref in (
        "[" + ", ".join(items) + "]",
        ", ".join(f'"{x}"' for x in items),
        canon(items) + "\n",
    ):
        out += [(canon(items), ref), ("[" + ", ".join(items) + "]", ref)]
    out += [
        ('["a [b]", "c"]', canon(["a [b]", "c"])),
        ('["x, y", "z"]', canon(["x, y", "z"])),
        ('["Ada Quill"]', '["Ada Quill"]'),
        ("[Ada Quill]", '["Ada Quill"]'),
        ('["Ada Quill", "]', canon(["Ada Quill", ""])),  # a lone quote is an empty item
        ('["]', '[""]'),
        ('[""]', '[""]'),
    ]
    return out


def permutations(rng: random.Random, items: list[str], k: int) -> list[list[str]]:
    perms = list(itertools.permutations(items)) if len(items) <= 4 else []
    if perms:
        return [list(p) for p in rng.sample(perms, min(k, len(perms)))]
    return [rng.sample(items, len(items)) for _ in range(k)]


def shuffle_cases(rng: random.Random) -> list[tuple[str, object]]:
    out = []
    for n in (1, 2, 3, 4, 5, 6):
        items = names(rng, n)
        ref = {"input": items, "example": canon(items[::-1])}
        for p in permutations(rng, items, 6):
            out += [(f, ref) for f in list_forms(p)[:6]]
        out += [
            (canon(items), ref),
            (canon(items[:-1]), ref),
            (canon([*items, items[0]]), ref),
            (canon(items[::-1][:-1] + [items[0] + "x"]), ref),
            ("", ref),
            ("[]", ref),
        ]
    dup = ["Ada Quill", "Ada Quill", "Bram Osei"]
    ref = {"input": dup, "example": canon(dup[::-1])}
    out += [
        (canon(p), ref)
        for p in (
            dup,
            dup[::-1],
            ["Ada Quill", "Bram Osei", "Ada Quill"],
            ["Ada Quill", "Bram Osei", "Bram Osei"],
        )
    ]
    return out


def insert_cases(rng: random.Random) -> list[tuple[str, object]]:
    out = []
    for n in (1, 2, 3, 5):
        items, (word, other) = names(rng, n), names(rng, 2)
        ref = {"input": items, "word": word, "example": canon([word, *items])}
        for i in range(n + 1):
            right = items[:i] + [word] + items[i:]
            out += [(f, ref) for f in list_forms(right)[:5]]
        out += [
            (canon(items), ref),
            (canon([*items, other]), ref),
            (canon([word, word, *items]), ref),
            (canon([word, *items[::-1]]), ref),
            (canon([word, *items[1:]]), ref),
            (canon([*items, word, other]), ref),
            ("", ref),
        ]
        ref_none = {"input": items, "word": None, "example": canon([other, *items])}
        out += [
            (canon(items[:1] + [other] + items[1:]), ref_none),
            (canon(items), ref_none),
            (canon([other, other, *items]), ref_none),
            (canon([items[0], *items]), ref_none),
            (canon([other, *items[::-1]]), ref_none),
        ]
        two = {
            "input": items,
            "word": [word, other],
            "n_words": 2,
            "example": canon([word, other, *items]),
        }
        out += [
            (canon([word, *items, other]), two),
            (canon([other, *items, word]), two),
            (canon([word, *items]), two),
            (canon([word, word, *items]), two),
        ]
        none2 = {
            "input": items,
            "word": None,
            "n_words": 2,
            "example": canon([word, other, *items]),
        }
        out += [(canon([word, *items, other]), none2), (canon([word, *items]), none2)]
    has = ["Ada Quill", "Bram Osei"]
    ref = {"input": has, "word": "Ada Quill", "example": canon(["Ada Quill", *has])}
    out += [
        (canon(p), ref)
        for p in (
            ["Ada Quill", *has],
            [*has, "Ada Quill"],
            has,
            ["Bram Osei", "Ada Quill", "Ada Quill"],
        )
    ]
    return out


def remove_cases(rng: random.Random) -> list[tuple[str, object]]:
    out = []
    for n in (1, 2, 3, 4, 6):
        items = names(rng, n)
        ref = {"input": items, "example": canon(items[1:])}
        for i in range(n):
            right = items[:i] + items[i + 1 :]
            out += [(f, ref) for f in list_forms(right)[:5] if right or f]
        out += [
            (canon(items), ref),
            (canon(items[2:]), ref),
            (canon(items[1:][::-1]), ref),
            (canon([*items[1:], items[1]] if n > 1 else ["x"]), ref),
            ("", ref),
            ("[]", ref),
        ]
        two = {"input": items, "n_words": 2, "example": canon(items[2:])}
        out += [
            (canon(items[2:]), two),
            (canon(items[:1] + items[3:]), two),
            (canon(items[1:]), two),
        ]
    dup = ["Ada Quill", "Bram Osei", "Ada Quill", "Cleo Marsh"]
    ref = {"input": dup, "example": canon(dup[1:])}
    out += [(canon(p), ref) for p in (dup[1:], dup[:2] + dup[3:], dup[:3], dup[:1] + dup[2:])]
    return out


def replace_cases(rng: random.Random) -> list[tuple[str, object]]:
    out = []
    for n in (1, 2, 3, 4, 6):
        items, (word, other) = names(rng, n), names(rng, 2)
        ref = {"input": items, "word": word, "example": canon([word, *items[1:]])}
        for i in range(n):
            right = items[:i] + [word] + items[i + 1 :]
            out += [(f, ref) for f in list_forms(right)[:5]]
        out += [
            (canon(items), ref),
            (canon([word, *items]), ref),
            (canon([other, *items[1:]]), ref),
            (canon([word] * n), ref),
            (canon([word, *items[1:]][::-1]), ref),
            ("", ref),
            (canon([word, other, *items[2:]]) if n > 1 else canon([other]), ref),
        ]
        none = {"input": items, "word": None, "example": canon([other, *items[1:]])}
        out += [
            (canon([other, *items[1:]]), none),
            (canon(items), none),
            (canon([word, other, *items[2:]]), none),
            (canon([*items, other]), none),
        ]
        none2 = {"input": items, "word": None, "n_words": 2, "example": canon(items)}
        out += [(canon([word, other, *items[2:]]), none2), (canon([other, *items[1:]]), none2)]
    # the word already in the input (never in the official data): where it lands matters
    has = ["Ada Quill", "Bram Osei", "Cleo Marsh"]
    ref = {"input": has, "word": "Ada Quill", "example": canon(["Ada Quill", *has[1:]])}
    out += [
        (canon(p), ref)
        for p in (
            has,
            has[:2] + ["Ada Quill"],
            ["Ada Quill"] * 3,
            ["Bram Osei", "Ada Quill", "Cleo Marsh"],
        )
    ]
    return out


def latin(symbols: list[str], rng: random.Random) -> list[list[str]]:
    n = len(symbols)
    base = [[symbols[(r + c) % n] for c in range(n)] for r in range(n)]
    rng.shuffle(base)
    cols = rng.sample(range(n), n)
    return [[row[c] for c in cols] for row in base]


def csv(square) -> str:
    return "\n".join(",".join(row) for row in square)


def latin_cases(rng: random.Random) -> list[tuple[str, object]]:
    out = []
    pools = [
        ["Q", "7", "M", "2"],
        ["X", "1", "Z", "5"],
        ["k", "R", "9", "D"],
        ["A", "B", "C", "D"],
        ["3", "8", "0", "6"],
        ["W", "E", "4", "J"],
    ]
    for sym in pools:
        sq = latin(sym, rng)
        ref = {"symbols": sym, "example": csv(latin(sym, rng))}
        bad = [row[:] for row in sq]
        bad[1], bad[2] = bad[2][:], bad[2][:]  # two equal rows: columns repeat
        swapped = [row[:] for row in sq]
        swapped[0][0], swapped[0][1] = swapped[0][1], swapped[0][0]  # rows fine, columns not
        out += [
            (p, ref)
            for p in (
                csv(sq),
                csv(sq) + "\n",
                "Here it is:\n" + csv(sq) + "\nDone.",
                f"```csv\n{csv(sq)}\n```",
                "\n".join(", ".join(r) for r in sq),
                "\n".join(" , ".join(r) for r in sq),
                "\r\n".join(",".join(r) for r in sq),
                "\n\n".join(",".join(r) for r in sq),
                "\n".join(";".join(r) for r in sq),
                "\n".join(" ".join(r) for r in sq),
                "\n".join(",".join(r) + "," for r in sq),
                csv(sq[:3]),
                csv(sq + sq[:1]),
                csv(bad),
                csv(swapped),
                ",".join(sym) + "\n" + csv(sq),  # a header row first
                csv(sq[1:] + sq[:1]),
                csv([r[::-1] for r in sq]),
                "",
                csv(sq).lower(),
                "\n".join(",".join([*r, r[0]]) for r in sq),  # five cells: set still the symbols
                "\n".join(",".join(r) for r in sq).replace("\n", " "),
                csv([[*r[:2], " " + r[2] + " ", r[3]] for r in sq]),
                "junk,line\n" + csv(sq[:2]) + "\nnoise\n" + csv(sq[2:]),
            )
        ]
        first = {"symbols": sym, "first_row": sq[0], "example": csv(sq)}
        out += [(csv(sq), first), (csv(sq[1:] + sq[:1]), first), (csv(swapped), first)]
    tiny = {"symbols": ["a", "b"], "example": "a,b\nb,a"}
    out += [
        (p, tiny)
        for p in ("a,b\nb,a", "b,a\na,b", "a,b\na,b", "a,b", "a,b,a\nb,a,b", "a,b\nb,a\nc")
    ]
    dupsym = {"symbols": ["a", "a", "b"], "example": "a,b\nb,a"}
    out += [("a,b\nb,a", dupsym), ("a,a,b\nb,a,a\na,b,a", dupsym)]
    return out


def sudoku(rng: random.Random) -> list[list[int]]:
    base = [[1, 2, 3, 4], [3, 4, 1, 2], [2, 1, 4, 3], [4, 3, 2, 1]]
    digits = rng.sample([1, 2, 3, 4], 4)
    grid = [[digits[v - 1] for v in row] for row in base]
    if rng.random() < 0.5:
        grid = [grid[1], grid[0], grid[3], grid[2]]
    return grid


def grid_text(grid, sep: str = "", line: str = "\n") -> str:
    return line.join(sep.join(str(v) for v in row) for row in grid)


def sudoku_cases(rng: random.Random) -> list[tuple[str, object]]:
    out = []
    for _ in range(6):
        g = sudoku(rng)
        ref = grid_text(g)
        wrong = [row[:] for row in g]
        wrong[3][3] = wrong[3][3] % 4 + 1
        out += [
            (p, ref)
            for p in (
                ref,
                ref + "\n",
                "  " + ref + "  ",
                grid_text(g, " "),
                grid_text(g, ","),
                grid_text(g, ", "),
                grid_text(g, "|"),
                grid_text(g, "\t"),
                "\n".join(str(row) for row in g),
                "Output:\n" + ref,
                ref + "\nDone",
                "Row 1: 1234\n" + ref,
                grid_text(g, "", "\r\n"),
                grid_text(g, "", "\n\n"),
                f"```\n{ref}\n```",
                grid_text(g, "", " "),
                grid_text(g[:3]),
                grid_text(g + g[:1]),
                grid_text(wrong),
                grid_text(g[::-1]),
                "",
                "1234",
                ref.replace("1", "٣"),
                grid_text([[*row, row[0]] for row in g]),
                grid_text(g, " ", "\n ").replace("\n", "\n\n"),
                "\n".join("".join(str(v) for v in row) + "." for row in g),
            )
        ]
    return out


CASES = {
    "list_match_score": list_cases,
    "list_shuffle_score": shuffle_cases,
    "list_random_insert_score": insert_cases,
    "list_random_remove_score": remove_cases,
    "list_random_replace_score": replace_cases,
    "latin_square_score": latin_cases,
    "sudoku_score": sudoku_cases,
}


def official_metrics(pb) -> list[dict]:
    from dataset.parallel_bench.metrics import parallel_bench_metric_func_map

    out = []
    for metric, make in CASES.items():
        pairs = make(random.Random(f"parallelbench-golden/{metric}"))
        bench = pb.ParallelBench.__new__(pb.ParallelBench)  # compute_metrics needs metric_func only
        bench.metric_func = parallel_bench_metric_func_map[metric]
        preds, refs = [p for p, _ in pairs], [r for _, r in pairs]
        _, per = bench.compute_metrics(preds, refs, output_per_sample=True)
        assert len(per) == len(pairs), f"{metric}: a metric value that is not a float"
        for (p, r), m in zip(pairs, per, strict=True):
            out.append(
                {
                    "metric": metric,
                    "prediction": p,
                    "reference": r,
                    "score": float(m["score"]),
                    "score_strict": float(m["score_strict"]),
                }
            )
    return out


def official_prompts(pb) -> list[dict]:
    """Every row of the fake checkout through the official loader (file lookup redirected)."""
    from dataset.parallel_bench.data import task as task_module

    output = FAKE / "dataset" / "parallel_bench" / "data" / "output"
    task_module._get_task_file = lambda split, task_name: output / split / f"{task_name}.jsonl"
    names_ = sorted(
        str(p.relative_to(output / "test").with_suffix(""))
        for p in (output / "test").glob("*/*.jsonl")
    )
    out = []
    for name in names_:
        bench = pb.ParallelBench(name)
        for i in range(len(bench)):
            item = bench[i]
            out.append(
                {
                    "task": name,
                    "index": i,
                    "messages": item["input"]["messages"],
                    "label": item["label"],
                }
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parallelbench", required=True, help="a furiosa-ai/ParallelBench checkout")
    ap.add_argument("--commit", required=True, help="the checkout's commit (recorded)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    root = Path(args.parallelbench).resolve()
    sys.path.insert(0, str(root))
    import dataset.parallel_bench as pb

    sha = {
        f: hashlib.sha256((root / f).read_bytes()).hexdigest()
        for f in ("dataset/parallel_bench/metrics.py", "dataset/parallel_bench/__init__.py")
    }
    golden = {
        "meta": {
            "repository": "furiosa-ai/ParallelBench",
            "commit": args.commit,
            "sha256": sha,
            "python": sys.version.split()[0],
        },
        "metrics": official_metrics(pb),
        "prompts": official_prompts(pb),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n")
    counts = {}
    for c in golden["metrics"]:
        counts.setdefault(c["metric"], [0, 0])
        counts[c["metric"]][0] += 1
        counts[c["metric"]][1] += c["score"] == 1.0
    for metric, (n, ones) in counts.items():
        print(f"{metric:28s} {n:4d} cases, {ones:4d} score 1")
    print(f"{len(golden['prompts'])} prompts -> {args.out}")


if __name__ == "__main__":
    main()
