"""Read a user's dataset file into `Example`s: JSON Lines, CSV, Parquet / Arrow, or a
`datasets.save_to_disk` folder.

Every row goes through one parser (`parse_row`), whatever the format, so the rules are the same
everywhere:

* ``prompt`` (a non-empty string) **or** ``messages`` (an OpenAI-style chat: a list of
  ``{"role": "system"|"user"|"assistant", "content": str | [parts]}`` ending with a user turn;
  parts are ``{"type": "text", "text": ...}`` and at most one
  ``{"type": "image_url", "image_url": {"url": ...}}``); not both;
* ``image`` (optional): a path relative to the data file, an absolute path, a
  ``data:image/...;base64,`` URI, or (Parquet / datasets) an image feature;
* ``answer`` (optional; a number is read as its text), ``id`` (optional, unique; default: the
  row's 0-based index), ``family`` (optional label for per-family reports).

A bad row raises one `SeerError` naming the file, the line (CSV / JSON Lines; "row" for columnar
files) and the field; JSON nested deeper than `MAX_DEPTH` (no row needs more than a few levels)
is refused too, before it can exhaust Python's recursion. Blank lines of a JSON Lines file are
skipped; no other row is ever dropped. Other columns are ignored. A text holding a NUL
character (a binary file, a damaged export) is refused, as is a CSV file the `csv` module reads
only by guessing (strict mode: a quote left open runs to the end of the file, a stray quote),
naming the row where the record starts. A Parquet / Arrow file with no rows, or one `datasets`
cannot read, is one line too; `datasets`' own log lines and progress bars stay quiet (its bars
show only while Seer's do).
"""

from __future__ import annotations

import base64
import binascii
import csv
import json
from collections.abc import Iterator
from pathlib import Path

from seer import extras
from seer.data.example import Example
from seer.errors import SeerError

ROLES = ("system", "user", "assistant")
DATASETS_SUFFIXES = (".parquet", ".arrow")
FIELDS = ("id", "prompt", "messages", "image", "answer", "family")
MAX_DEPTH = 32  # JSON nesting a row may have (a chat with image parts needs 6)


def loads(text: str, where: str, what: str = "not valid JSON"):
    """`json.loads` with nesting bounded by `MAX_DEPTH`: a row nested 100,000 levels deep is
    one `SeerError` naming `where`, not a RecursionError."""
    if _depth(text) > MAX_DEPTH:
        raise SeerError(f"{where}: JSON nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise SeerError(f"{where}: {what} ({e.msg})") from None


def _depth(text: str) -> int:
    """The deepest [ / { nesting of JSON text, strings skipped (a linear scan; the text is
    parsed only once this is bounded)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return 0  # too few brackets to be too deep: the common case costs two counts
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def read_file(path: Path) -> list[Example]:
    """All rows of a dataset file or `save_to_disk` folder, in file order."""
    rows: Iterator[tuple[str, object]]
    if path.is_dir():
        rows = _datasets_rows(path, "row")
    elif path.suffix.lower() in (".jsonl", ".ndjson"):
        rows = _jsonl_rows(path)
    elif path.suffix.lower() == ".csv":
        rows = _csv_rows(path)
    elif path.suffix.lower() in DATASETS_SUFFIXES:
        rows = _datasets_rows(path, "row")
    else:
        raise SeerError(
            f"{path}: unknown data format {path.suffix!r}; give a .jsonl, .csv, .parquet or "
            ".arrow file or a datasets.save_to_disk folder"
        )
    examples: list[Example] = []
    where_of: dict[str, str] = {}
    try:
        for where, row in rows:
            ex = parse_row(row, where, path.parent if path.is_file() else path, len(examples))
            if ex.id in where_of:
                raise SeerError(f"{where}: field 'id': {ex.id!r} repeats {where_of[ex.id]}")
            where_of[ex.id] = where
            examples.append(ex)
    except UnicodeDecodeError as e:
        raise SeerError(f"{path}: not UTF-8 text (byte {e.start}); save it as UTF-8") from None
    if not examples:
        raise SeerError(f"{path}: no rows")
    return examples


def parse_row(row: object, where: str, base: Path, index: int) -> Example:
    """One row -> `Example`; `where` ("file:line N") prefixes every error, `base` resolves
    relative image paths, `index` is the default id."""

    def bad(field: str, why: str) -> SeerError:
        return SeerError(f"{where}: field {field!r}: {why}")

    if not isinstance(row, dict):
        raise SeerError(f"{where}: a row must be a JSON object, not {type(row).__name__}")
    row = {k: v for k, v in row.items() if v is not None and k in FIELDS}
    for field, value in row.items():
        if _has_nul(value):
            raise bad(field, "holds a NUL character (\\x00): the file is damaged or not text")
    prompt, messages, image = row.get("prompt"), row.get("messages"), row.get("image")
    if prompt is not None and messages is not None:
        raise bad("messages", "give either prompt or messages, not both")
    if prompt is None and messages is None:
        raise SeerError(f"{where}: field 'prompt': missing (give prompt or messages)")
    if messages is not None:
        messages, prompt, chat_image = _messages(messages, bad)
        if chat_image is not None:
            if image is not None:
                raise bad("image", "the chat already holds an image; give one image per row")
            image = chat_image
    elif not isinstance(prompt, str) or not prompt.strip():
        raise bad("prompt", "must be a non-empty string")
    return Example(
        id=_text(row.get("id", index), "id", bad),
        prompt=prompt,
        messages=messages,
        image=None if image is None else _image(image, base, bad),
        answer=None if "answer" not in row else _text(row["answer"], "answer", bad, empty=True),
        family=None if "family" not in row else _text(row["family"], "family", bad),
    )


def _has_nul(value, depth: int = 0) -> bool:
    """A NUL character in a text, or in a text inside a chat's lists and objects."""
    if isinstance(value, str):
        return "\x00" in value
    if depth < MAX_DEPTH and isinstance(value, (list, dict)):
        items = value.values() if isinstance(value, dict) else value
        return any(_has_nul(v, depth + 1) for v in items)
    return False


def _text(value, field: str, bad, empty: bool = False) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise bad(field, f"must be a string or a number, not {type(value).__name__}")
    text = str(value)
    if not empty and not text.strip():
        raise bad(field, "must not be empty")
    return text


def _messages(messages, bad) -> tuple[list[dict], str, object]:
    """Checked chat, the text of its last user turn, and its image (or None)."""
    if isinstance(messages, str):  # CSV / columnar files carry the chat as JSON text
        try:
            messages = loads(messages, "")
        except SeerError as e:
            raise bad("messages", str(e).removeprefix(": ")) from None
    if not isinstance(messages, list) or not messages:
        raise bad("messages", "must be a non-empty list of {role, content} objects")
    out, image = [], None
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ROLES or "content" not in m:
            raise bad("messages", f"turn {i} must be {{'role': one of {ROLES}, 'content': ...}}")
        content = m["content"]
        if isinstance(content, list):
            texts = []
            for part in content:
                kind = part.get("type") if isinstance(part, dict) else None
                if kind == "text" and isinstance(part.get("text"), str):
                    texts.append(part["text"])
                elif kind == "image_url" and isinstance(part.get("image_url"), dict):
                    if image is not None:
                        raise bad("messages", "holds more than one image; give one per row")
                    image = part["image_url"].get("url")
                else:
                    raise bad("messages", f"turn {i}: unknown content part {part!r}")
            content = "\n".join(texts)
        if not isinstance(content, str):
            raise bad("messages", f"turn {i}: content must be a string or a list of parts")
        out.append({"role": m["role"], "content": content})
    if out[-1]["role"] != "user" or not out[-1]["content"].strip():
        raise bad("messages", "the last turn must be a non-empty user turn")
    return out, out[-1]["content"], image


def _image(value, base: Path, bad):
    """A checked image reference: absolute path, data URI, or PIL image (columnar files)."""
    if isinstance(value, dict) and ("bytes" in value or "path" in value):  # datasets' Image
        value = value.get("bytes") or value.get("path")
    if isinstance(value, bytes):
        value = "data:image/unknown;base64," + base64.b64encode(value).decode()
    if hasattr(value, "mode") and hasattr(value, "tobytes"):  # PIL.Image.Image
        return value
    if not isinstance(value, str) or not value.strip():
        raise bad("image", "must be a path or a data:image/...;base64, URI")
    if value.startswith("data:"):
        head, _, data = value.partition(",")
        if not head.startswith("data:image/") or not head.endswith(";base64"):
            raise bad("image", "a data URI must look like data:image/png;base64,...")
        try:
            base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise bad("image", "the data URI's base64 payload is corrupt") from None
        return value
    if value.startswith(("http://", "https://")):
        raise bad("image", "URLs are not fetched; download the image and give its path")
    path = (base / Path(value).expanduser()).resolve()
    if not path.is_file():
        raise bad("image", f"{value!r} is not a file (relative paths start at the data file)")
    return str(path)


def _jsonl_rows(path: Path) -> Iterator[tuple[str, object]]:
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            yield f"{path}:{n}", loads(line, f"{path}:{n}")


def _csv_rows(path: Path) -> Iterator[tuple[str, dict]]:
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f, strict=True)
        line = 1
        try:
            if not reader.fieldnames or not {"prompt", "messages"} & set(reader.fieldnames):
                raise SeerError(f"{path}:1: the header needs a 'prompt' or 'messages' column")
            for row in reader:
                if None in row:
                    raise SeerError(f"{path}:{line + 1}: more values than header columns")
                # empty cells are absent values; the reported line is where the record starts
                yield f"{path}:{line + 1}", {k: v for k, v in row.items() if v != ""}
                line = reader.line_num
        except csv.Error as e:
            why = str(e)
            if "unexpected end of data" in why:
                why = "a quoted field is never closed (its quote runs to the end of the file)"
            raise SeerError(f"{path}:{line + 1}: not valid CSV: {why}") from None


def _datasets_rows(path: Path, unit: str) -> Iterator[tuple[str, dict]]:
    extras.require("data", f"{path}: reading Parquet / Arrow / save_to_disk data")
    import datasets

    from seer import progress

    datasets.logging.set_verbosity(datasets.logging.CRITICAL)  # its lines: ours say it once
    if not progress.enabled():
        datasets.disable_progress_bars()
    if path.suffix.lower() == ".parquet" and path.is_file():
        _parquet_rows_count(path)
    try:
        if path.is_dir():
            ds = datasets.load_from_disk(str(path), keep_in_memory=True)
            if isinstance(ds, datasets.DatasetDict):
                raise SeerError(f"{path}: a DatasetDict; give one split's folder")
        elif path.suffix.lower() == ".parquet":
            ds = datasets.Dataset.from_parquet(str(path), keep_in_memory=True)
        else:
            ds = datasets.Dataset.from_file(str(path), in_memory=True)
    except (FileNotFoundError, ValueError, OSError) as e:
        raise SeerError(f"{path}: cannot read it with datasets: {_first_line(e)}") from None
    except datasets.exceptions.DatasetGenerationError as e:
        raise SeerError(
            f"{path}: cannot read it with datasets: {_first_line(e.__cause__ or e)}"
        ) from None
    for i, row in enumerate(ds):
        yield f"{path}: {unit} {i}", row


def _parquet_rows_count(path: Path) -> None:
    """A Parquet file whose footer says it has no rows is one line (datasets' error on it is a
    traceback); a footer pyarrow cannot read is left to datasets' own message."""
    import pyarrow.parquet as pq

    try:
        rows = pq.read_metadata(path).num_rows
    except Exception:  # noqa: BLE001 - not a Parquet file: datasets says why below
        return
    if rows == 0:
        raise SeerError(f"{path}: no rows")


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
