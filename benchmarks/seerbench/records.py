"""Raw records, plain or compressed: a run writes JSON Lines (``raw-T.jsonl``); the committed
records under ``docs/results/`` are gzipped (``raw-T.jsonl.gz``), and every reader takes either.
A path names a record whichever way it is stored: ``raw-T.jsonl`` finds ``raw-T.jsonl.gz`` when
only that exists, so a stopped run resumes on a committed record too (appending a gzip member).

    python -m seerbench.records docs/results/compare/shipped/raw-builtin.jsonl ...  # compress
"""

from __future__ import annotations

import gzip
import io
import sys
from pathlib import Path
from typing import IO

GZ = ".gz"


def path_of(path: str | Path) -> Path:
    """`path`, or its compressed (or plain) twin when only that exists."""
    path = Path(path)
    if path.exists():
        return path
    twin = path.with_name(path.name.removesuffix(GZ)) if path.suffix == GZ else Path(f"{path}{GZ}")
    return twin if twin.exists() else path


def read_text(path: str | Path) -> str:
    """The text of a record, plain or gzipped."""
    path = path_of(path)
    if path.suffix == GZ:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return f.read()
    return path.read_text()


def write_text(path: str | Path, text: str) -> None:
    """Replace a record's text (gzipped when its name ends in .gz: the same bytes every run)."""
    path = Path(path)
    if path.suffix == GZ:
        buf = io.BytesIO()
        with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, filename="") as f:
            f.write(text.encode("utf-8"))
        path.write_bytes(buf.getvalue())
    else:
        path.write_text(text)


def append(path: str | Path) -> IO[str]:
    """A record opened to append lines to (text mode; a gzipped record gets a new member)."""
    path = path_of(path)
    if path.suffix == GZ:
        return gzip.open(path, "at", encoding="utf-8")
    return path.open("a")


def compress(path: str | Path) -> Path:
    """Gzip a plain record beside itself and remove the plain file; returns the .gz path."""
    path = Path(path)
    if path.suffix == GZ:
        return path
    out = Path(f"{path}{GZ}")
    write_text(out, path.read_text())
    if read_text(out) != path.read_text():
        raise AssertionError(f"{out}: the compressed record differs from {path}")
    path.unlink()
    return out


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(compress(name))
