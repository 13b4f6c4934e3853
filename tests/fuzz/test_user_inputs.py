"""Fuzzing what users hand us: every input ends in a valid answer or one `SeerError` line.

Hypothesis draws config.json and seer.json contents, tokenizer files, prompts (any text, any
bytes, any length, token ids), images (any bytes, sizes, modes, arrays), sampling options and
command lines, and runs them through the public entry points (`seer.load`, `generate`,
`load_image`, `seer.cli.main`) on tiny checkpoints. Each property asserts that the call either
succeeds or raises a `SeerError` whose message is one line, never another exception; the CLI
property also asserts that no file is written outside the output path it was given.

Bounded for CI (derandomized, a fixed number of examples per property, the whole module in well
under a minute); `SEER_FUZZ_SCALE=20` multiplies the examples for a longer local hunt.
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import seer
from seer.errors import SeerError
from seer.images import load_image
from seer.models.factory import make_random_checkpoint

SCALE = int(os.environ.get("SEER_FUZZ_SCALE", "1"))


def fuzz(n: int):
    return settings(
        max_examples=n * SCALE,
        deadline=None,
        derandomize=SCALE == 1,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


def one_line_or_ok(call):
    """Run `call`; a SeerError must be one line. Returns the result or None."""
    try:
        return call()
    except SeerError as e:
        msg = str(e)
        assert msg and "\n" not in msg, f"a SeerError of {msg.count(chr(10)) + 1} lines: {msg!r}"
        return None


# -- values a JSON file may hold --------------------------------------------------------------
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.sampled_from([0, 1, -1, 2, 3, 7, 2**31, 10**9])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


@pytest.fixture(scope="module")
def llada_dir(tmp_path_factory):
    return make_random_checkpoint("llada", tmp_path_factory.mktemp("fz") / "m", layers=1, width=16)


@pytest.fixture(scope="module")
def lm(llada_dir):
    return seer.load(llada_dir)


def _copy(src: Path, dst: Path) -> Path:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    return dst


def _load_and_answer(folder: Path) -> None:
    def run():
        model = seer.load(folder)
        g = model.generate("hi", gen_length=4, steps=2)
        assert isinstance(g.text, str) and len(g.token_ids) == 4
        g = model.generate("hi", gen_length=4, steps=2, seer=True)
        assert isinstance(g.text, str)

    one_line_or_ok(run)


# -- model files ------------------------------------------------------------------------------
@fuzz(40)
@given(data=st.data())
def test_config_json_contents(llada_dir, tmp_path, data):
    folder = _copy(llada_dir, tmp_path / "m")
    raw = json.loads((folder / "config.json").read_text())
    how = data.draw(st.sampled_from(["set", "drop", "replace", "bytes"]))
    if how == "set":
        key = data.draw(st.sampled_from(sorted(raw)) | st.text(max_size=8))
        raw[key] = data.draw(json_values)
        text = json.dumps(raw, allow_nan=True)
    elif how == "drop":
        raw.pop(data.draw(st.sampled_from(sorted(raw))))
        text = json.dumps(raw)
    elif how == "replace":
        text = json.dumps(data.draw(json_values), allow_nan=True)
    else:
        text = data.draw(st.binary(max_size=64)).decode("latin-1")
    (folder / "config.json").write_text(text, encoding="latin-1" if how == "bytes" else "utf-8")
    _load_and_answer(folder)


@fuzz(30)
@given(data=st.data())
def test_seer_json_contents(llada_dir, tmp_path, data):
    folder = _copy(llada_dir, tmp_path / "m")
    keys = ["gen_length", "config", "sparsity_config", "calibration", "system_prompt", "vq_model"]
    fields = ["signal", "layer", "theta", "tensor", "rule", "eos_tau", "eos_run", "bucket", "z"]
    if data.draw(st.booleans()):
        config = {
            k: data.draw(json_values)
            for k in data.draw(st.sets(st.sampled_from(fields), max_size=3))
        }
        value = {data.draw(st.sampled_from(keys)): config}
    else:
        value = data.draw(
            st.dictionaries(st.sampled_from(keys) | st.text(max_size=6), json_values, max_size=3)
            | json_values
        )
    (folder / "seer.json").write_text(json.dumps(value, allow_nan=True))
    _load_and_answer(folder)


@fuzz(25)
@given(data=st.data())
def test_tokenizer_files(llada_dir, tmp_path, data):
    folder = _copy(llada_dir, tmp_path / "m")
    name = data.draw(st.sampled_from(["tokenizer.json", "tokenizer_config.json"]))
    path = folder / name
    raw = json.loads(path.read_text())
    how = data.draw(st.sampled_from(["set", "bytes", "template"]))
    if how == "set" and isinstance(raw, dict):
        raw[data.draw(st.sampled_from(sorted(raw)))] = data.draw(json_values)
        path.write_text(json.dumps(raw, allow_nan=True))
    elif how == "template":
        raw["chat_template"] = data.draw(
            st.text(max_size=40)
            | st.sampled_from(
                ["{{", "{% for %}", "{{ raise_exception('x') }}", "{{ messages[9] }}"]
            )
        )
        path.write_text(json.dumps(raw))
    else:
        path.write_bytes(data.draw(st.binary(max_size=64)))
    _load_and_answer(folder)


# -- prompts ----------------------------------------------------------------------------------
@fuzz(40)
@given(
    prompt=st.text(max_size=200)
    | st.binary(max_size=200).map(os.fsdecode)  # bytes from a command line (surrogate escapes)
    | st.text(alphabet="ab ", min_size=1000, max_size=3000)  # over the context
)
def test_text_prompts(lm, prompt):
    g = one_line_or_ok(lambda: lm.generate(prompt, gen_length=4, steps=2))
    if g is not None:
        assert len(g.token_ids) == 4


@fuzz(30)
@given(
    ids=st.lists(st.integers(-5, 400) | st.integers(-(2**70), 2**70), max_size=40)
    | st.lists(st.lists(st.integers(-2, 400), max_size=10), max_size=4)
)
def test_token_id_prompts(lm, ids):
    one_line_or_ok(lambda: lm.generate(ids, gen_length=4, steps=2))


# -- damaged files ----------------------------------------------------------------------------
@st.composite
def damaged(draw, raw: bytes, lo: int = 0, hi: int | None = None):
    """`raw` whole, truncated, or with 1-4 bytes in [lo, hi) flipped (a bad disk, a bad copy);
    half the flips land in the first 32 bytes, where the headers that decoders trust are."""
    how = draw(st.sampled_from(["whole", "cut", "flip", "head"]))
    if how == "whole" or not raw:
        return raw
    if how == "cut":
        return raw[: draw(st.integers(0, len(raw)))]
    out = bytearray(raw)
    top = min(len(raw), hi or len(raw), lo + 32 if how == "head" else len(raw))
    for _ in range(draw(st.integers(1, 4))):
        out[draw(st.integers(min(lo, top - 1), top - 1))] ^= draw(st.integers(1, 255))
    return bytes(out)


@fuzz(25)
@given(data=st.data())
def test_config_json_with_damaged_bytes(llada_dir, tmp_path, data):
    folder = _copy(llada_dir, tmp_path / "m")
    path = folder / "config.json"
    path.write_bytes(data.draw(damaged(path.read_bytes())))
    _load_and_answer(folder)


@fuzz(25)
@given(data=st.data())
def test_safetensors_header_with_damaged_bytes(llada_dir, tmp_path, data):
    """Bytes of the header (its length, then the JSON of names, dtypes, shapes, offsets)."""
    folder = _copy(llada_dir, tmp_path / "m")
    path = folder / "model.safetensors"
    raw = path.read_bytes()
    end = 8 + int.from_bytes(raw[:8], "little")
    path.write_bytes(data.draw(damaged(raw, 0, end)))
    _load_and_answer(folder)


# -- images -----------------------------------------------------------------------------------
MODES = ["1", "L", "P", "RGB", "RGBA", "CMYK", "I", "F", "LA", "I;16", "YCbCr", "HSV"]


@st.composite
def images(draw):
    kind = draw(st.sampled_from(["bytes", "png", "pil", "array", "uri", "path"]))
    if kind == "bytes":
        return io.BytesIO(draw(st.binary(max_size=256)))
    size = (draw(st.integers(0, 40)), draw(st.integers(0, 40)))
    if kind in ("pil", "png"):
        from PIL import Image

        mode = draw(st.sampled_from(MODES))
        if kind == "png":  # a file holds at least one pixel (empty images: the "pil" kind)
            size = (max(1, size[0]), max(1, size[1]))
        try:
            img = Image.new(mode, size)
        except (ValueError, OSError):
            img = Image.new("RGB", (max(1, size[0]), max(1, size[1])))
        if kind == "pil":
            return img
        buf = io.BytesIO()
        try:
            fmt = draw(st.sampled_from(["PNG", "GIF", "BMP", "TIFF", "WEBP", "PPM"]))
            img.save(buf, format=fmt)
        except Exception:  # a mode the format cannot store: the strategy's problem, not ours
            buf = io.BytesIO()
            img.convert("RGB").save(buf, format="PNG")
        return io.BytesIO(draw(damaged(buf.getvalue())))
    if kind == "array":
        dtype = draw(
            st.sampled_from([np.uint8, np.float32, np.float64, np.int64, np.bool_, np.float16])
        )
        shape = draw(st.lists(st.integers(0, 6), min_size=0, max_size=4))
        values = draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0, np.nan, np.inf]))
        return np.full(shape, values).astype(dtype)
    if kind == "uri":
        return "data:" + draw(st.text(max_size=30))
    return draw(st.text(max_size=20))  # a path that (most likely) does not exist


@fuzz(60)
@given(image=images())
def test_images(image, tmp_path):
    if isinstance(image, io.BytesIO):  # raw bytes go in as a file on disk
        path = tmp_path / "img"
        path.write_bytes(image.getvalue())
        image = str(path)
    out = one_line_or_ok(lambda: load_image(image))
    if out is not None:
        assert out.mode == "RGB" and min(out.size) >= 1


def _encoded(fmt: str) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (9, 7), (200, 40, 40)).save(buf, format=fmt)
    return buf.getvalue()


ENCODED = {fmt: _encoded(fmt) for fmt in ["PNG", "GIF", "BMP", "TIFF", "WEBP", "PPM", "JPEG"]}


@fuzz(150)
@given(data=st.data())
def test_image_files_with_damaged_bytes(tmp_path, data):
    """A good small file of each format, cut or with flipped bytes (cheap: no model runs)."""
    raw = data.draw(damaged(ENCODED[data.draw(st.sampled_from(sorted(ENCODED)))]))
    path = tmp_path / "img"
    path.write_bytes(raw)
    for image in (str(path), "data:image/png;base64," + base64.b64encode(raw).decode()):
        out = one_line_or_ok(lambda image=image: load_image(image))
        if out is not None:
            assert out.mode == "RGB" and min(out.size) >= 1


@pytest.fixture(scope="module")
def vlm(tmp_path_factory):
    folder = make_random_checkpoint(
        "lavida-llada", tmp_path_factory.mktemp("fzv") / "m", layers=1, width=32
    )
    return seer.load(folder)


@fuzz(8)
@given(image=images())
def test_images_through_a_multimodal_model(vlm, image, tmp_path):
    if isinstance(image, io.BytesIO):
        path = tmp_path / "img"
        path.write_bytes(image.getvalue())
        image = str(path)
    one_line_or_ok(lambda: vlm.generate("what colour ?", image=image, gen_length=4, steps=2))


# -- sampling options -------------------------------------------------------------------------
OPTION_VALUES = {
    "gen_length": st.integers(-3, 600),
    "steps": st.none() | st.integers(-3, 70),
    "block_length": st.none() | st.integers(-3, 70),
    "temperature": st.floats(allow_nan=True) | st.integers(-2, 3),
    "remasking": st.none()
    | st.sampled_from(["low_confidence", "random", "entropy", "origin", "bogus"]),
    "alg_temp": st.none() | st.floats(),
    "top_p": st.none() | st.floats(),
    "top_k": st.none() | st.integers(-2, 10**6),
    "cfg_scale": st.floats(-1, 3) | st.just(float("nan")),
    "seed": st.none() | st.integers(-(2**70), 2**70),
    "cache": st.sampled_from(["none", "prefix", "dual", "prefix_lm", "full"]),
    "schedule": st.none() | st.sampled_from(["linear", "timestep", "shift", "cosine"]),
    "threshold": st.none() | st.floats(-1, 2),
    "factor": st.none() | st.floats(-1, 5),
    "stop": st.lists(st.lists(st.integers(-1, 400), max_size=3), max_size=2),
    "eps": st.floats(),
    "banned_ids": st.none() | st.lists(st.integers(-2, 400), max_size=3),
}
any_value = (
    st.none()
    | st.text(max_size=5)
    | st.lists(st.integers(), max_size=2)
    | st.floats()
    | st.integers()
)


@fuzz(60)
@given(
    options=st.dictionaries(st.sampled_from(sorted(OPTION_VALUES)), st.none(), max_size=5).flatmap(
        lambda d: st.fixed_dictionaries({k: OPTION_VALUES[k] | any_value for k in d})
    ),
    extra=st.dictionaries(st.text(max_size=6), any_value, max_size=1),
)
def test_sampling_options(lm, options, extra):
    options = {**options, **extra}
    options.setdefault("gen_length", 8)
    if isinstance(options["gen_length"], int) and options["gen_length"] > 64:
        options["gen_length"] = 64  # keep each example fast; over-context is covered above
    g = one_line_or_ok(lambda: lm.generate("hi", **options))
    if g is not None:
        assert len(g.token_ids) >= 1


# -- command lines ----------------------------------------------------------------------------
FLAGS = {
    "--gen-length": st.sampled_from(["4", "8", "0", "-1", "x", "1e3"]),
    "--steps": st.sampled_from(["1", "2", "4", "0", "3", "nan"]),
    "--block-length": st.sampled_from(["2", "4", "3", "0"]),
    "--temperature": st.sampled_from(["0", "1", "-1", "inf", "nan", "abc"]),
    "--top-p": st.sampled_from(["0.5", "0", "2"]),
    "--top-k": st.sampled_from(["1", "0", "99999999999"]),
    "--seed": st.sampled_from(["0", "-1", str(2**70), "x"]),
    "--remasking": st.sampled_from(["low_confidence", "entropy", "nope"]),
    "--cache": st.sampled_from(["prefix", "dual", "none", "x"]),
    "--seer-layer": st.sampled_from(["0", "1", "5", "-1"]),
    "--seer-signal": st.sampled_from(["sparsity", "eos_prob", "combined", "x"]),
    "--seer-theta": st.sampled_from(["0.001", "0", "1e400"]),
    "--seer-bucket": st.sampled_from(["1", "8", "0"]),
    "--stop": st.text(max_size=4),
    "--image": st.sampled_from(["missing.png", "data:image/png;base64,AAAA"]),
    "--dtype": st.sampled_from(["float32", "bfloat16", "int8"]),
    "--prompt": st.text(max_size=20) | st.binary(max_size=20).map(os.fsdecode),
}
SWITCHES = [
    "--seer",
    "--json",
    "--no-chat",
    "--no-generate",
    "--quiet",
    "--seer-guard",
    "--no-seer-guard",
]


@fuzz(40)
@given(data=st.data())
def test_command_lines(llada_dir, tmp_path, monkeypatch, capsys, data):
    monkeypatch.chdir(tmp_path)
    command = data.draw(st.sampled_from(["generate", "profile", "make-checkpoint", "nonsense"]))
    out = tmp_path / "out" / ("ck" if command == "make-checkpoint" else "p.png")
    argv = [command]
    if command != "make-checkpoint":
        argv += [
            "--model",
            data.draw(st.sampled_from([str(llada_dir), "builtin-missing", str(tmp_path)])),
        ]
        argv += ["--prompt", data.draw(FLAGS["--prompt"])]
    if command != "generate":
        argv += ["--out", str(out)]
    for flag in data.draw(st.lists(st.sampled_from(sorted(FLAGS)), max_size=4)):
        argv += [flag, data.draw(FLAGS[flag])]
    argv += data.draw(st.lists(st.sampled_from(SWITCHES), max_size=2))
    if command == "make-checkpoint":
        argv += ["--width", "16", "--layers", "1"]
    elif "--gen-length" not in argv:
        argv += ["--gen-length", "4"]
    before = {p for p in tmp_path.rglob("*")}

    from seer.cli import main

    rc = main(argv)
    err = capsys.readouterr().err
    assert rc in (0, 2), (argv, rc, err)
    if rc == 2:
        lines = [line for line in err.splitlines() if line.startswith("seer: error: ")]
        assert len(lines) == 1 and "Traceback" not in err, (argv, err)
    written = {p for p in tmp_path.rglob("*")} - before
    assert all(p == out or out in p.parents or p in out.parents for p in written), (argv, written)


# -- data files (seer batch, calibration) -----------------------------------------------------
row_values = st.none() | st.text(max_size=8) | st.integers() | st.floats() | st.booleans()
rows = st.lists(
    st.dictionaries(
        st.sampled_from(["id", "prompt", "messages", "image", "answer", "family", "x"]),
        row_values
        | st.lists(
            st.fixed_dictionaries(
                {
                    "role": st.sampled_from(["user", "system", "assistant", "bot"]),
                    "content": row_values,
                }
            ),
            max_size=2,
        ),
        max_size=4,
    ),
    max_size=4,
)


@fuzz(40)
@given(data=st.data())
def test_data_files(tmp_path, data):
    from seer.data import load_examples

    kind = data.draw(st.sampled_from(["jsonl", "csv", "bytes-jsonl", "bytes-csv"]))
    path = tmp_path / ("data." + kind.split("-")[-1])
    if kind == "jsonl":
        path.write_text("\n".join(json.dumps(r, allow_nan=True) for r in data.draw(rows)))
    elif kind == "csv":
        header = data.draw(
            st.lists(st.sampled_from(["id", "prompt", "answer", "image", "q"]), max_size=3)
        )
        lines = [",".join(header)] + [
            ",".join(data.draw(st.text(alphabet="ab,\"'\n 1", max_size=6)) for _ in header)
            for _ in range(3)
        ]
        path.write_text("\n".join(lines))
    else:
        path.write_bytes(data.draw(st.binary(max_size=120)))
    out = one_line_or_ok(lambda: load_examples(path))
    if out is not None:
        assert all(e.prompt or e.messages for e in out)
