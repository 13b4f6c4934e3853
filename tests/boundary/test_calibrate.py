"""Calibration: the step-0 profiles come from the canvas `generate` denoises (images spliced),
the dataset is split into disjoint, de-duplicated sides, the choice cuts no calibration answer
short and is reported on the other side, and seer.json keeps the keys it does not set."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

import seer
from seer.boundary.probe import end_probability
from seer.calibrate import run_calibration, sweep, write_defaults
from seer.data import builtin_examples
from seer.errors import SeerError
from seer.models.factory import make_random_checkpoint
from seer.sampling import SamplingParams


@pytest.fixture(scope="module")
def lavida_dir(tmp_path_factory):
    folder = make_random_checkpoint("lavida-llada", tmp_path_factory.mktemp("lv"), layers=4)
    (folder / "seer.json").write_text(json.dumps({"system_prompt": None}))
    return folder


@pytest.fixture(scope="module")
def lavida(lavida_dir):
    return seer.load(lavida_dir)


def test_collect_measures_the_spliced_image_canvas(lavida):
    g = 16
    ex = builtin_examples("builtin-vqa", 3, seed=0)
    samples = sweep.collect(lavida, ex, g, batch=2)
    assert [s.family for s in samples] == [e.family for e in ex]
    n_layers = len(lavida.model.layers)
    for s in samples:
        assert s.sparsity.shape == (2, n_layers, len(sweep.THETAS), g)
        assert s.end_prob.shape == (g,) and 0 <= s.true_len <= g
    # one request alone: the same answer and step-0 P(end) as generate / canvas with its image
    (one,) = sweep.collect(lavida, ex[:1], g, batch=1)
    gen = lavida.generate(ex[0].prompt, image=ex[0].image, gen_length=g)
    assert one.true_len == gen.stats.tokens
    p = SamplingParams(gen_length=g, remasking="low_confidence")
    logits = lavida.loop.forward(lavida.canvas(ex[0].prompt, p, ex[0].image), p, 0, g)
    assert torch.allclose(one.end_prob, end_probability(logits, lavida.tokens.enders)[0])
    # and the image matters: another picture gives another profile
    (other,) = sweep.collect(lavida, [replace(ex[0], image=ex[1].image)], g)
    assert not torch.allclose(one.end_prob, other.end_prob)


def test_write_defaults_keeps_other_keys(tmp_path):
    (tmp_path / "seer.json").write_text(json.dumps({"system_prompt": None, "config": {"x": 1}}))
    write_defaults(tmp_path, 32, {"signal": "eos_prob"}, {"signal": "sparsity"}, {"n": 3})
    meta = json.loads((tmp_path / "seer.json").read_text())
    assert meta["system_prompt"] is None and meta["config"] == {"signal": "eos_prob"}
    assert meta["gen_length"] == 32 and meta["calibration"] == {"n": 3}
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    write_defaults(fresh, 8, {}, {}, {})
    keys = set(json.loads((fresh / "seer.json").read_text()))
    assert keys == {"gen_length", "config", "sparsity_config", "calibration"}


def test_calibrate_cli_on_a_multimodal_model_writes_defaults_and_plots(lavida_dir, tmp_path):
    report = run_calibration(
        lavida_dir, 10, tmp_path / "cal", write=True, max_over=0.5, data="builtin-vqa"
    )
    assert report["data"] == "builtin-vqa"
    assert report["n"]["calibration"] + report["n"]["evaluation"] == 10
    for png in ("sparsity_aligned.png", "sparsity_aligned_best.png", "end_prob_aligned.png"):
        assert (tmp_path / "cal" / png).is_file()
    meta = json.loads((lavida_dir / "seer.json").read_text())
    assert "system_prompt" in meta and meta["system_prompt"] is None
    assert meta["calibration"]["data"] == "builtin-vqa"
    lm = seer.load(lavida_dir)
    assert lm.processor.system is None  # the kept key still reaches the processor
    assert seer.engine.request.seer_config(lm, True).signal == meta["config"]["signal"]


def test_choose_takes_the_fastest_setting_that_cuts_nothing():
    def sc(signal, over, window, detected=1.0):
        return sweep.Score({"signal": signal}, 0.0, over, detected, window)

    scores = [
        sc("sparsity", 0.0, 30.0),
        sc("eos_prob", 0.02, 9.0),
        sc("eos_prob", 0.0, 12.0),
        sc("combined", 0.0, 11.0, detected=0.0),
    ]
    assert sweep.choose(scores).mean_window == 12.0  # 9 cuts an answer; 11 never detects
    assert sweep.choose(scores, max_over=0.05).mean_window == 9.0
    assert sweep.choose(scores, "sparsity").mean_window == 30.0
    assert sweep.choose([sc("eos_prob", 0.2, 9.0), sc("eos_prob", 0.1, 20.0)]).over == 0.1


@pytest.fixture(scope="module")
def text_dir(tmp_path_factory):
    return make_random_checkpoint("llada", tmp_path_factory.mktemp("txt"), layers=2)


def _rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_calibrate_on_a_users_file_splits_disjoint_and_deduplicated(text_dir, tmp_path):
    from seer.data import load_examples

    words = ["red ball", "blue cup", "add 4 and 5", "spell cat", "copy : red hat", "green box"]
    rows = [{"id": f"r{i}", "prompt": w} for i, w in enumerate(words)]
    rows += [{"id": "dup0", "prompt": words[0]}, {"id": "dup3", "prompt": words[3]}]  # repeats
    data = _rows(tmp_path / "prompts.jsonl", rows)
    report = run_calibration(text_dir, None, tmp_path / "out", False, data=str(data), gen_length=16)
    calib, ev = report["split"]["calibration_ids"], report["split"]["evaluation_ids"]
    by_id = {e.id: e.key for e in load_examples(data)}
    keys_c, keys_e = [by_id[i] for i in calib], [by_id[i] for i in ev]
    assert not set(keys_c) & set(keys_e)  # disjoint by content, not only by id
    assert len(set(keys_c)) == len(keys_c) and len(set(keys_e)) == len(keys_e)  # no repeats
    assert len(calib) + len(ev) == len(words)  # every unique prompt on exactly one side
    assert report["n"] == {"calibration": len(calib), "evaluation": len(ev)}
    assert report["baseline_exact_match"]["calibration"] is None  # no reference answers given
    assert (tmp_path / "out" / "report.json").is_file()
    assert set(report["evaluation"]) >= {"chosen", "best_eos_prob", "best_sparsity"}
    assert "paper_defaults" not in report["evaluation"]  # a 2-layer model has no layer 3


def test_calibrate_needs_data_for_a_users_model(text_dir, tmp_path):
    with pytest.raises(SeerError, match="give --data FILE"):
        run_calibration(text_dir, None, tmp_path / "out", False)


def test_calibrating_the_builtin_text_model_chooses_by_cost_within_the_margin(tmp_path):
    report = run_calibration("builtin-v1", 24, tmp_path / "out", False, data="builtin-v1")
    trials, chosen = report["trials"], report["chosen_trial"]
    assert report["recommended"] and trials
    ran_or_skipped = {t["name"] for t in trials} | set(report["skipped"])
    assert ran_or_skipped >= {"end probability", "sparsity, SNR rule"}
    for t in trials:  # every candidate run answered every calibration request, or stopped
        assert t["n"] == report["n"]["calibration"] or (t["stopped"] and not t["passes"])
        assert t["setting"]["fallback"] > 0
        assert 0 < t["cost_ratio"] <= 1.0 + 1e-9 and 0 <= t["regrowth_cost"] < 1
    assert chosen["passes"] and chosen["setting"] == report["chosen"]["setting"]
    passing = [t for t in trials if t["passes"]]
    assert chosen["cost"] == min(t["cost"] for t in passing)  # the cheapest within the margin
    assert chosen["cost_ratio"] < 0.5  # it does cut: under half the full window's cost
    oracle = report["oracle"]
    assert oracle["setting"] == {} and oracle["window"] <= chosen["window"] + 8
    held = report["held_out"]
    assert held["chosen"]["n"] == report["n"]["evaluation"] == held["oracle"]["n"]
    assert held["chosen"]["setting"] == chosen["setting"]
    assert report["auc"]["end_prob"] > 0.9  # the built-in model's end probability separates
    for png in ("sparsity_aligned.png", "sparsity_aligned_best.png", "end_prob_aligned.png"):
        assert (tmp_path / "out" / png).is_file()
        assert str(tmp_path / "out" / png) in report["wrote"]  # and the report says so


WORDS = ["red ball", "blue cup", "add 4 and 5", "spell cat", "copy : red hat", "green box"]


def test_a_calibration_where_nothing_passes_says_no_and_writes_nothing(
    text_dir, tmp_path, monkeypatch, capsys
):
    from seer.calibrate import trials as tr
    from seer.cli import main

    monkeypatch.setattr(tr, "passes", lambda t, margin=2.0: False)  # no setting keeps the margin
    rows = [{"id": f"r{i}", "prompt": w} for i, w in enumerate(WORDS)]
    data = _rows(tmp_path / "prompts.jsonl", rows)
    before = (text_dir / "seer.json").read_bytes() if (text_dir / "seer.json").exists() else None
    argv = [
        "calibrate",
        "--model",
        str(text_dir),
        "--data",
        str(data),
        "--gen-length",
        "16",
        "--out",
        str(tmp_path / "out"),
        "--write",
    ]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    last = err.strip().splitlines()[-1]
    assert last.startswith(
        "seer: error: --write: nothing written: Seer is not recommended for this model on this data"
    ), last
    assert "oracle window" in last and "points" in last  # with the oracle's own loss
    assert "Seer is not recommended" in out and "[lower " in out  # the report says it too
    after = (text_dir / "seer.json").read_bytes() if (text_dir / "seer.json").exists() else None
    assert after == before
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert not report["recommended"] and report["chosen_trial"] is None and report["chosen"] is None
    assert report["static_window"]["name"].startswith("fixed window")
    assert f"wrote {tmp_path / 'out' / 'report.json'}" in err  # where the report went


def test_write_never_changes_the_package_and_refuses_a_failed_held_out_check(
    text_dir, tmp_path, monkeypatch
):
    from seer.calibrate import run as calibration
    from seer.models.loader import builtin_path

    assert calibration.packaged(builtin_path("builtin"))
    assert not calibration.packaged(text_dir)
    # a folder inside the package gets a calibrated copy under --out; the original is untouched
    monkeypatch.setattr(calibration, "packaged", lambda folder: True)
    rows = [{"id": f"r{i}", "prompt": w} for i, w in enumerate(WORDS)]
    data = _rows(tmp_path / "prompts.jsonl", rows)
    before = (text_dir / "seer.json").read_bytes() if (text_dir / "seer.json").exists() else None
    report = run_calibration(
        text_dir, None, tmp_path / "out", True, data=str(data), gen_length=16, force=True
    )
    after = (text_dir / "seer.json").read_bytes() if (text_dir / "seer.json").exists() else None
    assert after == before
    if report["recommended"]:
        copy = tmp_path / "out" / text_dir.name
        assert report["seer_json"] == str(copy / "seer.json") and (copy / "config.json").is_file()
    # a choice whose held-out check fails its margin is refused unless --force
    chosen = {"passes": False, "diff": -20.0, "lower": -30.0, "n": 5}
    failed = {"recommended": True, "margin": 2.0, "held_out": {"chosen": chosen}}
    assert "--force" in calibration._refusal(failed, force=False)
    assert "held-out check" in calibration._refusal(failed, force=False)
    assert calibration._refusal(failed, force=True) is None
