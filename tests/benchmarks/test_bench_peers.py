"""benchmarks/bench_peers.py and benchmarks/dlmserve_launch.py: the model folder exported with the
official modeling files, the launcher's one change to dlmserve (its loader: float32, the
tokenizer's mask id), and the summary (ratios, percentiles, accuracy beside the baseline's,
answers equal to the engine's solo answers). None of this needs dlmserve installed: the
launcher is tested on stand-in modules."""

from __future__ import annotations

import json
import re
import types

import pytest
from conftest import benchmark

from seer.models.loader import builtin_path


def test_a_missing_modeling_folder_gets_one_line(tmp_path):
    with benchmark("bench_peers") as bp:
        with pytest.raises(SystemExit, match="--llada-code DIR is required"):
            bp.check_llada_code(None)
        (tmp_path / "modeling_llada.py").write_text("")
        with pytest.raises(SystemExit, match="no configuration_llada.py there"):
            bp.check_llada_code(tmp_path)
        (tmp_path / "configuration_llada.py").write_text("")
        assert bp.check_llada_code(tmp_path) == tmp_path


def test_export_copies_the_model_and_the_modeling_files(tmp_path):
    code = tmp_path / "code"
    code.mkdir()
    for name in ("modeling_llada.py", "configuration_llada.py"):
        (code / name).write_text(f"# {name}\n")
    with benchmark("bench_peers") as bp:
        out = bp.export_llada(builtin_path("builtin"), code, tmp_path / "llada")
        names = {p.name for p in out.iterdir()}
        assert {
            "config.json",
            "model.safetensors",
            "tokenizer.json",
            "modeling_llada.py",
            "configuration_llada.py",
        } <= names
        assert (out / "model.safetensors").read_bytes() == (
            builtin_path("builtin") / "model.safetensors"
        ).read_bytes()
        other = tmp_path / "other"
        other.mkdir()
        (other / "config.json").write_text(json.dumps({"model_type": "dream"}))
        with pytest.raises(SystemExit, match="not a LLaDA-layout model"):
            bp.export_llada(other, code, tmp_path / "x")


class _Tokenizer:
    padding_side = "right"
    pad_token_id = 1
    unk_token_id = 7

    def __init__(self, vocab):
        self.vocab = vocab

    def convert_tokens_to_ids(self, token):
        return self.vocab.get(token, self.unk_token_id)


def _stand_in_dlmserve(vocab):
    """Modules shaped like dlmserve 0.1.1's models.llada and engine (the names the launcher
    uses), with a loader that records its calls."""
    calls = []

    class Model:
        def __init__(self, dtype):
            self.dtype = dtype
            self.evaluated = False

        def to(self, device):
            self.device = device
            return self

        def eval(self):
            self.evaluated = True

        def parameters(self):
            return iter([types.SimpleNamespace(device="cpu")])

    def original(model_id, dtype, device):
        calls.append(("original", dtype))
        return "dlmserve's own"

    llada = types.SimpleNamespace(
        DEFAULT_MODEL_ID="gsai-ml/LLaDA-8B-Instruct",
        MASK_TOKEN="<|mdm_mask|>",
        load_llada=original,
        torch=types.SimpleNamespace(float32="float32"),
        AutoTokenizer=types.SimpleNamespace(from_pretrained=lambda *a, **k: _Tokenizer(vocab)),
        AutoModel=types.SimpleNamespace(
            from_pretrained=lambda *a, torch_dtype, **k: Model(torch_dtype)
        ),
        LoadedLLaDA=lambda **kw: types.SimpleNamespace(**kw),
    )
    engine = types.SimpleNamespace(load_llada=original)
    return llada, engine, calls


def test_the_launcher_loads_float32_with_the_tokenizer_s_mask_id():
    with benchmark("dlmserve_launch") as launch:
        llada, engine, calls = _stand_in_dlmserve({"<|mdm_mask|>": 2})
        launch.patch(llada, engine)
        loaded = engine.load_llada(model_id="/m", dtype="float32", device="cpu")
        assert loaded.mask_id == 2  # not LLaDA-8B's 126336
        assert loaded.model.dtype == "float32" and loaded.model.evaluated
        assert loaded.tokenizer.padding_side == "left" and loaded.dtype == "float32"
        assert calls == []
        # every other dtype is dlmserve's own loader, unchanged
        assert engine.load_llada(model_id="/m", dtype="bf16", device="cpu") == "dlmserve's own"
        assert calls == [("original", "bf16")]


def test_the_launcher_refuses_a_tokenizer_without_the_mask_token():
    with benchmark("dlmserve_launch") as launch:
        llada, engine, _ = _stand_in_dlmserve({})
        launch.patch(llada, engine)
        with pytest.raises(SystemExit, match=re.escape("no '<|mdm_mask|>' token")):
            engine.load_llada(model_id="/m", dtype="float32", device="cpu")
        llada, engine, _ = _stand_in_dlmserve({"<|mdm_mask|>": 1})  # the pad token's id
        launch.patch(llada, engine)
        with pytest.raises(RuntimeError, match="equals mask id"):
            engine.load_llada(model_id="/m", dtype="float32", device="cpu")


def _recs(texts, scores, latencies):
    rows = zip(texts, scores, latencies, strict=True)
    return [
        {
            "i": i,
            "id": f"r{i}",
            "status": 200,
            "text": t,
            "score": s,
            "latency_s": lat,
            "completion_tokens": 3,
        }
        for i, (t, s, lat) in enumerate(rows)
    ]


def test_percentile_is_nearest_rank():
    with benchmark("bench_peers") as bp:
        xs = [float(x) for x in range(1, 101)]
        assert (bp.percentile(xs, 0.5), bp.percentile(xs, 0.9), bp.percentile(xs, 0.99)) == (
            51.0,
            90.0,
            99.0,
        )
        assert bp.percentile([], 0.5) is None and bp.percentile([3.0], 0.99) == 3.0


def test_summary_ratios_accuracy_and_solo_equal_answers():
    with benchmark("bench_peers") as bp:
        a, b = ["x", "y", "z", "w"], [1.0, 1.0, 0.0, 1.0]
        lat = [1.0, 2.0, 3.0, 4.0]
        points = {
            ("seer-equal", 1): (_recs(a, b, lat), 8.0),
            ("seer-equal", 16): (_recs(a, b, lat), 2.0),
            ("dlmserve-default", 1): (_recs(a, b, lat), 10.0),
            # batched: two answers differ from the solo ones, one lost
            ("dlmserve-default", 16): (
                _recs(["x", "q", "q", "w"], [1.0, 0.0, 0.0, 1.0], lat)[:3]
                + [{"i": 3, "id": "r3", "status": 500, "error": "boom", "latency_s": 9.0}],
                5.0,
            ),
            ("dlmserve-localleap", 1): (_recs(a, [0.0, 0.0, 1.0, 0.0], lat), 1.0),
        }
        res = bp.summarise(points, margin=3.0)
        by = {(r["config"], r["concurrency"]): r for r in res["rows"]}
        assert res["ratios"]["equal work"] == {"1": round(0.5 / 0.4, 3), "16": round(2.0 / 0.6, 3)}
        assert res["primary"] == res["ratios"]["equal work"]["16"]
        d16 = by[("dlmserve-default", 16)]
        assert (d16["answered"], d16["lost"], d16["solo_equal"]) == (3, 1, 1)
        assert d16["accuracy"] == round(1 / 3, 4) and d16["baseline_accuracy"] == 0.75
        assert d16["noninferior"] is False and d16["baseline"] == "dlmserve-default@c=1"
        s16 = by[("seer-equal", 16)]
        assert s16["solo_equal"] == 4 and s16["noninferior"] is True
        assert (s16["p50_s"], s16["p90_s"], s16["p99_s"]) == (3.0, 4.0, 4.0)
        assert "noninferior" not in by[("seer-equal", 1)]  # the baseline itself
        assert res["seer_equal_vs_dlmserve_default"] == {"1": 4, "16": 1}
        assert not by[("seer-equal", 1)]["near_floor"] and not d16["near_floor"]  # 33 %
        leap = by[("dlmserve-localleap", 1)]
        assert leap["near_floor"] and leap["accuracy"] == 0.25  # below 30 %
        assert leap["baseline_accuracy"] == 0.75 and "fastest" not in res["ratios"]


def test_each_missing_prerequisite_gets_its_own_line(tmp_path, monkeypatch):
    monkeypatch.delenv("DLMSERVE_PYTHON", raising=False)
    with benchmark("bench_peers") as bp:
        with pytest.raises(SystemExit) as e:
            bp.main([])  # a clean command line: neither the modeling files nor dlmserve
        lines = str(e.value).splitlines()
        assert len(lines) == 2
        assert "--llada-code DIR is required" in lines[0]
        assert "--dlmserve-python PATH is required" in lines[1] and "dlmserve==0.1.1" in lines[1]
        for name in ("modeling_llada.py", "configuration_llada.py"):
            (tmp_path / name).write_text("")
        with pytest.raises(SystemExit) as e:
            bp.main(["--llada-code", str(tmp_path), "--dlmserve-python", str(tmp_path / "nope")])
        assert len(str(e.value).splitlines()) == 1 and "No such file" in str(e.value)


def test_a_python_without_dlmserve_gets_one_line(tmp_path):
    import sys

    with benchmark("bench_peers") as bp:
        try:  # the test environment is Seer's, which does not hold dlmserve
            import dlmserve  # noqa: F401

            pytest.skip("dlmserve is installed here")
        except ImportError:
            pass
        with pytest.raises(SystemExit) as e:
            bp.preflight(sys.executable)
        msg = str(e.value)
        assert len(msg.splitlines()) == 1 and "cannot import dlmserve" in msg
        assert "No module named 'dlmserve'" in msg


def test_rounds_split_the_requests_and_the_engines_take_turns():
    with benchmark("bench_peers") as bp:
        parts = bp.split(list(range(10)), 4)
        assert [len(p) for _, p in parts] == [3, 3, 2, 2]
        assert [o for o, _ in parts] == [0, 3, 6, 8]
        assert sum((p for _, p in parts), []) == list(range(10))
        assert len(bp.split([1, 2], 5)) == 2  # never an empty round
        assert bp.engine_order(0) == ("seer", "dlmserve")
        assert bp.engine_order(1) == ("dlmserve", "seer") and bp.engine_order(2) == bp.engine_order(
            0
        )


def test_the_budget_lets_a_round_start_only_if_it_can_end_in_time():
    with benchmark("bench_peers") as bp:
        assert bp.round_fits(0, 1e9, 1e9, 1.0)  # the first round always runs
        assert bp.round_fits(1, 30.0, 30.0, 1.0) and not bp.round_fits(1, 31.0, 30.0, 1.0)
        assert bp.round_fits(3, 1e9, 1e9, None)


def test_the_load_is_read_from_the_machine():
    with benchmark("bench_peers") as bp:
        la = bp.loadavg()
        assert la is None or (len(la) == 3 and all(x >= 0 for x in la))
        rows = bp.busy(min_cpu=0.0)
        assert isinstance(rows, list) and all(re.match(r"\d+(\.\d+)?% \S", r) for r in rows)


def test_resume_reads_back_the_rounds_every_raw_file_holds(tmp_path):
    with benchmark("bench_peers") as bp:
        parts = bp.split(list("abcdefgh"), 4)  # requests 0-1, 2-3, 4-5, 6-7
        recs = [{"i": i, "status": 200, "text": "t", "latency_s": 1.0} for i in range(8)]
        assert bp.rounds_done(recs[:4], parts) == 2 and bp.rounds_done(recs, parts) == 4
        assert bp.rounds_done([], parts) == 0
        assert bp.rounds_done(recs[:3], parts) is None  # not whole rounds
        assert bp.rounds_done(recs[2:4], parts) is None  # not a prefix
        keys = [("seer-equal", 1), ("dlmserve-default", 1)]
        for cfg, _ in keys:
            bp.save_point(
                tmp_path / f"{cfg}-c1.jsonl",
                recs[:4],
                5.0,
                {"config": cfg, "concurrency": 1, "n": 8},
            )
        k, got = bp.resume(tmp_path, keys, parts, 8)
        assert k == 2 and got[("seer-equal", 1)] == [recs[:4], 5.0]
        bp.save_point(
            tmp_path / "dlmserve-default-c1.jsonl",
            recs[:6],
            7.0,
            {"config": "dlmserve-default", "concurrency": 1, "n": 8},
        )
        with pytest.raises(SystemExit, match=re.escape("different numbers of rounds ([2, 3])")):
            bp.resume(tmp_path, keys, parts, 8)
        with pytest.raises(SystemExit, match="other requests than this run's rounds"):
            bp.resume(tmp_path, keys, bp.split(list("abcdefgh"), 3), 8)
        assert bp.resume(tmp_path / "empty", keys, parts, 8) == (0, {})


def test_a_bad_model_or_request_set_gets_one_line_before_dlmserve_is_asked(tmp_path):
    for name in ("modeling_llada.py", "configuration_llada.py"):
        (tmp_path / name).write_text("")
    base = ["--llada-code", str(tmp_path), "--dlmserve-python", str(tmp_path / "nope")]
    with benchmark("bench_peers") as bp:
        with pytest.raises(SystemExit) as e:
            bp.main([*base, "--data", str(tmp_path / "missing.jsonl")])
        assert len(str(e.value).splitlines()) == 1 and "does not exist" in str(e.value)
        with pytest.raises(SystemExit) as e:
            bp.main([*base, "--model", str(tmp_path / "missing")])
        assert len(str(e.value).splitlines()) == 1 and "has no config.json" in str(e.value)
