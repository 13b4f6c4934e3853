"""seer.sim: the released models' shapes, the roofline per path, the simulated engine on the real
scheduler, and `seer simulate` (CPU, no weights, a few seconds)."""

from __future__ import annotations

import json

import pytest

from seer.cli import main
from seer.engine.config import EngineConfig
from seer.errors import SeerError
from seer.roofline import cost
from seer.roofline.hardware import Efficiency
from seer.sim import builtin_shapes, gpu, load_shape, trace, validation
from seer.sim.engine import SimEngine, SimResult
from seer.sim.trace import Decoding, SimRequest

EFF = Efficiency(0.5, 0.5)


def test_the_builtin_shapes_are_the_released_configs():
    s = builtin_shapes()
    llada = s["llada-8b"]
    assert (llada.hidden, llada.layers, llada.intermediate) == (4096, 32, 12288)
    assert 7e9 < llada.params < 9e9  # an 8 B model
    assert s["dream-7b"].kv_dim == 512  # 4 of 28 heads of 128: grouped-query attention
    assert s["lavida-llada"].image_tokens == 980 and s["lavida-llada"].vision_flops > 0
    assert s["llada-v"].image_tokens == 5 * 729
    assert s["mmada-8b"].image_tokens == 1024 and s["mmada-8b"].vocab == 134656


def test_a_model_folder_is_read_from_its_config(tmp_path):
    from seer.models.configs import DREAM_7B

    (tmp_path / "config.json").write_text(json.dumps(DREAM_7B))
    assert load_shape(str(tmp_path)).params == builtin_shapes()["dream-7b"].params
    with pytest.raises(SeerError, match="no config.json"):
        load_shape(str(tmp_path / "missing"))
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "config.json").write_text("{}")
    with pytest.raises(SeerError, match="config.json has none of"):
        load_shape(str(tmp_path / "bad"))
    for junk in ("4096x", -4096, 0.5, None):  # a size that is not one: one line, no traceback
        (tmp_path / "bad" / "config.json").write_text(json.dumps(dict(DREAM_7B, hidden_size=junk)))
        with pytest.raises(SeerError, match="hidden_size"):
            load_shape(str(tmp_path / "bad"))


def test_the_roofline_is_weight_bound_at_batch_1_and_compute_bound_at_batch_256():
    shape, hw = builtin_shapes()["llada-8b"], gpu("h100")
    one, many = cost.Work(), cost.Work()
    one.add(64, 64, 32)
    for _ in range(256):
        many.add(512, 512, 256)
    assert cost.bound(shape, hw, EFF, one) == "memory"
    assert cost.bound(shape, hw, EFF, many) == "compute"
    # a graph replay starts a forward faster than the host's kernel launches
    assert cost.seconds(shape, hw, EFF, one, "static") < cost.seconds(shape, hw, EFF, one, "eager")
    with pytest.raises(SeerError, match="unknown gpu"):
        gpu("b200")


def _run(method: str, routing: str = "hybrid", batch: int = 16, n: int = 48, gen: int = 256):
    reqs = trace.builtin("docvqa", n=n).requests
    shape = builtin_shapes()["llada-8b"]
    cfg = EngineConfig(max_batch=batch, routing=routing)
    return SimEngine(shape, gpu("h100"), EFF, cfg, Decoding(gen_length=gen)).run(reqs, method)


def test_every_request_is_answered_and_seer_cuts_the_work():
    base, seer = _run("baseline"), _run("seer")
    assert len(base.latencies) == len(seer.latencies) == 48
    assert base.answer_tokens == seer.answer_tokens > 0
    assert seer.computed < base.computed / 4  # answers of a few tokens in a 256 window
    assert seer.throughput > 2 * base.throughput
    assert base.paths == {"static": base.decode_forwards}  # uniform full windows: no padding


def test_hybrid_routing_is_the_real_router_and_naive_pads_to_the_longest():
    # twelve short answers and four long ones of spread lengths: the long group wastes > tau_pad
    reqs = [SimRequest(40, 5)] * 12 + [SimRequest(40, a) for a in (60, 90, 150, 230)]
    # bucket groups kept apart (merge_on none: no cost-aware merge, see the test below)
    shape, cfg = builtin_shapes()["llada-8b"], EngineConfig(max_batch=16, merge_on="none")
    hybrid = SimEngine(shape, gpu("h100"), EFF, cfg, Decoding()).run(reqs, "seer")
    naive_cfg = EngineConfig(max_batch=16, routing="naive")
    naive = SimEngine(shape, gpu("h100"), EFF, naive_cfg, Decoding()).run(reqs, "seer")
    assert set(naive.paths) == {"static"} and "varlen" in hybrid.paths
    assert naive.rows_per_forward > hybrid.rows_per_forward  # hybrid splits groups by bucket
    assert hybrid.computed < naive.computed  # no row padded to the longest window
    assert hybrid.latency(0.5) < naive.latency(0.5) / 2  # short answers are not held back


def test_merge_on_auto_prices_merges_on_the_simulated_gpu_as_the_simulated_model():
    """The simulator's "auto" (the default) is the engine's on the simulated GPU: the same run
    as naming that GPU (the simulated model's shape). On the spread windows above, few rows of
    LLaDA-8B are memory-bound on an H100, so it merges the bucket groups (fewer forwards and
    predicted seconds than with merging off); an A100 reaches its compute roof at fewer FLOPs
    per byte, so there the merges are predicted to cost more and auto keeps the groups apart."""
    reqs = [SimRequest(40, 5)] * 12 + [SimRequest(40, a) for a in (60, 90, 150, 230)]
    shape = builtin_shapes()["llada-8b"]

    def run(hw: str, merge_on: str | None) -> SimResult:
        kw = {} if merge_on is None else {"merge_on": merge_on}
        cfg = EngineConfig(max_batch=16, **kw)
        return SimEngine(shape, gpu(hw), EFF, cfg, Decoding()).run(reqs, "seer")

    assert EngineConfig().merge_on == "auto"
    auto = {hw: run(hw, None) for hw in ("h100", "a100")}
    for hw, r in auto.items():
        assert r == run(hw, hw)
    off = run("h100", "none")
    assert auto["h100"].decode_forwards < off.decode_forwards and auto["h100"].seconds < off.seconds
    a100 = auto["a100"].decode_forwards
    assert a100 == run("a100", "none").decode_forwards > auto["h100"].decode_forwards


def test_full_logits_price_the_output_layer_on_every_computed_position():
    # the released samplers run `model(x).logits`: the head over prompt and window, not only the
    # window; with a 900-position prompt that is ~7 % more compute for LLaDA-8B at batch 1
    reqs, shape = [SimRequest(900, 120)] * 2, builtin_shapes()["llada-8b"]
    cfg = EngineConfig(max_batch=1)

    def flops(full: bool) -> float:
        sim = SimEngine(shape, gpu("a100"), EFF, cfg, Decoding(full_logits=full))
        sim.ledger = []
        sim.run(reqs, "baseline")
        return sum(f for f, _, _ in sim.ledger)

    head = 2 * shape.hidden * shape.vocab * 900  # per forward, over the prompt's positions
    assert flops(True) - flops(False) == pytest.approx(2 * 256 * head, rel=1e-9)


def test_a_measured_window_and_nfe_are_used_as_measured():
    r = SimRequest(100, 20, measured={"seer": (24, 7)})
    assert trace.plan(r, "seer", Decoding(gen_length=128)) == (24, 7)
    assert trace.plan(r, "baseline", Decoding(gen_length=128)) == (128, 128)
    # Seer's rule: the answer rounded up to the bucket, step 0 at the full window, 1 token/step
    assert trace.plan(SimRequest(10, 13), "seer", Decoding(gen_length=128)) == (16, 17)
    with pytest.raises(SeerError, match="must divide"):
        Decoding(gen_length=100, tokens_per_step=3)


def test_a_trace_file_of_rows_and_bad_trace_files(tmp_path):
    good = tmp_path / "t.jsonl"
    good.write_text('{"prompt_tokens": 10, "answer_tokens": 5, "arrival": 1.5}\n')
    t = trace.load(str(good))
    assert (t.requests[0].prompt, t.requests[0].answer, t.requests[0].arrival) == (10, 5, 1.5)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt_tokens": "x", "answer_tokens": 5}\n')
    with pytest.raises(SeerError, match="line 1"):
        trace.load(str(bad))
    with pytest.raises(SeerError, match="not one of"):
        trace.load("no-such-trace")


@pytest.mark.parametrize(
    "rows",
    [
        ['{"prompt_tokens": -5, "answer_tokens": 3}'],  # negative sizes
        ['{"prompt_tokens": 5, "answer_tokens": 3, "arrival": -1}'],
        ['{"prompt_tokens": 5, "answer_tokens": 3}', '{"prompt_tokens": 5}'],  # not dropped
        ["[5, 3]"],
        # a compare record's row without the prompt's length or the run's window
        [
            '{"settings": {"gen_length": 128}, "results": {"seer@k=1": {"tokens": 3, "window": 8, '
            '"nfe": 9}}}'
        ],
        [
            '{"settings": {}, "results": {"seer@k=1": {"tokens": 3, "window": 8, "nfe": 9, '
            '"prompt_tokens": 20}}}'
        ],
    ],
)
def test_a_trace_row_that_would_be_read_wrong_is_refused(tmp_path, rows):
    f = tmp_path / "t.jsonl"
    f.write_text("\n".join(rows) + "\n")
    with pytest.raises(SeerError, match="line"):
        trace.load(str(f))


def test_a_compare_record_s_timing_rows_are_skipped(tmp_path):
    f = tmp_path / "raw.jsonl"
    row = {
        "settings": {"gen_length": 128},
        "results": {"baseline@k=1": {"tokens": 3, "window": 128, "nfe": 128, "prompt_tokens": 20}},
    }
    f.write_text(json.dumps(row) + "\n" + json.dumps({"settings": {}, "wall": 1.0}) + "\n")
    t = trace.load(str(f))
    assert t.gen_length == 128 and [(r.prompt, r.answer) for r in t.requests] == [(20, 3)]
    assert t.requests[0].measured == {"baseline": (128, 128)}


def test_arrivals_wait_on_the_virtual_clock():
    reqs = [SimRequest(50, 10, arrival=0.0), SimRequest(50, 10, arrival=100.0)]
    cfg = EngineConfig(max_batch=4)
    res = SimEngine(
        builtin_shapes()["llada-8b"], gpu("a100"), EFF, cfg, Decoding(gen_length=64)
    ).run(reqs, "baseline")
    assert res.seconds > 100.0  # the second request cannot finish before it arrives
    assert max(res.latencies) < 100.0  # latency counts from its step 0, not the idle gap


def test_a_second_run_replays_the_graphs_the_first_captured():
    reqs = [SimRequest(40, 5)] * 8
    shape, cfg = builtin_shapes()["llada-8b"], EngineConfig(max_batch=8)
    sim = SimEngine(shape, gpu("h100"), EFF, cfg, Decoding(gen_length=64))
    cold = sim.run(reqs, "seer")
    warm = sim.run(reqs, "seer")
    assert cold.captures > 0 and warm.captures == 0  # the engine's GraphCache keeps its graphs
    assert warm.seconds < cold.seconds


def test_the_table_says_how_requests_arrive(tmp_path, capsys):
    f = tmp_path / "t.jsonl"
    f.write_text(
        '{"prompt_tokens": 10, "answer_tokens": 5, "arrival": 0}\n'
        '{"prompt_tokens": 10, "answer_tokens": 5, "arrival": 2.5}\n'
    )
    assert main(["simulate", "--trace", str(f), "--batches", "1", "--gen-length", "32"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "arrives at once" not in head and "arrive at the trace's times" in head


def test_seer_simulate_prints_a_predicted_table_with_its_validation_error(capsys):
    argv = [
        "simulate",
        "--model",
        "lavida-llada",
        "--gpu",
        "h100",
        "--trace",
        "chartqa",
        "--batches",
        "1",
        "16",
        "--gen-length",
        "64",
        "--json",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("PREDICTED, not measured")
    err = f"{validation()['median_abs_error_held_out']:.0%}"
    assert err in out[0] and f"(median error {err}, not a bound)" in out[2]
    record = json.loads(out[-1])
    assert {(r["batch"], r["method"], r["routing"]) for r in record["rows"]} == {
        (b, m, r) for b in (1, 16) for m in trace.METHODS for r in ("hybrid", "naive")
    }


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--gpu", "b200"], "unknown gpu"),
        (["--model", "/no/such/folder"], "no config.json"),
        (["--trace", "nope"], "not one of"),
        (["--cache", "paged"], "unknown cache"),
        (["--batches", "-1"], "must be >= 1"),
        (["--threshold-tokens", "nan"], "threshold_tokens"),
    ],
)
def test_seer_simulate_bad_inputs_are_one_line(capsys, argv, words):
    assert main(["simulate", *argv, "--batches", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0] and "Traceback" not in err[0]
