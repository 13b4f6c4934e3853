"""The linear probe: step-0 hidden states read from the right columns of the right rows (whatever
the layout of step 0), a deterministic fit that separates what is separable, and its file."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from conftest import TOKENS, tiny
from PIL import Image

import seer
from seer.boundary.detector import ThresholdRule
from seer.boundary.linear import FILE, LinearProbe, padding_labels
from seer.boundary.probe import StepZeroProbe, step0
from seer.errors import SeerError
from seer.lm import DiffusionLM
from seer.models.factory import make_random_checkpoint


def _hooks(model) -> int:
    return sum(len(m._forward_pre_hooks) + len(m._forward_hooks) for m in model.modules())


def _block_outputs(model, layers):
    """Reference: every forward's output of each block in `layers`, as a list per layer."""
    seen = {k: [] for k in layers}
    hooks = [
        model.layers[k].register_forward_hook(lambda m, a, out, k=k: seen[k].append(out))
        for k in layers
    ]
    return seen, hooks


@pytest.fixture(scope="module")
def builtin():
    return seer.load("builtin")


def _auc(score: torch.Tensor, label: torch.Tensor) -> float:
    """P(score of a positive > score of a negative), ties halved."""
    pos, neg = score[label], score[~label]
    gt = (pos[:, None] > neg[None]).float().mean()
    eq = (pos[:, None] == neg[None]).float().mean()
    return float(gt + eq / 2)


# -- capture ---------------------------------------------------------------------------------
def test_hidden_states_equal_a_direct_forwards_window_slice(builtin):
    lm, model = builtin, builtin.model
    prompts = ["what is 3 + 4 ?", "name a colour"]  # different lengths: the short one is padded
    p = lm.sampling(gen_length=24)
    prof = step0(lm, prompts, params=p, layers=(), hidden=(0, 3, 5))
    assert prof.sparsity.shape[1] == 0 and _hooks(model) == 0
    canvas = lm.canvas(prompts, p)
    seen, hooks = _block_outputs(model, (0, 3, 5))
    with torch.no_grad():
        model(canvas.x, attention_mask=canvas.attention_mask)
    for h in hooks:
        h.remove()
    start = canvas.prompt_len
    for k in (0, 3, 5):
        got = prof.hidden[k]
        assert got.shape == (2, 24, 128) and got.dtype == torch.float32
        torch.testing.assert_close(got, seen[k][0][:, start : start + 24].float())
    # asking for hidden states changes nothing of the sparsity profiles
    both = step0(lm, prompts, params=p, layers=(2,), hidden=(2,))
    alone = step0(lm, prompts, params=p, layers=(2,))
    torch.testing.assert_close(both.sparsity, alone.sparsity)
    assert alone.hidden == {}


def test_capture_keeps_the_real_rows_and_the_shifted_columns_as_copies():
    model = tiny("dream", layers=2)  # logits shift 1: window position j is read at column j - 1
    x = torch.tensor([[5, 6, 7, 8] + [TOKENS.mask] * 6] * 2)  # 2 rows, as CFG's cond + uncond
    probe = StepZeroProbe((), hidden=(1,)).attach(model, 4, 6, rows=1)
    seen, hooks = _block_outputs(model, (1,))
    with torch.no_grad():
        model(x)
    for h in hooks + probe._handles:
        h.remove()
    got = probe.hidden_states(1)
    assert got.shape == (1, 6, model.config.hidden_size)
    torch.testing.assert_close(got, seen[1][0][:1, 3:9])
    assert got.is_contiguous() and got.untyped_storage().nbytes() == got.numel() * 4
    with pytest.raises(SeerError, match="no hidden state of layer 0"):
        probe.hidden_states(0)


def test_a_layers_state_is_there_when_the_forward_leaves_that_layer():
    """A cut inside step 0 (`after_layer(k, ...)`) can read the probe's layer-k state."""
    model = tiny("llada", layers=3)
    x = torch.tensor([[5, 6, 7] + [TOKENS.mask] * 8])
    probe = StepZeroProbe((), hidden=(1,)).attach(model, 3, 8, rows=1)
    seen = {}

    def after_layer(i, h, mask):
        if i == 1:
            seen["probe"], seen["h"] = probe.hidden_states(1).clone(), h[:, 3:].float()

    with torch.no_grad():
        model(x, after_layer=after_layer)
    probe.detach()
    torch.testing.assert_close(seen["probe"], seen["h"])


def test_a_missing_hidden_layer_is_one_error_and_leaves_no_hooks():
    model = tiny("llada", layers=2)
    with pytest.raises(SeerError, match="hidden-state layer 2 does not exist; the model has 2"):
        StepZeroProbe((0,), hidden=(2,)).attach(model, 3, 4, 1)
    assert _hooks(model) == 0


@pytest.mark.parametrize("arch", ["llada", "dream"])
def test_prefix_lm_reads_each_window_column_from_the_forward_computing_it(arch):
    # a layout test on plain LLaDA/Dream (both logit shifts): `step0` runs the loop itself,
    # below the engine, which refuses prefix_lm on a model that is not LaViDa
    model = tiny(arch, layers=2)
    lm = DiffusionLM(model, None, TOKENS, name="tiny")
    prompts = [[5, 6, 7, 8, 9], [11, 12]]
    p = lm.sampling(gen_length=12, cache="prefix_lm")
    seen, hooks = _block_outputs(model, (1,))
    prof = step0(lm, prompts, params=p, layers=(), hidden=(1,))
    for h in hooks:
        h.remove()
    pp, shift = lm.canvas(prompts, p).prompt_len, model.logits_shift
    prompt, answer = seen[1]  # the prefill (B, P, d), then the answer columns (B, W, d)
    assert prompt.shape[1] == pp and answer.shape[1] == 12
    cols = torch.cat([prompt, answer], 1)[:, pp - shift : pp - shift + 12]
    torch.testing.assert_close(prof.hidden[1], cols.float())
    assert _hooks(model) == 0


@pytest.fixture(scope="module")
def lavida(tmp_path_factory):
    folder = make_random_checkpoint("lavida-llada", tmp_path_factory.mktemp("lv"), layers=2)
    (folder / "seer.json").write_text(json.dumps({"system_prompt": None}))
    return seer.load(folder)


def test_lavida_layer0_states_are_the_same_under_either_layout(lavida):
    """Block 0 of an answer column sees only embeddings (the same K/V under both layouts), so
    its state is the same whether step 0 ran as one forward or as a prefill and the answer."""
    rng = np.random.default_rng(0)
    image = Image.fromarray((rng.random((40, 60, 3)) * 255).astype("uint8"))
    prompt = lavida.prompt("what colour ?", image)
    kw = dict(gen_length=16, steps=8, schedule="shift")
    two = step0(lavida, prompt, params=lavida.sampling(**kw, cache="prefix_lm"), hidden=(0, 1))
    one = step0(lavida, prompt, params=lavida.sampling(**kw, cache="none"), hidden=(0, 1))
    torch.testing.assert_close(two.hidden[0], one.hidden[0], atol=1e-5, rtol=1e-5)
    assert two.hidden[0].shape == (1, 16, lavida.model.get_input_embeddings().embedding_dim)
    assert not torch.allclose(two.hidden[1], one.hidden[1])  # the prompt never saw the answer


# -- fit and profile -------------------------------------------------------------------------
def _states(n: int = 48, w: int = 16, d: int = 12, noise: float = 0.3, shift: float = 3.0):
    """Hidden states whose padding positions lie `shift` noise-free units along a known direction
    u from the origin, the answer's as far on the other side; features then scaled apart
    (standardisation matters) and offset. Returns (states (N, W, d), ends, the padding
    direction in the raw features: the posterior's, as the classes share one covariance)."""
    g = torch.Generator().manual_seed(0)
    ends = torch.randint(1, w + 3, (n,), generator=g).tolist()  # some rows end past the window
    u = torch.randn(d, generator=g)
    u /= u.norm()
    sign = padding_labels(ends, w).float() * 2 - 1  # (N, W) +1 padding, -1 answer
    scale = torch.linspace(0.2, 5, d)
    h = torch.randn(n, w, d, generator=g) * noise + shift * sign[..., None] * u
    return h * scale + 5.0, ends, u / scale


def test_fit_separates_a_separable_set():
    h, ends, _ = _states()
    probe = LinearProbe.fit(h, ends, layer=2)
    assert probe.layer == 2 and probe.hidden_size == 12
    prob = probe.profile(h)
    labels = padding_labels(ends, 16)
    assert prob.shape == (48, 16) and prob.dtype == torch.float32
    assert _auc(prob.flatten(), labels.flatten()) > 0.999
    # the rule finds every row's end: boundary index = end index, or none past the window
    found = ThresholdRule(0.5, 1).find_all(prob)
    assert found.tolist() == [e if e < 16 else -1 for e in ends]
    again = LinearProbe.fit(h, ends, layer=2)  # deterministic: no randomness anywhere
    assert torch.equal(again.weight, probe.weight) and again.bias == probe.bias


def test_fit_recovers_the_direction_of_overlapping_classes():
    """Two Gaussian classes with one covariance: the logistic model is exact, and its weights
    point along the posterior's direction (a separable set's would drift to the max margin)."""
    h, ends, direction = _states(n=200, noise=1.0, shift=1.0)
    probe = LinearProbe.fit(h, ends, layer=0)
    raw = probe.weight / probe.std  # the fitted direction in raw feature space
    assert torch.nn.functional.cosine_similarity(raw, direction, dim=0) > 0.99
    other = torch.nn.functional.cosine_similarity(probe.weight, direction, dim=0)
    assert other < 0.9  # the test can tell: the standardised weights point elsewhere


def test_fit_is_class_balanced():
    """A rare class still gets found: 1 answer position per row against 15 of padding."""
    h, _, _ = _states()
    ends = [1] * h.shape[0]
    h[:, 0] -= 6 * (torch.ones(h.shape[-1]))  # answer positions apart
    probe = LinearProbe.fit(h, ends, layer=0, l2=1.0)
    prob = probe.profile(h)
    assert bool((prob[:, 0] < 0.5).all()) and bool((prob[:, 1:] > 0.5).all())


def test_fit_reads_inference_tensors_from_step0():
    with torch.inference_mode():
        h, ends, _ = _states(n=8)
        probe = LinearProbe.fit(h, ends, layer=0)
    assert probe.weight.requires_grad is False and probe.profile(h).shape == (8, 16)


@pytest.mark.parametrize(
    ("hidden", "ends", "message"),
    [
        (torch.zeros(2, 4), [1, 2], "hidden must be"),
        (torch.zeros(2, 4, 3), [1], "1 end indices for 2 rows"),
        (torch.zeros(2, 4, 3), [9, 4], "every position is answer"),
        (torch.zeros(2, 4, 3), [0, 0], "every position is padding"),
    ],
)
def test_fit_errors_are_one_line(hidden, ends, message):
    with pytest.raises(SeerError, match=message) as e:
        LinearProbe.fit(hidden, ends, layer=0)
    assert "\n" not in str(e.value)


def test_profile_rejects_another_hidden_size():
    h, ends, _ = _states(n=8)
    probe = LinearProbe.fit(h, ends, layer=0)
    with pytest.raises(SeerError, match="hidden states of size 12, got 7"):
        probe.profile(torch.zeros(1, 4, 7))


# -- storage ---------------------------------------------------------------------------------
def _builtin_sized(layer: int = 3) -> LinearProbe:
    g = torch.Generator().manual_seed(1)
    return LinearProbe(
        layer,
        torch.randn(128, generator=g),
        -0.25,
        torch.randn(128, generator=g),
        torch.rand(128, generator=g) + 0.5,
    )


def test_save_and_load_round_trip(tmp_path, builtin):
    probe = _builtin_sized()
    path = probe.save(tmp_path)
    assert path == tmp_path / FILE
    back = LinearProbe.load(tmp_path, builtin.model)
    assert back.layer == 3 and back.bias == -0.25
    for name in ("weight", "mean", "std"):
        assert torch.equal(getattr(back, name), getattr(probe, name))
    h = torch.randn(2, 5, 128)
    torch.testing.assert_close(back.profile(h), probe.profile(h))


def test_load_checks_the_model(tmp_path, builtin):
    _builtin_sized(layer=6).save(tmp_path)
    with pytest.raises(SeerError, match="reads layer 6, but the model has 6 layers"):
        LinearProbe.load(tmp_path, builtin.model)
    h, ends, _ = _states(n=8)
    LinearProbe.fit(h, ends, layer=1).save(tmp_path)
    with pytest.raises(SeerError, match="size 12, but the model's hidden size is 128"):
        LinearProbe.load(tmp_path, builtin.model)


@pytest.mark.parametrize("damage", ["missing", "garbage", "truncated", "no_layer", "bad_shape"])
def test_a_missing_or_corrupt_file_is_one_error_line(tmp_path, damage):
    from safetensors.torch import save_file

    path = _builtin_sized().save(tmp_path)
    if damage == "missing":
        path.unlink()
    elif damage == "garbage":
        path.write_bytes(b"\x00\x01not a safetensors file at all")
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:100])
    elif damage == "no_layer":
        save_file({"weight": torch.ones(4)}, str(path), metadata={"format": "seer-linear-probe"})
    else:
        t = {
            "weight": torch.ones(4),
            "bias": torch.ones(1),
            "mean": torch.ones(3),
            "std": torch.ones(4),
        }
        save_file(t, str(path), metadata={"format": "seer-linear-probe", "layer": "0"})
    with pytest.raises(SeerError) as e:
        LinearProbe.load(tmp_path)
    message = str(e.value)
    assert "\n" not in message and FILE in message
