"""Writes the built-in requests the package ships: one file per built-in model's task,
``src/seer/assets/requests/<model>.jsonl.gz``, the first rows of its seed-0 held-out pool
(`synthetic.pool`), each with its side of the calibration / evaluation split and its scoring
fields (answer, metric, reference); a picture as a base64 PNG. `seer.data.builtin` reads them.

    python -m synthetic.export            # all four (deterministic: the same bytes every run)
    python -m synthetic.export --check    # fails if a shipped file differs from a fresh export
"""

from __future__ import annotations

import argparse
import base64
import gzip
import io
import itertools
import json
import sys

from seer.data.builtin import FILES, ROWS, folder
from synthetic.pool import marked_pool


def rows(task: str, n: int) -> list[dict]:
    out = []
    for m in itertools.islice(marked_pool(task, 0), n):
        e = m.example
        row = {"id": e.id, "part": m.part, "prompt": e.prompt}
        if e.messages is not None:
            row["messages"] = e.messages
        if e.image is not None:
            buf = io.BytesIO()
            e.image.save(buf, format="PNG", optimize=True)
            row["image"] = base64.b64encode(buf.getvalue()).decode()
        row.update(answer=e.answer, family=e.family)
        row.update(
            {k: v for k, v in (("metric", e.metric), ("reference", e.reference)) if v is not None}
        )
        out.append(row)
    return out


def encode(task: str) -> bytes:
    text = "".join(json.dumps(r) + "\n" for r in rows(task, ROWS[task]))
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as f:  # same bytes every run
        f.write(text.encode())
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the shipped files")
    args = ap.parse_args(argv)
    bad = 0
    for task, name in FILES.items():
        path = folder() / name
        data = encode(task)
        if args.check:
            same = path.is_file() and path.read_bytes() == data
            print(f"{path}: {'same' if same else 'DIFFERS'}")
            bad += not same
        else:
            path.write_bytes(data)
            print(f"{path}: {ROWS[task]} requests, {len(data) / 1e6:.2f} MB")
    return int(bad > 0)


if __name__ == "__main__":
    sys.exit(main())
