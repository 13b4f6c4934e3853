"""The step-0 probe: right columns, right rows, removed after step 0, absent when Seer is off."""

from __future__ import annotations

import pytest
import torch
from conftest import TOKENS, tiny

from seer.boundary.config import SeerConfig
from seer.boundary.probe import StepZeroProbe, sparsity_profiles, step0
from seer.boundary.truncation import SeerPolicy
from seer.diffusion.loop import DenoisingLoop, make_canvas
from seer.sampling import SamplingParams


def _hooks(model) -> int:
    return sum(len(m._forward_pre_hooks) + len(m._forward_hooks) for m in model.modules())


def _window_sparsity(model, ids: list[int], width: int, layer: int, theta: float) -> torch.Tensor:
    """Reference: run the prompt alone and compute the fraction by hand from the activation."""
    seen = {}
    block = model.layers[layer]
    h = block.down_proj.register_forward_pre_hook(lambda m, a: seen.setdefault("a", a[0]))
    x = torch.tensor([ids + [TOKENS.mask] * width])
    with torch.no_grad():
        model(x)
    h.remove()
    a = seen["a"][0, len(ids) :]  # (W, I)
    return (a.abs() < theta).float().mean(-1)


def test_probe_reads_only_the_answer_window_of_each_row():
    model = tiny("llada", layers=2)
    prompts = [[5, 6, 7, 8, 9, 10], [11, 12]]
    canvas = make_canvas(prompts, 12, TOKENS, "cpu")
    theta = 0.05  # large enough that the fraction is not trivially 0 for random weights
    probe = StepZeroProbe((1,), (theta,)).attach(model, canvas.prompt_len, canvas.width, 2)
    with torch.no_grad():
        model(canvas.x, attention_mask=canvas.attention_mask)
    probe.detach()
    got = probe.profile(1)
    assert got.shape == (2, 12)
    # row 0 has no padding: identical to the prompt run alone
    torch.testing.assert_close(got[0], _window_sparsity(model, prompts[0], 12, 1, theta))
    assert _hooks(model) == 0


def test_probe_ignores_the_unconditional_half_of_cfg_and_is_removed_after_step0():
    model = tiny("llada", layers=2)
    loop = DenoisingLoop(model, TOKENS)
    policy = SeerPolicy(SeerConfig(layer=1, theta=0.05, guard=False), TOKENS)
    canvas = make_canvas([[5, 6, 7]], 16, TOKENS, "cpu")
    calls = []
    model.layers[1].down_proj.register_forward_pre_hook(lambda m, a: calls.append(a[0].shape[0]))
    out = loop.run(canvas, SamplingParams(gen_length=16, steps=8, cfg_scale=1.0), policy)
    assert calls[0] == 2  # the CFG forward carries cond + uncond rows
    assert policy.probe.profile(1).shape == (1, 16)  # but the probe kept the real row only
    assert out.nfe >= 1
    model.layers[1].down_proj._forward_pre_hooks.clear()
    assert _hooks(model) == 0


def test_seer_off_registers_no_hooks():
    model = tiny("llada")
    loop = DenoisingLoop(model, TOKENS)
    seen = []
    orig = torch.nn.Module.register_forward_pre_hook

    def spy(self, *a, **k):
        seen.append(self)
        return orig(self, *a, **k)

    torch.nn.Module.register_forward_pre_hook = spy
    try:
        loop.run(make_canvas([[5, 6]], 8, TOKENS, "cpu"), SamplingParams(gen_length=8))
    finally:
        torch.nn.Module.register_forward_pre_hook = orig
    assert seen == []


def test_dream_probe_reads_the_shifted_columns():
    model = tiny("dream")
    ids = [5, 6, 7, 8]
    x = torch.tensor([ids + [TOKENS.mask] * 8])
    prof = sparsity_profiles(model, x, start=4, width=8, layers=(0,), theta=0.05)
    seen = {}
    h = model.layers[0].down_proj.register_forward_pre_hook(lambda m, a: seen.setdefault("a", a[0]))
    with torch.no_grad():
        model(x)
    h.remove()
    ref = (seen["a"][0, 3:11].abs() < 0.05).float().mean(-1)  # column j - 1 predicts token j
    torch.testing.assert_close(prof[0, 0], ref)


def test_gate_tensor_option_reads_act_of_gate():
    model = tiny("llada")
    x = torch.tensor([[5, 6, 7] + [TOKENS.mask] * 6])
    down = sparsity_profiles(model, x, 3, 6, (0,), theta=0.05, tensor="down")
    gate = sparsity_profiles(model, x, 3, 6, (0,), theta=0.05, tensor="gate")
    assert down.shape == gate.shape == (1, 1, 6)
    assert not torch.equal(down, gate)


def _act_of_gate(model, layer: int, x: torch.Tensor) -> torch.Tensor:
    """Reference: the gate projection's output through the model's own activation module."""
    seen = {}
    block = model.layers[layer]
    h = block.gate_proj.register_forward_hook(lambda m, a, out: seen.setdefault("g", out))
    with torch.no_grad():
        model(x)
    h.remove()
    return block.mlp_act(seen["g"])


def test_gate_tensor_uses_the_models_own_activation():
    model = tiny("llada")
    x = torch.tensor([[5, 6, 7] + [TOKENS.mask] * 6])
    gelu = torch.nn.GELU()
    model.layers[0].act = gelu  # a checkpoint whose config names another activation
    got = sparsity_profiles(model, x, 3, 6, (0,), theta=0.05, tensor="gate")[0, 0]
    ref = (_act_of_gate(model, 0, x)[0, 3:].abs() < 0.05).float().mean(-1)
    torch.testing.assert_close(got, ref)
    silu = sparsity_profiles(tiny("llada"), x, 3, 6, (0,), theta=0.05, tensor="gate")[0, 0]
    assert not torch.equal(got, silu)  # the activation was read from the model, not assumed


def test_one_probe_many_thetas_and_tensors_equals_single_probes():
    model = tiny("dream", layers=3)
    x = torch.tensor([[5, 6, 7, 8] + [TOKENS.mask] * 10, [9, 10, 11, 12] + [TOKENS.mask] * 10])
    thetas = (1e-3, 0.05, 0.2)
    probe = StepZeroProbe((0, 2), thetas, ("down", "gate")).attach(model, 4, 10, 2)
    with torch.no_grad():
        model(x)
    probe.detach()
    stacked = probe.stacked()
    assert stacked.shape == (2, 2, 3, 2, 10)  # tensors, layers, thetas, rows, window
    assert probe.seconds > 0
    for ti, tensor in enumerate(("down", "gate")):
        for li, layer in enumerate((0, 2)):
            for hi, theta in enumerate(thetas):
                one = sparsity_profiles(model, x, 4, 10, (layer,), theta, tensor)[0]
                torch.testing.assert_close(stacked[ti, li, hi], one)
    assert _hooks(model) == 0


def test_step0_equals_what_seer_reads_inside_generate():
    from seer.boundary.config import SeerConfig
    from seer.boundary.probe import end_probability
    from seer.engine.request import seer_config
    from seer.lm import DiffusionLM

    lm = DiffusionLM(tiny("llada", layers=3), None, TOKENS, name="tiny")
    prompts = [[5, 6, 7, 8, 9], [11, 12]]
    prof = step0(lm, prompts, 16, thetas=(0.05, 0.1), tensors=("down", "gate"))
    assert prof.sparsity.shape == (2, 3, 2, 2, 16)
    canvas = lm.canvas(prompts, SamplingParams(gen_length=16))
    with torch.no_grad():
        logits = lm.model(canvas.x, attention_mask=canvas.attention_mask).logits
    torch.testing.assert_close(prof.end_prob, end_probability(logits[:, -16:], TOKENS.enders))
    cfg = SeerConfig(layer=2, theta=0.1, tensor="gate", guard=False)
    policy = SeerPolicy(seer_config(lm, cfg), lm.tokens)
    lm.generate(prompts, gen_length=16, steps=4, policy=policy)
    for r in range(2):
        want = prof.at(2, 0.1, "gate")[r]
        torch.testing.assert_close(torch.tensor(policy.reports[r].profile), want)


@pytest.mark.parametrize("arch", ["llada", "dream"])
def test_step0_under_prefix_lm_reads_the_prefill_and_answer_forwards(arch):
    """Under LaViDa's prefix_lm cache step 0 is two forwards: the prompt alone, then the answer
    columns against its K/V. The probe reads each window column from the forward computing it
    (Dream, shift 1: position 0 from the prompt's last column), as generate's step 0 runs.
    A layout test on plain LLaDA/Dream: `step0` runs the loop itself, below the engine, which
    refuses prefix_lm on a model that is not LaViDa."""
    from seer.lm import DiffusionLM

    model = tiny(arch, layers=2)
    lm = DiffusionLM(model, None, TOKENS, name="tiny")
    prompts = [[5, 6, 7, 8, 9], [11, 12]]
    p = lm.sampling(gen_length=12, cache="prefix_lm")
    seen = []
    hook = model.layers[1].down_proj.register_forward_pre_hook(lambda m, a: seen.append(a[0]))
    prof = step0(lm, prompts, params=p, layers=(1,), thetas=(0.05,))
    hook.remove()
    canvas = lm.canvas(prompts, p)
    pp, shift = canvas.prompt_len, model.logits_shift
    prompt, answer = seen  # (B, P, I) the prefill, then (B, W, I) the answer columns
    assert prompt.shape[1] == pp and answer.shape[1] == 12
    cols = torch.cat([prompt, answer], 1)[:, pp - shift : pp - shift + 12]
    torch.testing.assert_close(prof.at(1, 0.05), (cols.abs() < 0.05).float().mean(-1))
    assert _hooks(model) == 0
