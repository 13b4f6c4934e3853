#!/usr/bin/env python
"""Produce golden test fixtures for Seer by running the *official* LLaDA / Dream code.

This script contains none of the official code.  It imports it at run time from
checkouts that live outside this repository:

* ``--fast-dllm``   a checkout of github.com/NVlabs/Fast-dLLM.  Used for
  ``llada/model/{configuration_llada,modeling_llada}.py`` (LLaDAModelLM) and
  ``dream/model/{configuration_dream,modeling_dream,generation_utils}.py`` (DreamModel
  and ``diffusion_generate``).  ``--llada-model-dir`` / ``--dream-model-dir`` may point
  at any other folder holding those files instead (e.g. a Hugging Face hub snapshot).
* ``--llada``       a checkout of github.com/ML-GSAI/LLaDA.  Used for ``generate.py``
  (the reference sampler ``generate``); ``--llada-generate`` may point at the file.
* KV-cache goldens (``llada/golden_cache.json``): Fast-dLLM's ``llada/generate.py``
  (``generate``, ``generate_with_prefix_cache``, ``generate_with_dual_cache``; or
  ``--fast-dllm-generate``) run on the LLaDA fixture, loaded with Fast-dLLM's own
  ``LLaDAModelLM.from_pretrained``.  That file imports ``model.modeling_llada``, so Fast-dLLM's
  ``llada/model`` folder is imported as the package ``model``.  Its ``get_transfer_index`` is
  wrapped (the module attribute, not the file) to record the decision margins.
* Parallel-decoding goldens (``llada/golden_parallel.json``, ``--only llada-parallel``): the same
  three functions of a Fast-dLLM ``llada/generate.py`` that has ``factor`` (``--fast-dllm-parallel``
  names that file; NVlabs/Fast-dLLM @ f6b35ec3f1b16e1b3d3357938046559ae2d350fa was used) called
  with ``threshold`` and with ``factor``, on the same LLaDA fixture and the same
  ``llada/model`` files as the cache goldens (``--fast-dllm``).  That file imports
  ``.model.modeling_llada`` relatively, so it is loaded as ``fast_dllm_llada.generate`` with the
  ``llada/model`` folder as ``fast_dllm_llada.model``.  ``get_transfer_index`` and
  ``get_transfer_index_dynamic`` are wrapped (module attributes) to record the decisions and the
  smallest distance between a confidence and the threshold it was compared with.

It needs an environment with ``torch`` and ``transformers<5`` (4.49.0 was used; the
official remote code does not run on transformers 5.x).  It never touches the network.

Typical use (from the repository root)::

    python tools/goldens/make_goldens.py --fast-dllm /src/Fast-dLLM --llada /src/LLaDA \
        --out tests/fixtures/golden            # build checkpoints + goldens
    python tools/goldens/make_goldens.py --fast-dllm /src/Fast-dLLM --llada /src/LLaDA \
        --out tests/fixtures/golden --verify   # reload them and re-check with the official code
    python tools/goldens/make_goldens.py --fast-dllm /src/Fast-dLLM --out tests/fixtures/golden \
        --only llada-cache                     # only the KV-cache goldens (needs llada/ built)
    python tools/goldens/make_goldens.py --fast-dllm /src/Fast-dLLM --out tests/fixtures/golden \
        --only llada-parallel --fast-dllm-parallel /src/Fast-dLLM-f6b35ec/llada/generate.py

The parallel goldens were recorded in /work/venvs/fastdllm: ``python -m venv`` from Python 3.11.7
with a ``.pth`` line to a site-packages holding torch 2.13.0+cpu (and safetensors, numpy), then
``pip install transformers==4.49.0 einops accelerate==0.34.2`` (the venv's own packages come
first on ``sys.path``, so transformers 4.49.0 shadows any newer one).

``torch.compile`` is disabled (``TORCHDYNAMO_DISABLE=1``) before torch is imported:
Fast-dLLM's ``modeling_llada.py`` wraps ``F.scaled_dot_product_attention`` in
``@torch.compile()``; eager mode gives the plain PyTorch SDPA that the Hugging Face hub
file calls.  No official file is modified.
"""

from __future__ import annotations

import os

os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")  # must happen before torch is imported

import argparse
import contextlib
import inspect
import json
import math
import subprocess
import sys
import types
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))  # goldens_common, beside this file
from goldens_common import git_rev, import_dir_as_package, import_file  # noqa: E402

# --------------------------------------------------------------------------------------
# Tiny configurations.  Every field of the released config.json is present; only the
# dimensions and the special-token ids are shrunk.
# --------------------------------------------------------------------------------------

VOCAB = 320
MASK_ID = 310
EOS_ID = 300
PAD_ID = 300
DREAM_BOS_ID = 301

# Field set of GSAI-ML/LLaDA-8B-Instruct config.json (values of the real model in comments).
LLADA_CONFIG = {
    "activation_type": "silu",
    "alibi": False,
    "alibi_bias_max": 8.0,
    "architectures": ["LLaDAModelLM"],
    "attention_dropout": 0.0,
    "attention_layer_norm": False,
    "attention_layer_norm_with_affine": True,
    "auto_map": {
        "AutoConfig": "configuration_llada.LLaDAConfig",
        "AutoModelForCausalLM": "modeling_llada.LLaDAModelLM",
        "AutoModel": "modeling_llada.LLaDAModelLM",
    },
    "bias_for_layer_norm": False,
    "block_group_size": 1,
    "block_type": "llama",
    "d_model": 64,  # 4096
    "embedding_dropout": 0.0,
    "embedding_size": VOCAB,  # 126464
    "eos_token_id": EOS_ID,  # 126081
    "flash_attention": False,
    "include_bias": False,
    "include_qkv_bias": False,
    "init_cutoff_factor": None,
    "init_device": "meta",
    "init_fn": "mitchell",
    "init_std": 0.02,
    "input_emb_norm": False,
    "layer_norm_type": "rms",
    "layer_norm_with_affine": True,
    "mask_token_id": MASK_ID,  # 126336
    "max_sequence_length": 512,  # 4096
    "mlp_hidden_size": 176,  # 12288
    "mlp_ratio": 4,
    "model_type": "llada",
    "multi_query_attention": None,
    "n_heads": 4,  # 32
    "n_kv_heads": 4,  # 32
    "n_layers": 2,  # 32
    "pad_token_id": PAD_ID,  # 126081
    "precision": "amp_bf16",
    "residual_dropout": 0.0,
    "rms_norm_eps": 1e-05,
    "rope": True,
    "rope_full_precision": True,
    "rope_theta": 500000.0,
    "scale_logits": False,
    "use_cache": False,
    "vocab_size": VOCAB,  # 126464
    "weight_tying": False,
}

# Field set of Dream-org/Dream-v0-Instruct-7B config.json (DreamConfig fields).
DREAM_CONFIG = {
    "architectures": ["DreamModel"],
    "attention_dropout": 0.0,
    "auto_map": {
        "AutoConfig": "configuration_dream.DreamConfig",
        "AutoModel": "modeling_dream.DreamModel",
    },
    "bos_token_id": DREAM_BOS_ID,
    "eos_token_id": EOS_ID,
    "hidden_act": "silu",
    "hidden_size": 64,  # 3584
    "initializer_range": 0.02,
    "intermediate_size": 176,  # 18944
    "mask_token_id": MASK_ID,  # 151666
    "max_position_embeddings": 512,  # 131072
    "max_window_layers": 28,
    "model_type": "Dream",
    "num_attention_heads": 4,  # 28
    "num_hidden_layers": 2,  # 28
    "num_key_value_heads": 2,  # 4
    "pad_token_id": PAD_ID,  # 151643
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 1000000.0,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "use_cache": False,
    "use_sliding_window": False,
    "vocab_size": VOCAB,  # 152064
}

WEIGHT_STD = 0.2  # std of every Linear / Embedding weight (and Dream's q/k/v biases)
NORM_STD = 0.1  # norm weights are 1 + NORM_STD * N(0, 1)

# --------------------------------------------------------------------------------------
# Loading the official code
# --------------------------------------------------------------------------------------


def _source(directory: Path, files: list[str], repo: str | None) -> dict:
    """Where an official file came from: repository, commit and path inside the repository."""
    directory = Path(directory).resolve()
    top = None
    with contextlib.suppress(Exception):
        top = subprocess.run(
            ["git", "-C", str(directory), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    rel = os.path.relpath(directory, top) if top else str(directory)
    return {
        "repo": repo,
        "git_commit": git_rev(directory),
        "files": [os.path.normpath(os.path.join(rel, f)) for f in files],
    }


# --------------------------------------------------------------------------------------
# Initialisation, saving
# --------------------------------------------------------------------------------------


def _is_norm(name: str) -> bool:
    return "norm" in name or "ln_f" in name


@torch.no_grad()
def init_large(model: torch.nn.Module, seed: int) -> None:
    """Deterministic init with a large std so that logits are well spread."""
    torch.manual_seed(seed)
    for name, p in model.named_parameters():
        if _is_norm(name):
            p.copy_(1.0 + NORM_STD * torch.randn_like(p))
        else:
            p.copy_(WEIGHT_STD * torch.randn_like(p))


def _check_config_json(path: Path, expected: dict) -> dict:
    written = json.loads((path / "config.json").read_text())
    missing = sorted(set(expected) - set(written))
    wrong = sorted(k for k in expected if k in written and written[k] != expected[k])
    if missing or wrong:
        raise RuntimeError(f"{path}/config.json: missing {missing}, differing {wrong}")
    return written


# --------------------------------------------------------------------------------------
# Recording the forwards made by an official sampler, for the robustness statistics
# --------------------------------------------------------------------------------------


class ForwardRecorder:
    def __init__(self, model):
        self.calls = []
        self.handle = model.register_forward_hook(self._hook, with_kwargs=True)

    def _hook(self, module, args, kwargs, output):
        x = args[0] if args else kwargs.get("input_ids")
        logits = output.logits if hasattr(output, "logits") else output[0]
        self.calls.append((x.detach().clone(), logits.detach().clone()))

    def remove(self):
        self.handle.remove()


def _top2_gap(probs: torch.Tensor) -> torch.Tensor:
    t = probs.topk(2, dim=-1).values
    return t[..., 0] - t[..., 1]


def _confidence(probs: torch.Tensor, kind: str) -> torch.Tensor:
    if kind in ("low_confidence", "maskgit_plus", "origin"):
        return probs.max(-1).values
    if kind == "topk_margin":
        return _top2_gap(probs)
    if kind == "entropy":
        return (probs * torch.log(probs + 1e-10)).sum(-1)
    raise ValueError(kind)


def _stats(calls, final, mask_id, kind, window_end_fn, cfg_scale=0.0, shift=False):
    """Per-step transfer counts and the smallest decision margins of a recorded run.

    * argmax_gap: smallest top-1 minus top-2 softmax probability at a position that got
      unmasked (the chosen token must be robust to rounding).
    * rank_gap: smallest (min confidence of the unmasked positions) minus (max confidence
      of the masked candidates left masked) in a row (the choice of positions must be robust).
    """
    argmax_gap = math.inf
    rank_gap = math.inf
    counts = []
    predicted_mask = False
    for i, (x, logits) in enumerate(calls):
        x_next = calls[i + 1][0] if i + 1 < len(calls) else final
        if cfg_scale > 0:
            b = logits.shape[0] // 2
            cond, un = logits[:b], logits[b:]
            logits = un + (cfg_scale + 1) * (cond - un)
            x = x[:b]
        if shift:
            logits = torch.cat([logits[:, :1], logits[:, :-1]], dim=1)
        probs = F.softmax(logits.double(), dim=-1)
        conf = _confidence(probs, kind)
        gap = _top2_gap(probs)
        if (probs.argmax(-1)[x == mask_id] == mask_id).any():
            predicted_mask = True
        step_counts = []
        for r in range(x.shape[0]):
            masked = x[r] == mask_id
            cand = masked.clone()
            cand[window_end_fn(i) :] = False
            chosen = masked & (x_next[r] != mask_id)
            step_counts.append(int(chosen.sum()))
            if chosen.any():
                argmax_gap = min(argmax_gap, float(gap[r][chosen].min()))
                left = cand & ~chosen
                if left.any() and kind != "origin":
                    rank_gap = min(rank_gap, float(conf[r][chosen].min() - conf[r][left].max()))
        counts.append(step_counts)
    return {
        "forward_calls": len(calls),
        "transfer_counts_per_step": counts,
        "min_argmax_prob_gap": argmax_gap,
        "min_rank_conf_gap": None if rank_gap == math.inf else rank_gap,
        "argmax_was_mask_token": predicted_mask,
    }


# --------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------


def _prompts(seed: int):
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape: torch.randint(
        0, EOS_ID, shape, generator=g, dtype=torch.long
    )  # ids in [0, 300)
    return {
        "logits_input_ids": r(2, 12),
        "p7": r(1, 7),
        "p7_batch": r(2, 7),
        "p3": r(1, 3),
    }


def llada_cases(P):
    base = dict(
        temperature=0.0,
        cfg_scale=0.0,
        remasking="low_confidence",
        mask_id=MASK_ID,
        logits_eos_inf=False,
        confidence_eos_eot_inf=False,
    )
    return [
        (
            "a_single_block_steps16",
            P["p7"],
            dict(base, steps=16, gen_length=16, block_length=16),
            None,
        ),
        ("b_blocks4_steps8", P["p7"], dict(base, steps=8, gen_length=16, block_length=4), None),
        (
            "c_blocks8_steps6_uneven",
            P["p7"],
            dict(base, steps=6, gen_length=16, block_length=8),
            None,
        ),
        # generate.py only defines `attention_mask_` when an attention_mask is given, so the
        # CFG branch raises UnboundLocalError with attention_mask=None: pass an all-ones mask
        # (the model ignores a mask without zeros).
        (
            "d_cfg1_blocks8_steps8",
            P["p7"],
            dict(base, steps=8, gen_length=16, block_length=8, cfg_scale=1.0),
            "ones",
        ),
        (
            "e_batch2_blocks8_steps8",
            P["p7_batch"],
            dict(base, steps=8, gen_length=16, block_length=8),
            None,
        ),
        (
            "f_prompt3_gen24_blocks8_steps12",
            P["p3"],
            dict(base, steps=12, gen_length=24, block_length=8),
            None,
        ),
    ]


def dream_cases(P):
    def kw(alg, steps, max_new_tokens=16):
        return dict(
            max_new_tokens=max_new_tokens,
            steps=steps,
            alg=alg,
            alg_temp=0.0,
            temperature=0.0,
            top_p=None,
            top_k=None,
            eps=1e-3,
            mask_token_id=MASK_ID,
            pad_token_id=PAD_ID,
            bos_token_id=DREAM_BOS_ID,
            eos_token_id=EOS_ID,
            output_history=False,
            return_dict_in_generate=True,
        )

    return [
        ("maskgit_plus_steps16", P["p7"], kw("maskgit_plus", 16), None),
        ("maskgit_plus_steps8", P["p7"], kw("maskgit_plus", 8), None),
        ("topk_margin_steps8", P["p7"], kw("topk_margin", 8), None),
        ("entropy_steps8", P["p7"], kw("entropy", 8), None),
        ("entropy_steps5_new12", P["p7"], kw("entropy", 5, 12), None),
        ("batch2_entropy_steps8", P["p7_batch"], kw("entropy", 8), None),
        ("origin_steps8_seed0", P["p7"], kw("origin", 8), 0),
    ]


def run_llada_case(generate, model, prompt, kwargs, mask):
    attention_mask = torch.ones_like(prompt) if mask == "ones" else None
    rec = ForwardRecorder(model)
    try:
        out = generate(model, prompt, attention_mask=attention_mask, **kwargs)
    finally:
        rec.remove()
    Lp = prompt.shape[1]
    spb = kwargs["steps"] // (kwargs["gen_length"] // kwargs["block_length"])
    window = lambda i: Lp + (i // spb + 1) * kwargs["block_length"]
    st = _stats(rec.calls, out, MASK_ID, kwargs["remasking"], window, cfg_scale=kwargs["cfg_scale"])
    return out, st


def run_dream_case(model, prompt, kwargs, seed):
    rec = ForwardRecorder(model)
    try:
        if seed is not None:
            torch.manual_seed(seed)
        res = model.diffusion_generate(prompt, **kwargs)
    finally:
        rec.remove()
    out = res.sequences if hasattr(res, "sequences") else res
    total = out.shape[1]
    st = _stats(rec.calls, out, MASK_ID, kwargs["alg"], lambda i: total, shift=True)
    return out, st


# --------------------------------------------------------------------------------------
# KV-cache goldens: Fast-dLLM's generate / generate_with_prefix_cache / _dual_cache
# --------------------------------------------------------------------------------------

CACHE_FUNCTIONS = ("generate", "generate_with_prefix_cache", "generate_with_dual_cache")


def llada_cache_cases(P):
    """(name, function, prompt, kwargs): every function on every shape, greedy, no threshold."""
    base = dict(temperature=0.0, remasking="low_confidence", mask_id=MASK_ID, threshold=None)
    shapes = [
        ("gen16_block4_steps8", P["p7"], 16, 4, 8),
        ("gen24_block8_steps12", P["p3"], 24, 8, 12),
        # 4 positions over 8 steps per block: counts 1,1,1,1,0,0,0,0, so Fast-dLLM's
        # `while the block has masks` stops after 4 forwards per block (NFE 16, not 32)
        ("gen16_block4_steps32", P["p7"], 16, 4, 32),
        ("gen16_block16_steps16", P["p7"], 16, 16, 16),  # one block: prefix = the prompt
    ]
    return [
        (f"{fn}__{name}", fn, prompt, dict(base, steps=st, gen_length=gen, block_length=blk))
        for fn in CACHE_FUNCTIONS
        for name, prompt, gen, blk, st in shapes
    ]


class TransferRecorder:
    """Wraps a module's `get_transfer_index` to record every decision of a run."""

    def __init__(self, module):
        self.module, self.inner, self.calls = module, module.get_transfer_index, []
        module.get_transfer_index = self

    def __call__(self, logits, temperature, remasking, mask_index, x, num, threshold=None):
        x0, chosen = self.inner(logits, temperature, remasking, mask_index, x, num, threshold)
        self.calls.append((logits.detach().clone(), mask_index.clone(), chosen.clone()))
        return x0, chosen

    def remove(self):
        self.module.get_transfer_index = self.inner


def _decision_stats(calls) -> dict:
    """Counts per call and the smallest margins, as `_stats` (confidence: float64 softmax)."""
    argmax_gap, rank_gap, counts = math.inf, math.inf, []
    for logits, cand, chosen in calls:
        probs = F.softmax(logits.double(), dim=-1)
        conf, gap = probs.max(-1).values, _top2_gap(probs)
        counts.append(int(chosen.sum()))
        if chosen.any():
            argmax_gap = min(argmax_gap, float(gap[chosen].min()))
            for r in range(chosen.shape[0]):
                left = cand[r] & ~chosen[r]
                if chosen[r].any() and left.any():
                    low = conf[r][chosen[r]].min() - conf[r][left].max()
                    rank_gap = min(rank_gap, float(low))
    return {
        "forward_calls": len(calls),
        "transfer_counts_per_call": counts,
        "min_argmax_prob_gap": argmax_gap,
        "min_rank_conf_gap": None if rank_gap == math.inf else rank_gap,
    }


def run_llada_cache(args, out: Path, P) -> bool:
    """Write (or with --verify, re-check) llada/golden_cache.json; True on failure."""
    import transformers

    llada_dir = args.llada_model_dir or args.fast_dllm / "llada" / "model"
    gen_file = args.fast_dllm_generate or args.fast_dllm / "llada" / "generate.py"
    mods = import_dir_as_package("model", llada_dir, ["configuration_llada", "modeling_llada"])
    gen_mod = import_file("fast_dllm_llada_generate", gen_file)
    model = mods["modeling_llada"].LLaDAModelLM.from_pretrained(str(out), torch_dtype=torch.float32)
    model.eval()
    saved, live = _load_tensors(out / "model.safetensors"), model.state_dict()
    assert sorted(saved) == sorted(live) and all(torch.equal(live[k], v) for k, v in saved.items())
    if args.verify and args.verify_dtype == "float64":
        model.double()
    gens, worst = [], {"min_argmax_prob_gap": math.inf, "min_rank_conf_gap": math.inf}
    for name, fn, prompt, kwargs in llada_cache_cases(P):
        rec = TransferRecorder(gen_mod)
        try:
            x, nfe = getattr(gen_mod, fn)(model, prompt, **kwargs)
        finally:
            rec.remove()
        st = _decision_stats(rec.calls)
        out_ids = x.tolist()
        entry = dict(name=name, function=fn, prompt_ids=prompt.tolist(), kwargs=kwargs)
        gens.append(dict(entry, output_ids=out_ids, nfe=int(nfe), stats=st))
        for k in worst:
            if st[k] is not None:
                worst[k] = min(worst[k], st[k])
        print(f"[llada-cache] {name}: nfe={nfe} out={out_ids} gap={st['min_argmax_prob_gap']:.3g}")
    failed = min(worst.values()) < args.min_gap
    if failed:
        print(f"[llada-cache] WARNING: a decision margin is below {args.min_gap}")
    path = out / "golden_cache.json"
    if args.verify:
        ref = json.loads(path.read_text())["generations"]
        for g_ref, g_new in zip(ref, gens, strict=True):
            same = all(g_ref[k] == g_new[k] for k in ("name", "prompt_ids", "output_ids", "nfe"))
            print(f"[llada-cache] {g_ref['name']}: {'OK' if same else 'MISMATCH'}")
            failed |= not same
        return failed
    meta = {
        "generator": "tools/goldens/make_goldens.py --only llada-cache",
        "official_sources": {
            "sampler": dict(
                _source(
                    gen_file.parent,
                    [gen_file.name],
                    "NVlabs/Fast-dLLM" if args.fast_dllm_generate is None else None,
                ),
                functions=list(CACHE_FUNCTIONS),
                signatures={
                    f: f + str(inspect.signature(getattr(gen_mod, f))) for f in CACHE_FUNCTIONS
                },
            ),
            "modeling": _source(
                llada_dir,
                ["configuration_llada.py", "modeling_llada.py"],
                "NVlabs/Fast-dLLM" if args.llada_model_dir is None else None,
            ),
        },
        "checkpoint": "the llada/ fixture beside this file (LLaDAModelLM.from_pretrained, f32)",
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "python": sys.version.split()[0],
        },
        "env": {"TORCHDYNAMO_DISABLE": os.environ.get("TORCHDYNAMO_DISABLE")},
        "prompt_seed": args.prompt_seed,
        "worst_margins": worst,
    }
    _dump_json(path, {"meta": meta, "generations": gens})
    os.chmod(path, 0o644)
    print(f"[llada-cache] wrote {path}")
    return failed


# --------------------------------------------------------------------------------------
# Parallel-decoding goldens: Fast-dLLM's threshold and factor rules
# --------------------------------------------------------------------------------------

PARALLEL_RULES = (("threshold", 0.1), ("threshold", 0.08), ("factor", 2.0), ("factor", 2.7))


def llada_parallel_cases(P):
    """(name, function, prompt, kwargs): every function x rule x shape, greedy. The values suit
    the tiny random model's low confidences (0.03-0.3), so that steps reveal several positions."""
    base = dict(temperature=0.0, remasking="low_confidence", mask_id=MASK_ID)
    shapes = [
        ("gen16_block4_steps8", P["p7"], 16, 4, 8),
        ("gen24_block8_steps12", P["p3"], 24, 8, 12),
        ("gen16_block16_steps16", P["p7"], 16, 16, 16),
    ]
    cases = []
    for fn in CACHE_FUNCTIONS:
        for rule, value in PARALLEL_RULES:
            other = "factor" if rule == "threshold" else "threshold"
            for name, prompt, gen, blk, st in shapes:
                kw = dict(base, steps=st, gen_length=gen, block_length=blk)
                kw.update({rule: value, other: None})
                cases.append((f"{fn}__{rule}{value}__{name}", fn, prompt, kw))
    return cases


class ParallelRecorder:
    """Wraps `get_transfer_index` and `get_transfer_index_dynamic` of the loaded module."""

    def __init__(self, module):
        self.module, self.calls = module, []
        self.plain, self.dynamic = module.get_transfer_index, module.get_transfer_index_dynamic
        module.get_transfer_index = self._plain
        module.get_transfer_index_dynamic = self._dynamic

    def _plain(self, logits, temperature, remasking, mask_index, x, num, threshold=None):
        x0, chosen = self.plain(logits, temperature, remasking, mask_index, x, num, threshold)
        self.calls.append(
            ("threshold", threshold, logits.detach().clone(), mask_index.clone(), chosen.clone())
        )
        return x0, chosen

    def _dynamic(self, logits, temperature, remasking, mask_index, x, num, factor=1):
        x0, chosen = self.dynamic(logits, temperature, remasking, mask_index, x, num, factor)
        self.calls.append(
            ("factor", factor, logits.detach().clone(), mask_index.clone(), chosen.clone())
        )
        return x0, chosen

    def remove(self):
        self.module.get_transfer_index = self.plain
        self.module.get_transfer_index_dynamic = self.dynamic


def _parallel_stats(calls) -> dict:
    """Reveals per call, the argmax gap, and the smallest |confidence - its threshold| among the
    compared positions (threshold: ranks >= 1; factor: ranks 1.. up to the first failure)."""
    counts, argmax_gap, rule_gap = [], math.inf, math.inf
    for rule, value, logits, cand, chosen in calls:
        probs = F.softmax(logits.double(), dim=-1)
        conf, gap = probs.max(-1).values, _top2_gap(probs)
        counts.append(int(chosen.sum()))
        if chosen.any():
            argmax_gap = min(argmax_gap, float(gap[chosen].min()))
        for r in range(cand.shape[0]):
            ranked = conf[r][cand[r]].sort(descending=True).values
            for n in range(1, len(ranked)):
                bar = value if rule == "threshold" else 1 - value / (n + 2)
                rule_gap = min(rule_gap, abs(float(ranked[n]) - bar))
                if rule == "factor" and ranked[n] < bar:
                    break
    return {
        "forward_calls": len(calls),
        "transfer_counts_per_call": counts,
        "min_argmax_prob_gap": argmax_gap,
        "min_rule_gap": None if rule_gap == math.inf else rule_gap,
    }


def run_llada_parallel(args, out: Path, P) -> bool:
    """Write (or with --verify, re-check) llada/golden_parallel.json; True on failure."""
    import transformers

    llada_dir = args.llada_model_dir or args.fast_dllm / "llada" / "model"
    gen_file = args.fast_dllm_parallel
    import_dir_as_package(
        "fast_dllm_llada.model", llada_dir, ["configuration_llada", "modeling_llada"]
    )
    root = types.ModuleType("fast_dllm_llada")
    root.__path__ = [str(Path(gen_file).resolve().parent)]
    sys.modules["fast_dllm_llada"] = root
    gen_mod = import_file("fast_dllm_llada.generate", gen_file)
    modeling = sys.modules["fast_dllm_llada.model.modeling_llada"]
    model = modeling.LLaDAModelLM.from_pretrained(str(out), torch_dtype=torch.float32).eval()
    saved, live = _load_tensors(out / "model.safetensors"), model.state_dict()
    assert sorted(saved) == sorted(live) and all(torch.equal(live[k], v) for k, v in saved.items())
    if args.verify and args.verify_dtype == "float64":
        model.double()
    gens, worst = [], {"min_argmax_prob_gap": math.inf, "min_rule_gap": math.inf}
    for name, fn, prompt, kwargs in llada_parallel_cases(P):
        rec = ParallelRecorder(gen_mod)
        try:
            x, nfe = getattr(gen_mod, fn)(model, prompt, **kwargs)
        finally:
            rec.remove()
        st = _parallel_stats(rec.calls)
        entry = dict(name=name, function=fn, prompt_ids=prompt.tolist(), kwargs=kwargs)
        gens.append(dict(entry, output_ids=x.tolist(), nfe=int(nfe), stats=st))
        for k in worst:
            if st[k] is not None:
                worst[k] = min(worst[k], st[k])
        print(
            f"[llada-parallel] {name}: nfe={nfe} counts={st['transfer_counts_per_call']} "
            f"rule gap={st['min_rule_gap']}"
        )
    failed = min(worst.values()) < args.min_gap
    if failed:
        print(f"[llada-parallel] WARNING: a decision margin is below {args.min_gap}")
    path = out / "golden_parallel.json"
    if args.verify:
        ref = json.loads(path.read_text())["generations"]
        for g_ref, g_new in zip(ref, gens, strict=True):
            same = all(g_ref[k] == g_new[k] for k in ("name", "prompt_ids", "output_ids", "nfe"))
            print(f"[llada-parallel] {g_ref['name']}: {'OK' if same else 'MISMATCH'}")
            failed |= not same
        return failed
    sampler = _source(Path(gen_file).parent, [Path(gen_file).name], None)
    sampler.update(
        repo="NVlabs/Fast-dLLM",
        git_commit=sampler["git_commit"] or args.fast_dllm_parallel_commit,
        functions=list(CACHE_FUNCTIONS),
        signatures={f: f + str(inspect.signature(getattr(gen_mod, f))) for f in CACHE_FUNCTIONS},
    )
    meta = {
        "generator": "tools/goldens/make_goldens.py --only llada-parallel",
        "official_sources": {
            "sampler": sampler,
            "modeling": _source(
                llada_dir,
                ["configuration_llada.py", "modeling_llada.py"],
                "NVlabs/Fast-dLLM" if args.llada_model_dir is None else None,
            ),
        },
        "checkpoint": "the llada/ fixture beside this file (LLaDAModelLM.from_pretrained, f32)",
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "python": sys.version.split()[0],
        },
        "env": {"TORCHDYNAMO_DISABLE": os.environ.get("TORCHDYNAMO_DISABLE")},
        "prompt_seed": args.prompt_seed,
        "worst_margins": worst,
    }
    _dump_json(path, {"meta": meta, "generations": gens})
    os.chmod(path, 0o644)
    print(f"[llada-parallel] wrote {path}")
    return failed


# --------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------


def _save_tensors(path: Path, tensors: dict):
    from safetensors.torch import save_file

    save_file({k: v.contiguous() for k, v in tensors.items()}, str(path))


def _load_tensors(path: Path):
    from safetensors.torch import load_file

    return load_file(str(path))


def _dump_json(path: Path, obj):
    import re

    text = json.dumps(obj, indent=1)
    # keep flat lists of numbers on one line
    text = re.sub(
        r"\[[\s\d.,eE+-]*\]",
        lambda m: "[" + ", ".join(m.group(0)[1:-1].split()).replace(",,", ",") + "]",
        text,
    )
    path.write_text(text + "\n")


def build_llada(args, mods, gen_mod, out: Path, P, provenance):
    LLaDAConfig = mods["configuration_llada"].LLaDAConfig
    LLaDAModelLM = mods["modeling_llada"].LLaDAModelLM
    cfg = LLaDAConfig(**LLADA_CONFIG)
    model = LLaDAModelLM(cfg, init_params=False)
    init_large(model, args.llada_seed)
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out), safe_serialization=True)
    _check_config_json(out, LLADA_CONFIG)
    return model


def build_dream(args, mods, out: Path, P):
    DreamConfig = mods["configuration_dream"].DreamConfig
    DreamModel = mods["modeling_dream"].DreamModel
    DreamGenerationConfig = mods["generation_utils"].DreamGenerationConfig
    cfg = DreamConfig(**DREAM_CONFIG)
    model = DreamModel(cfg)
    init_large(model, args.dream_seed)
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out), safe_serialization=True)
    # DreamModel.from_pretrained always reads generation_config.json (as a
    # DreamGenerationConfig); write one with the special tokens, like the released model.
    if not (out / "generation_config.json").exists():
        DreamGenerationConfig(
            bos_token_id=DREAM_BOS_ID,
            eos_token_id=EOS_ID,
            pad_token_id=PAD_ID,
            mask_token_id=MASK_ID,
        ).save_pretrained(str(out))
    _check_config_json(out, DREAM_CONFIG)
    return model


def make_goldens(kind, model, run_case, cases, P, out: Path, meta):
    with torch.no_grad():
        logits = model(P["logits_input_ids"]).logits.float()
    gens = []
    worst = {
        "min_argmax_prob_gap": math.inf,
        "min_rank_conf_gap": math.inf,
        "mask_token_generated": False,
    }
    for name, prompt, kwargs, extra in cases:
        out_ids, st = run_case(prompt, kwargs, extra)
        entry = {
            "name": name,
            "prompt_ids": prompt.tolist(),
            "kwargs": kwargs,
            "output_ids": out_ids.tolist(),
        }
        if kind == "llada":
            entry["attention_mask"] = (
                prompt.new_ones(prompt.shape).tolist() if extra == "ones" else None
            )
        else:
            entry["rng_dependent"] = extra is not None
            entry["torch_manual_seed"] = extra
        st["output_contains_mask_token"] = bool((out_ids[:, prompt.shape[1] :] == MASK_ID).any())
        entry["stats"] = st
        gens.append(entry)
        if not (kind == "dream" and extra is not None):
            worst["min_argmax_prob_gap"] = min(
                worst["min_argmax_prob_gap"], st["min_argmax_prob_gap"]
            )
            worst["mask_token_generated"] |= st["output_contains_mask_token"]
            if st["min_rank_conf_gap"] is not None:
                worst["min_rank_conf_gap"] = min(
                    worst["min_rank_conf_gap"], st["min_rank_conf_gap"]
                )
        print(
            f"[{kind}] {name}: out={out_ids.tolist()} counts={st['transfer_counts_per_step']} "
            f"argmax_gap={st['min_argmax_prob_gap']:.3g} rank_gap={st['min_rank_conf_gap']} "
            f"mask_argmax={st['argmax_was_mask_token']} mask_out={st['output_contains_mask_token']}"
        )
    return logits, gens, worst


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--fast-dllm", type=Path, help="checkout of NVlabs/Fast-dLLM")
    ap.add_argument("--llada", type=Path, help="checkout of ML-GSAI/LLaDA (for generate.py)")
    ap.add_argument(
        "--llada-model-dir", type=Path, help="folder with configuration_llada.py, modeling_llada.py"
    )
    ap.add_argument(
        "--dream-model-dir",
        type=Path,
        help="folder with configuration_dream.py, modeling_dream.py, generation_utils.py",
    )
    ap.add_argument("--llada-generate", type=Path, help="path of LLaDA's generate.py")
    ap.add_argument(
        "--fast-dllm-generate", type=Path, help="path of Fast-dLLM's llada/generate.py (caches)"
    )
    ap.add_argument(
        "--fast-dllm-parallel",
        type=Path,
        help="path of a Fast-dLLM llada/generate.py with `factor` (parallel-decoding goldens)",
    )
    ap.add_argument(
        "--fast-dllm-parallel-commit",
        default=None,
        help="the commit that file comes from, when it is not inside a git checkout",
    )
    ap.add_argument(
        "--out", type=Path, required=True, help="fixture root (holds llada/ and dream/)"
    )
    ap.add_argument(
        "--only",
        choices=["llada", "dream", "llada-cache", "llada-parallel"],
        help="build only one model, or only the KV-cache / parallel goldens (on the built llada/)",
    )
    ap.add_argument("--llada-seed", type=int, default=0, help="weight-init seed for LLaDA")
    ap.add_argument(
        "--dream-seed",
        type=int,
        default=2,
        help="weight-init seed for Dream (seeds 0, 1 and 3 make the argmax hit the mask token)",
    )
    ap.add_argument("--prompt-seed", type=int, default=1234, help="seed of the random prompt ids")
    ap.add_argument(
        "--min-gap",
        type=float,
        default=1e-5,
        help="fail if a decision margin (prob gap) of a deterministic golden is below this",
    )
    ap.add_argument(
        "--verify",
        action="store_true",
        help="reload the fixtures with the official from_pretrained; check the goldens reproduce",
    )
    ap.add_argument(
        "--verify-dtype",
        choices=["float32", "float64"],
        default="float32",
        help="with --verify: run the official model in this dtype (float64 shows that the goldens "
        "do not hinge on float32 rounding)",
    )
    args = ap.parse_args(argv)

    llada_dir = args.llada_model_dir or (
        args.fast_dllm / "llada" / "model" if args.fast_dllm else None
    )
    dream_dir = args.dream_model_dir or (
        args.fast_dllm / "dream" / "model" if args.fast_dllm else None
    )
    gen_file = args.llada_generate or (args.llada / "generate.py" if args.llada else None)

    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    torch.use_deterministic_algorithms(True)
    import transformers

    kinds = [args.only] if args.only else ["llada", "dream", "llada-cache"]
    failed = False
    for kind in kinds:
        if kind == "llada-parallel":
            if args.fast_dllm_parallel is None or (
                args.fast_dllm is None and args.llada_model_dir is None
            ):
                ap.error(
                    "the parallel goldens need --fast-dllm-parallel and --fast-dllm "
                    "(or --llada-model-dir)"
                )
            failed |= run_llada_parallel(args, args.out / "llada", _prompts(args.prompt_seed))
            continue
        if kind == "llada-cache":
            paths = args.fast_dllm_generate and args.llada_model_dir
            if args.fast_dllm is None and not paths:
                ap.error(
                    "the cache goldens need --fast-dllm "
                    "(or --fast-dllm-generate and --llada-model-dir)"
                )
            failed |= run_llada_cache(args, args.out / "llada", _prompts(args.prompt_seed))
            continue
        out = args.out / kind
        if kind == "llada":
            if llada_dir is None or gen_file is None:
                ap.error(
                    "LLaDA needs --fast-dllm (or --llada-model-dir) "
                    "and --llada (or --llada-generate)"
                )
            mods = import_dir_as_package(
                "official_llada", llada_dir, ["configuration_llada", "modeling_llada"]
            )
            gen_mod = import_file("official_llada_generate", gen_file)
            sources = {
                "modeling": _source(
                    llada_dir,
                    ["configuration_llada.py", "modeling_llada.py"],
                    "NVlabs/Fast-dLLM" if args.llada_model_dir is None else None,
                ),
                "sampler": dict(
                    _source(
                        gen_file.parent,
                        [gen_file.name],
                        "ML-GSAI/LLaDA" if args.llada_generate is None else None,
                    ),
                    function="generate",
                    signature="generate" + str(inspect.signature(gen_mod.generate)),
                ),
            }
        else:
            if dream_dir is None:
                ap.error("Dream needs --fast-dllm or --dream-model-dir")
            mods = import_dir_as_package(
                "official_dream",
                dream_dir,
                ["configuration_dream", "generation_utils", "modeling_dream"],
            )
            sources = {
                "modeling": dict(
                    _source(
                        dream_dir,
                        ["configuration_dream.py", "modeling_dream.py", "generation_utils.py"],
                        "NVlabs/Fast-dLLM" if args.dream_model_dir is None else None,
                    ),
                    function="DreamModel.diffusion_generate (generation_utils.py)",
                )
            }

        P = _prompts(args.prompt_seed)
        if args.verify:
            if kind == "llada":
                model = mods["modeling_llada"].LLaDAModelLM.from_pretrained(
                    str(out), torch_dtype=torch.float32
                )
            else:
                model = mods["modeling_dream"].DreamModel.from_pretrained(
                    str(out), torch_dtype=torch.float32
                )
            model.eval()
            saved = _load_tensors(out / "model.safetensors")
            live = model.state_dict()
            assert sorted(saved) == sorted(live), f"key mismatch: {sorted(set(saved) ^ set(live))}"
            for k, v in saved.items():
                assert torch.equal(live[k], v), k
            if args.verify_dtype == "float64":
                model.double()
        else:
            model = (
                build_llada(args, mods, None, out, P, sources)
                if kind == "llada"
                else build_dream(args, mods, out, P)
            )

        if kind == "llada":
            cases = llada_cases(P)
            run_case = lambda prompt, kw, extra, g=gen_mod.generate, m=model: run_llada_case(
                g, m, prompt, kw, extra
            )
        else:
            cases = dream_cases(P)
            run_case = lambda prompt, kw, extra, m=model: run_dream_case(m, prompt, kw, extra)

        logits, gens, worst = make_goldens(kind, model, run_case, cases, P, out, None)
        print(f"[{kind}] worst margins over deterministic goldens: {worst}")
        if (
            worst["min_argmax_prob_gap"] < args.min_gap
            or worst["min_rank_conf_gap"] < args.min_gap
            or worst["mask_token_generated"]
        ):
            print(
                f"[{kind}] WARNING: a decision margin is below {args.min_gap} or the mask "
                "token was generated; choose another seed"
            )
            failed = True

        if args.verify:
            ref_t = _load_tensors(out / "golden.safetensors")
            ref = json.loads((out / "golden.json").read_text())
            assert torch.equal(ref_t["logits_input_ids"], P["logits_input_ids"])
            err = (ref_t["logits"] - logits).abs().max().item()
            print(f"[{kind}] logits max abs diff vs golden: {err:.3g}")
            ok = err < (1e-5 if args.verify_dtype == "float32" else 1e-4)
            for g_ref, g_new in zip(ref["generations"], gens, strict=True):
                same = (
                    g_ref["output_ids"] == g_new["output_ids"]
                    and g_ref["prompt_ids"] == g_new["prompt_ids"]
                )
                print(f"[{kind}] {g_ref['name']}: {'OK' if same else 'MISMATCH'}")
                ok &= same
            failed |= not ok
            continue

        _save_tensors(
            out / "golden.safetensors",
            {"logits_input_ids": P["logits_input_ids"], "logits": logits.contiguous()},
        )
        meta = {
            "generator": "tools/goldens/make_goldens.py",
            "official_sources": sources,
            "versions": {
                "torch": torch.__version__,
                "transformers": transformers.__version__,
                "python": sys.version.split()[0],
            },
            "env": {"TORCHDYNAMO_DISABLE": os.environ.get("TORCHDYNAMO_DISABLE")},
            "init": {
                "weight_seed": args.llada_seed if kind == "llada" else args.dream_seed,
                "prompt_seed": args.prompt_seed,
                "weight_std": WEIGHT_STD,
                "norm_weight": f"1 + {NORM_STD} * N(0,1)",
            },
            "dtype": "float32",
            "worst_margins": worst,
        }
        _dump_json(out / "golden.json", {"meta": meta, "generations": gens})
        for f in out.iterdir():
            os.chmod(f, 0o644)
        print(f"[{kind}] wrote {out}")

    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
