"""The training recipe runs (a few steps) and its export loads; demo/profile/calibrate run."""

from __future__ import annotations

import json

import pytest
import torch

import seer
from seer.cli import main
from seer.models.factory import make_random_checkpoint
from seer.models.loader import builtin_path
from seer.models.tokens import load_tokenizer
from synthetic.tasks import generate_examples
from training.builtin import Encoder, TrainConfig, make_batch, train
from training.trainer import loss_fn


def test_training_runs_a_few_steps_and_exports_a_loadable_checkpoint(tmp_path):
    cfg = TrainConfig(
        d_model=32,
        n_layers=2,
        n_heads=2,
        mlp_hidden_size=64,
        batch_size=4,
        window=64,
        total_steps=3,
        warmup=1,
    )
    _, log = train(tmp_path, minutes=5, c=cfg, eval_every=3, eval_n=8)
    assert log and log[-1]["step"] == 3 and 0 <= log[-1]["heldout_exact_match"]["all"] <= 1
    lm = seer.load(tmp_path / "export")
    g = lm.generate("add 1 and 2", gen_length=16)
    assert len(g.token_ids) == 16
    # resume continues from the saved step
    more = TrainConfig(**{**{f: getattr(cfg, f) for f in cfg.__slots__}, "total_steps": 4})
    train(tmp_path, minutes=5, c=more, eval_every=100, eval_n=8)
    state = torch.load(tmp_path / "state.pt", weights_only=True)
    assert state["step"] == 4


def test_a_run_resumes_from_its_export_when_the_optimiser_state_is_gone(tmp_path, capsys):
    """What a committed run keeps (export/ and resume.json, not the large state.pt) is enough:
    the weights and the step come back, the evaluation log too."""
    cfg = TrainConfig(
        d_model=32,
        n_layers=2,
        n_heads=2,
        mlp_hidden_size=64,
        batch_size=4,
        window=64,
        total_steps=2,
        warmup=1,
    )
    model, log = train(tmp_path, minutes=5, c=cfg, eval_every=2, eval_n=4)
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    (tmp_path / "state.pt").unlink()
    more = TrainConfig(**{**{f: getattr(cfg, f) for f in cfg.__slots__}, "total_steps": 2})
    again, log2 = train(tmp_path, minutes=5, c=more, eval_every=100, eval_n=4)
    assert "resumed at step 2 from" in capsys.readouterr().out
    assert log2 == log and torch.load(tmp_path / "state.pt", weights_only=True)["step"] == 2
    assert all(torch.equal(v, saved[k]) for k, v in again.state_dict().items())


def test_loss_masks_only_the_answer_window_and_weights_by_one_over_t(tmp_path):
    from transformers import AutoTokenizer

    from seer.models.configs import llada_config
    from seer.models.factory import random_model
    from training.tokenizer import build_tokenizer

    build_tokenizer(tmp_path)
    enc = Encoder(AutoTokenizer.from_pretrained(tmp_path))
    ex = generate_examples(4, seed=0, split="train")
    import random

    x, am, p, wins = make_batch(enc, ex, 64, random.Random(0), 1.0)
    assert x.shape[1] == p + 64 and wins.tolist() == [64] * 4
    for r, e in enumerate(ex):  # answer + eot, then [EOS] padding up to the window
        ans = enc.answer(e.answer)
        assert x[r, p : p + len(ans)].tolist() == ans
        assert (x[r, p + len(ans) :] == enc.eos).all()
    ids = {"mask_token_id": enc.mask, "eos_token_id": enc.eos, "pad_token_id": enc.eos}
    raw = llada_config(len(enc.vocab), d_model=32, n_layers=1, n_heads=2, **ids)
    model = random_model(raw)
    loss = loss_fn(model, x, am, p, wins, enc.mask, torch.Generator().manual_seed(0))
    # the definition, with the LM head over the whole window: CE on masked tokens / t, summed
    # per row, over the row's window length, averaged over rows (the same draws as loss_fn)
    gen = torch.Generator().manual_seed(0)
    t = (1 - 1e-3) * torch.rand(4, 1, generator=gen) + 1e-3
    masked = torch.rand(4, 64, generator=gen) < t
    noisy = x.clone()
    noisy[:, p:] = torch.where(masked, enc.mask, x[:, p:])
    pos = (am.cumsum(-1) - 1).clamp(min=0)
    logits = model(noisy, attention_mask=am, position_ids=pos, logits_positions=slice(p, None))
    ce = torch.nn.functional.cross_entropy(
        logits.logits.transpose(1, 2), x[:, p:], reduction="none"
    )
    assert masked.any() and torch.allclose(loss, ((ce * masked / t).sum(1) / wins).mean())
    x, am, p, wins = make_batch(enc, ex, 64, random.Random(1), 0.0)  # short per-row windows
    for r, e in enumerate(ex):
        n = len(enc.answer(e.answer))
        assert n <= wins[r] <= n + 24
        assert am[r, p:].sum() == wins[r]  # hidden past the row's window


@pytest.fixture(scope="module")
def four_layer(tmp_path_factory):
    return make_random_checkpoint("llada", tmp_path_factory.mktemp("m4"), layers=4, width=32)


def test_demo_prints_a_table_and_writes_the_png(four_layer, tmp_path, capsys):
    png = tmp_path / "demo.png"
    assert main(["demo", "--model", str(four_layer), "--out", str(png)]) == 0
    out = capsys.readouterr().out
    assert "speedup" in out and "=base" in out and "=ref" in out
    assert png.stat().st_size > 1000


def test_profile_writes_a_heatmap(four_layer, tmp_path, capsys):
    png = tmp_path / "p.png"
    rc = main(
        [
            "profile",
            "--model",
            str(four_layer),
            "--prompt",
            "add 1 and 2",
            "--out",
            str(png),
            "--gen-length",
            "16",
        ]
    )
    assert rc == 0 and png.stat().st_size > 1000
    assert "true end" in capsys.readouterr().out


def test_calibrate_writes_seer_json_that_load_uses(four_layer, tmp_path):
    from seer.calibrate import run_calibration
    from seer.engine.request import seer_config as resolve

    report = run_calibration(
        four_layer, 16, tmp_path / "cal", write=True, max_over=0.5, data="builtin-v1"
    )
    assert (tmp_path / "cal" / "sparsity_aligned.png").is_file()
    auc = report["auc"]["end_prob"]  # NaN when no answer of the random model ends
    assert auc != auc or 0 <= auc <= 1
    meta = json.loads((four_layer / "seer.json").read_text())
    lm = seer.load(four_layer)
    assert resolve(lm, True).signal == meta["config"]["signal"]
    (four_layer / "seer.json").unlink()


def test_demo_requests_use_only_words_their_tokenizer_knows():
    """The demo's requests are held-out requests of each built-in text model's own task, one per
    family (short to long answers), and the model's tokenizer reads every word of them."""
    from seer.demo import TEXT_FAMILIES, text_requests

    for name in ("builtin", "builtin-v1"):
        tok = load_tokenizer(builtin_path(name))
        requests = text_requests(name)
        assert len({e.family for e in requests}) == len(requests) > 5
        for ex in requests:
            assert tok.unk_token_id not in tok.encode(ex.prompt, add_special_tokens=False)
    assert [e.family for e in text_requests("builtin")] == list(TEXT_FAMILIES)


def test_demo_shows_progress_from_its_first_second(four_layer, tmp_path, capsys, monkeypatch):
    """The first thing `seer demo` does is open a spinner (before torch is even imported in a
    fresh process); then every phase has its own display."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom seer import progress\nopened = []\n"
        "class Stop(Exception):\n    pass\n"
        "def status(d, first=False):\n"
        "    opened.append(('torch' in sys.modules, d))\n    raise Stop\n"
        "progress.status = status\nfrom seer.cli import main\n"
        "try:\n    main(['demo'])\nexcept Stop:\n    pass\nprint(opened)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.stdout.strip().startswith("[(False, 'loading builtin-vqa from "), (
        run.stdout + run.stderr
    )

    from seer import progress

    progress.set_enabled(True)
    try:
        png = tmp_path / "demo.png"
        assert main(["demo", "--model", str(four_layer), "--out", str(png)]) == 0
    finally:
        progress.set_enabled(None)
    err = capsys.readouterr().err
    phases = ["loading", "warming up", "baseline and Seer", "step-0 profiles", "drawing"]
    at = [err.find(p) for p in phases]
    assert -1 not in at and at == sorted(at), err


def test_sigterm_saves_the_step_it_reached_and_stops(tmp_path, monkeypatch):
    """`kill` on a training run: it ends after the current step, saved (no step lost to the
    5-minute saves), and the handler is put back afterwards."""
    import os
    import signal

    from training import builtin

    real, drawn = builtin.batches, []

    def batches(*args):
        for b in real(*args):
            drawn.append(1)
            if len(drawn) == 3:
                os.kill(os.getpid(), signal.SIGTERM)
            yield b

    monkeypatch.setattr(builtin, "batches", batches)
    before = signal.getsignal(signal.SIGTERM)
    cfg = TrainConfig(
        d_model=32,
        n_layers=2,
        n_heads=2,
        mlp_hidden_size=64,
        batch_size=4,
        window=64,
        total_steps=50,
        warmup=1,
    )
    train(tmp_path, minutes=5, c=cfg, eval_every=100, eval_n=8)
    assert torch.load(tmp_path / "state.pt", weights_only=True)["step"] == 3
    assert signal.getsignal(signal.SIGTERM) is before
