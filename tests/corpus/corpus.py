"""The bad-input corpus (`bad_inputs.yaml`, `more_cases.yaml`): its cases, and what its runners
share."""

from __future__ import annotations

import base64
import io
import json
import shutil
from pathlib import Path

import yaml

FILE = Path(__file__).with_name("bad_inputs.yaml")
MORE = Path(__file__).with_name("more_cases.yaml")  # more cases of the same two formats


def cases(kind: str, file: Path = FILE) -> list[dict]:
    """The `cli` or `http` cases of a corpus file (bad_inputs.yaml unless `file`)."""
    return yaml.safe_load(file.read_text(encoding="utf-8"))[kind]


def case_id(case: dict) -> str:
    """A short, stable test id: the case's command line or request."""
    if "argv" in case:
        text = " ".join(str(a) for a in case["argv"])
    else:
        text = f"{case.get('path', 'chat')} {json.dumps(case.get('json', case.get('raw')))}"
    return text[:90]


def png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (16, 16), (200, 40, 40)).save(buf, format="PNG")
    return buf.getvalue()


def png_uri() -> str:
    return "data:image/png;base64," + base64.b64encode(png()).decode()


def substitute(value, **names):
    """`value` with "{name}" replaced in every string inside it."""
    if isinstance(value, str):
        for k, v in names.items():
            value = value.replace("{" + k + "}", v)
        return value
    if isinstance(value, list):
        return [substitute(v, **names) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, **names) for k, v in value.items()}
    return value


def prepare(case: dict, tmp: Path) -> None:
    """Write the case's files, copy and edit its model folder (see bad_inputs.yaml)."""
    from seer.models.loader import builtin_path

    if case.get("model"):
        shutil.copytree(builtin_path(case["model"]), tmp / "model")
    for rel, text in (case.get("files") or {}).items():
        path = tmp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if text == "{png}":
            path.write_bytes(png())
        else:
            path.write_text(text, encoding="utf-8")
    for rel, changes in (case.get("json") or {}).items():
        path = tmp / rel
        raw = json.loads(path.read_text()) if path.is_file() else {}
        for k, v in changes.items():
            if v is None:
                raw.pop(k, None)
            else:
                raw[k] = v
        path.write_text(json.dumps(raw))
    for rel in case.get("delete") or []:
        (tmp / rel).unlink()


def check_one_line(case: dict, rc: int, err: str, records, **names) -> None:
    """A CLI case's outcome: no traceback, the case's exit code, and either its one warning
    line (`warn`) or exactly one `seer: error:` line, the last of stderr, holding its `error`
    (with `names` filled in, e.g. tmp=...)."""
    assert "Traceback" not in err, err
    assert rc == case.get("exit", 2), err
    if "warn" in case:
        said = [r.getMessage() for r in records if case["warn"] in r.getMessage()]
        assert len(said) == 1 and "\n" not in said[0], [r.getMessage() for r in records]
        return
    lines = [line for line in err.splitlines() if line.startswith("seer: error: ")]
    assert len(lines) == 1 and err.endswith(lines[0] + "\n"), err  # one line, the last
    assert substitute(case["error"], **names) in lines[0], lines[0]
