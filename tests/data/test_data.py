"""seer.data: every format through one row parser, one-line errors naming file, line and field,
the built-in tasks as a source, and a de-duplicated, disjoint calibration / evaluation split."""

from __future__ import annotations

import base64
import io
import json
import random

import pytest
from PIL import Image

from seer.data import Example, builtin_examples, dedupe, load_examples, score, split
from seer.data.split import CALIB_FRACTION, CALIB_SEED
from seer.errors import SeerError
from seer.models.loader import builtin_path
from synthetic import pool, tasks
from synthetic.pool import TUNED_DRAW, tuned_keys


def _png(colour) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), colour).save(buf, format="PNG")
    return buf.getvalue()


def _uri(raw: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(raw).decode()


def _jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_jsonl_reads_every_field_in_file_order(tmp_path):
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "red.png").write_bytes(_png("red"))
    parts = [
        {"type": "text", "text": "what colour ?"},
        {"type": "image_url", "image_url": {"url": _uri(_png("blue"))}},
    ]
    chat = [{"role": "system", "content": "be brief"}, {"role": "user", "content": parts}]
    path = _jsonl(
        tmp_path / "d.jsonl",
        [
            {"prompt": "add 1 and 2", "answer": 3},
            "",  # blank lines are not rows
            {"id": "q7", "prompt": "what colour ?", "image": "img/red.png", "answer": "red"},
            {"messages": chat, "family": "vqa"},
        ],
    )
    a, b, c = load_examples(path)
    assert (a.id, a.prompt, a.answer, a.image, a.messages) == ("0", "add 1 and 2", "3", None, None)
    assert b.id == "q7" and b.image == str((tmp_path / "img" / "red.png").resolve())
    assert c.id == "2" and c.prompt == "what colour ?" and c.family == "vqa"
    assert c.messages[0] == {"role": "system", "content": "be brief"}
    assert c.image.startswith("data:image/png;base64,") and c.answer is None


@pytest.mark.parametrize(
    "line, field",
    [
        ('{"answer": "x"}', "prompt"),
        ('{"prompt": "  "}', "prompt"),
        ('{"prompt": ["a"]}', "prompt"),
        ('{"prompt": "a", "messages": [{"role": "user", "content": "a"}]}', "messages"),
        ('{"messages": [{"role": "assistant", "content": "a"}]}', "messages"),
        ('{"messages": [{"role": "robot", "content": "a"}]}', "messages"),
        ('{"prompt": "a", "image": "missing.png"}', "image"),
        ('{"prompt": "a", "image": "data:image/png;base64,@@@"}', "image"),
        ('{"prompt": "a", "image": "https://example.com/x.png"}', "image"),
        ('{"prompt": "a", "answer": {"x": 1}}', "answer"),
        ('{"prompt": "a", "id": ""}', "id"),
        ('{"prompt": "b", "id": "0"}', "id"),  # repeats the first row's id
    ],
)
def test_a_bad_line_names_file_line_and_field(tmp_path, line, field):
    path = _jsonl(tmp_path / "bad.jsonl", [{"prompt": "fine", "id": "0"}, "", line])
    with pytest.raises(SeerError) as e:
        load_examples(path)
    assert str(e.value).startswith(f"{path}:3: field {field!r}:"), str(e.value)
    assert "\n" not in str(e.value)


def test_malformed_json_and_non_objects_are_errors_not_skipped(tmp_path):
    with pytest.raises(SeerError, match=r"bad.jsonl:2: not valid JSON"):
        load_examples(_jsonl(tmp_path / "bad.jsonl", [{"prompt": "a"}, '{"prompt": "b"']))
    with pytest.raises(SeerError, match=r"bad.jsonl:1: a row must be a JSON object"):
        load_examples(_jsonl(tmp_path / "bad.jsonl", ['["a"]']))
    with pytest.raises(SeerError, match="no rows"):
        load_examples(_jsonl(tmp_path / "bad.jsonl", [""]))
    with pytest.raises(SeerError, match="does not exist"):
        load_examples(tmp_path / "nope.jsonl")
    with pytest.raises(SeerError, match="unknown data format"):
        load_examples(_jsonl(tmp_path / "d.txt", [{"prompt": "a"}]))


def test_csv_rows_messages_as_json_and_line_numbers_of_multiline_cells(tmp_path):
    path = tmp_path / "d.csv"
    chat = json.dumps([{"role": "user", "content": "hi"}]).replace('"', '""')
    path.write_text(f'id,prompt,messages,answer\na,"two\nlines",,x\nb,,"{chat}",\nc,,,y\n')
    with pytest.raises(SeerError, match=r"d.csv:5: field 'prompt': missing"):
        load_examples(path)
    path.write_text(path.read_text().replace("c,,,y", "c,three,,y"))
    ex = load_examples(path)
    assert [e.id for e in ex] == ["a", "b", "c"] and ex[0].prompt == "two\nlines"
    assert ex[1].messages == [{"role": "user", "content": "hi"}] and ex[1].answer is None
    (tmp_path / "h.csv").write_text("question,answer\nq,a\n")
    with pytest.raises(SeerError, match="header needs a 'prompt'"):
        load_examples(tmp_path / "h.csv")


def test_parquet_and_save_to_disk_through_datasets(tmp_path):
    datasets = pytest.importorskip("datasets")
    rows = {"id": ["x", "y"], "prompt": ["p1", "p2"], "answer": ["a1", None]}
    ds = datasets.Dataset.from_dict(rows)
    ds.to_parquet(str(tmp_path / "d.parquet"))
    ds.save_to_disk(str(tmp_path / "saved"))
    for src in (tmp_path / "d.parquet", tmp_path / "saved"):
        ex = load_examples(src)
        assert [(e.id, e.prompt, e.answer) for e in ex] == [("x", "p1", "a1"), ("y", "p2", None)]
    img = datasets.Dataset.from_dict(
        {"prompt": ["q"], "image": [Image.new("RGB", (4, 4), "red")]}
    ).cast_column("image", datasets.Image())
    img.to_parquet(str(tmp_path / "img.parquet"))
    (ex,) = load_examples(tmp_path / "img.parquet")
    assert ex.image.size == (4, 4)  # decoded by the Image feature; same pixels, same key
    assert ex.key == Example("0", "q", image=Image.new("RGB", (4, 4), "red")).key
    bad = datasets.Dataset.from_dict({"prompt": ["ok", ""]})
    bad.to_parquet(str(tmp_path / "bad.parquet"))
    with pytest.raises(SeerError, match=r"bad.parquet: row 1: field 'prompt'"):
        load_examples(tmp_path / "bad.parquet")


def test_key_is_text_plus_image_bytes(tmp_path):
    raw = _png("red")
    (tmp_path / "r.png").write_bytes(raw)
    by_path = Example("1", "q", image=str(tmp_path / "r.png"))
    assert by_path.key == Example("2", "q", image=_uri(raw)).key  # same bytes, other form
    assert by_path.key != Example("3", "q", image=_uri(_png("blue"))).key
    assert by_path.key != Example("4", "q").key != Example("5", "q2").key
    chat = [{"role": "user", "content": "q"}]
    assert Example("6", "q", messages=chat).key != Example("7", "q").key


def test_split_is_deduplicated_disjoint_and_stable():
    rng = random.Random(0)
    examples = [Example(str(i), f"prompt {rng.randrange(150)}") for i in range(400)]
    calib, evaluation = split(examples, 0.3, seed=5)
    unique = dedupe(examples)
    assert len(unique) < len(examples)  # the draw repeats prompts: the test has teeth
    keys_c, keys_e = [e.key for e in calib], [e.key for e in evaluation]
    assert len(set(keys_c)) == len(keys_c) and len(set(keys_e)) == len(keys_e)
    assert not set(keys_c) & set(keys_e)
    assert set(keys_c) | set(keys_e) == {e.key for e in unique}
    assert 0.15 < len(calib) / len(unique) < 0.45
    # a row's side depends on itself only: a smaller draw splits the same way
    small_c, small_e = split(examples[:60], 0.3, seed=5)
    assert {e.key for e in small_c} <= set(keys_c) and {e.key for e in small_e} <= set(keys_e)
    assert [e.key for e in split(examples, 0.3, seed=6)[0]] != keys_c
    with pytest.raises(SeerError, match="calib_fraction"):
        split(examples, 1.0)
    with pytest.raises(SeerError, match="empty"):
        split(examples[:1], 0.5)


@pytest.mark.parametrize("source", ["builtin-v1", "builtin-vqa-v1"])
def test_builtin_sources_are_unique_and_prefix_stable(source):
    ex = load_examples(source, n=80)
    assert len({e.key for e in ex}) == 80 and [e.id for e in ex] == [str(i) for i in range(80)]
    assert [e.key for e in load_examples(source, n=30)] == [e.key for e in ex[:30]]
    assert all(e.answer and e.family for e in ex)
    if source == "builtin-vqa-v1":
        assert all(e.image is not None and "<image>" not in e.prompt for e in ex)
    else:
        assert all(tasks.is_heldout(e.prompt) for e in ex)  # never a training prompt


def test_builtin_heldout_is_disjoint_from_training_and_calibration():
    """Issue 12: the old held-out draw (seed 11) held 239 unique prompts of 300 and shared 53
    with the calibration draw (seed 7). The evaluation part is unique, never on the calibration
    side (whatever the draw's size or seed), never in the shipped models' tuning draw, and never
    a training prompt."""
    old = tasks.generate_examples(300, 11, "heldout")
    assert len({e.prompt for e in old}) == 239  # the finding this replaces
    evaluation = pool.examples("builtin-v1", 300, seed=11, part="eval")  # another draw
    calib = pool.examples("builtin-v1", 300, seed=7, part="calib")
    ev, ca = {e.key for e in evaluation}, {e.key for e in calib}
    assert len(ev) == 300 and len(ca) == 300 and not ev & ca
    assert not ev & tuned_keys("text")
    n, seed = TUNED_DRAW
    tuned_prompts = {e.prompt for e in tasks.generate_examples(n, seed, "heldout")}
    assert not tuned_prompts & {e.prompt for e in evaluation}
    train = {e.prompt for e in tasks.generate_examples(3000, 0, "train")}
    assert not train & {e.prompt for e in evaluation}
    with pytest.raises(SeerError, match="part"):
        builtin_examples("builtin-v1", 5, part="test")
    with pytest.raises(SeerError, match="ships one draw"):
        load_examples("builtin-v1", n=5, seed=11)
    with pytest.raises(SeerError, match="unknown data format|does not exist"):
        load_examples("builtin-audio")


def test_builtin_vqa_eval_excludes_calibration_and_tuning():
    """The first VQA model's task leaves out its seer.json's tuning draw; the v2 model's
    (builtin-vqa) was calibrated on its calibration side, which the evaluation side never holds."""
    for source, tuned in (("builtin-vqa-v1", tuned_keys("vqa")), ("builtin-vqa", frozenset())):
        evaluation = load_examples(source, n=60, part="eval")
        calib = pool.examples(source, 60, seed=3, part="calib")
        assert not {e.key for e in evaluation} & {e.key for e in calib}
        assert not {e.key for e in evaluation} & tuned
    calibration = json.loads((builtin_path("builtin-vqa") / "seer.json").read_text())["calibration"]
    assert (calibration["data"], calibration["split_seed"], calibration["calib_fraction"]) == (
        "builtin-vqa",
        CALIB_SEED,
        CALIB_FRACTION,
    )  # the split the evaluation side is disjoint from


def test_each_builtin_model_names_its_own_task():
    """`builtin` / `builtin-vqa` are the v2 models' tasks (also named builtin-v2 / builtin-vqa2),
    `builtin-v1` / `builtin-vqa-v1` the first ones'; a benchmark's default source is the model's
    own task, and builtin-vqa, which answers about pictures only, has no text-only one."""
    from seer.data.builtin import SOURCES, source_for

    assert SOURCES["builtin"] == SOURCES["builtin-v2"] == "lines"
    assert SOURCES["builtin-vqa"] == SOURCES["builtin-vqa2"] == "vqa2"
    assert (SOURCES["builtin-v1"], SOURCES["builtin-vqa-v1"]) == ("text", "vqa")
    for alias, name in (("builtin-vqa2", "builtin-vqa"), ("builtin-v2", "builtin")):
        assert [e.key for e in load_examples(alias, n=5)] == [
            e.key for e in load_examples(name, n=5)
        ]
    assert source_for("builtin-vqa", True) == "builtin-vqa"
    assert source_for("builtin-vqa-v1", True) == "builtin-vqa-v1"
    assert source_for("builtin-vqa-v1", False) == "builtin-v1"  # the tasks its LM learned
    for name in ("builtin", "builtin-v1"):
        assert source_for(name, False) == name
    assert source_for("/a/model", True) == "builtin-vqa"  # the shipped image task
    assert source_for("/a/model", False) == "builtin"
    with pytest.raises(SeerError, match="builtin-vqa answers questions about pictures only"):
        source_for("builtin-vqa", False)


@pytest.mark.parametrize("source", ["builtin", "builtin-vqa"])
def test_v2_sources_are_held_out_and_carry_their_metric(source):
    """The v2 models' tasks: every family, unique held-out requests (never a training request:
    the generators' hash split), each with the metric its trainer scores it by, so
    `seer.data.score` accepts the reference and a different valid answer where one exists."""
    from synthetic import lines, vqa2

    module = lines if source == "builtin" else vqa2
    ex = load_examples(source, n=3 * len(module.FAMILIES))
    assert {e.family for e in ex} == set(module.FAMILIES) and len({e.key for e in ex}) == len(ex)
    assert [e.key for e in load_examples(source, n=10)] == [e.key for e in ex[:10]]
    assert all(score(e, e.answer) == 1.0 for e in ex)
    own = lines.METRICS if source == "builtin" else dict.fromkeys(vqa2.FAMILIES, "any")
    assert all((e.metric is not None) == (e.family in own) for e in ex)
    if source == "builtin":  # the whole chat, and in the held-out split by its hash
        assert all(e.messages[-1]["content"] == e.prompt for e in ex)
        rng = random.Random(0)
        train = {
            lines.generate_example(f, rng, "train").text for f in lines.FAMILIES for _ in range(30)
        }
        assert not train & {json.dumps(e.messages, sort_keys=True) for e in ex}
        shuffle = next(e for e in ex if e.family == "shuffle")
        people = shuffle.reference["input"]
        assert score(shuffle, lines.list_str(people[1:] + people[:1])) == 1.0
    else:
        assert all(e.image is not None for e in ex)
        listing = next(e for e in ex if e.family == "list")
        assert score(listing, ", ".join(reversed(listing.reference))) == 1.0
    evaluation = load_examples(source, n=20, part="eval")
    calib = load_examples(source, n=20, part="calib")
    assert not {e.key for e in evaluation} & {e.key for e in calib}
