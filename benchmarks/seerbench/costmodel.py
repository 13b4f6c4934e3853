"""A per-forward cost model of the comparison's configs: fitted on a run's own times, it says how
far the measured speed-ups follow from the work each config does (forwards, tokens, attention),
and it projects the same table to a large model on a large GPU.

Work of one request (`forwards`): the denoising loop's forwards, each computing `q` positions
that attend to `kv` keys. Without a cache every forward computes the prompt and the window
(q = kv = P + W). Fast-dLLM's prefix cache recomputes, per block, one full forward and then only
the block and what follows it (q = W - start, kv = P + W); its dual cache only the block
(q = b); DPad keeps the block and `DPAD_WINDOW` suffix positions (q = kv = P + end + 16). A
Seer (or any window policy) config's step 0 runs at the full window g, its later forwards at
the cut window W. NFE is split evenly over the blocks; DAEDAL's growing window is taken at its
final size. These are approximations of what the loop does, stated so that their error can be
read off the fit.

Fit (`fit`): per request, time = r + sum over forwards of (a + b q + c q kv): the per-request
term r takes the encoding and detokenising, a the per-forward overhead, b the per-token work
(the projections, the MLP, the output layer), c the attention. Least squares (numpy) over every
(request, config) at batch 1, over every config's total at batch 32; the fitted speed-up of
each config over its reference is printed beside the measured one with its residual. These are
in-sample figures (fitted on the times they are scored on), not predictions: fitted on one run
and scored on others, the same form errs by 10-18 % (`benchmarks/costmodel_oos.py`).

Projection (`project`): the same forwards on a given model and GPU, each taking
max(FLOPs / peak, bytes / bandwidth) (the roofline, no efficiency factor: an ideal bound):
FLOPs = rows (2 N q + 4 layers hidden q kv + 2 hidden vocab q) with N the layers' weights,
bytes = the bf16 weights once per forward + each row's keys and values. `LLADA_8B` and `LAVIDA`
are the released models' configs (`seer.models.configs`); LaViDa adds its 980 image positions to
every prompt and its SigLIP tower once per request. A projection is not a measurement: it is
labelled so wherever it is printed, and `benchmarks/gpu_check.py` checks it against a real GPU.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

DPAD_WINDOW = 16  # DPad's suffix positions kept after the block (seerbench.compare)
H200 = {"name": "H200 (bf16 dense peak, HBM3e)", "flops": 989e12, "bytes": 4.8e12}
LAVIDA_IMAGE_TOKENS = 980  # LaViDa's image positions: 5 SigLIP views of 729, 2x2 pooled
SIGLIP_PARAMS = 400e6  # siglip-so400m-patch14-384, run once per request (5 views x 729 patches)
SIGLIP_TOKENS = 5 * 729


@dataclass(slots=True)
class Shape:
    """What a forward's cost depends on, read from a model's config.json."""

    name: str  # the model's name (for the table)
    hidden: int  # hidden size
    layers: int  # transformer layers
    intermediate: int  # MLP width (SwiGLU: three matrices)
    vocab: int  # output rows
    image_tokens: int = 0  # positions every prompt gains (LaViDa's image)
    vision_flops: float = 0.0  # FLOPs once per request (the vision tower)

    @property
    def layer_params(self) -> int:
        """Weights of the transformer layers (attention 4 h^2, SwiGLU MLP 3 h I)."""
        return self.layers * (4 * self.hidden**2 + 3 * self.hidden * self.intermediate)

    @property
    def params(self) -> int:
        """Every weight read per forward: the layers, the embedding and the output layer."""
        return self.layer_params + 2 * self.hidden * self.vocab


def shape_of(raw: dict, name: str, image_tokens: int = 0, vision_flops: float = 0.0) -> Shape:
    """A `Shape` from a config.json dict (LLaDA's OLMo names or Llama's)."""
    pick = lambda *keys: next(int(raw[k]) for k in keys if raw.get(k))  # noqa: E731
    return Shape(
        name,
        pick("d_model", "hidden_size"),
        pick("n_layers", "num_hidden_layers"),
        pick("mlp_hidden_size", "intermediate_size"),
        pick("vocab_size", "embedding_size"),
        image_tokens,
        vision_flops,
    )


def llada_8b() -> Shape:
    from seer.models.configs import LLADA_8B

    return shape_of(LLADA_8B, "LLaDA-8B")


def lavida() -> Shape:
    """LaViDa (LLaDA-8B + SigLIP so400m): its LM's config, 980 image positions per prompt."""
    from seer.models.configs import LLADA_8B, lavida_config

    raw = lavida_config(LLADA_8B, "llada")
    return shape_of(raw, "LaViDa", LAVIDA_IMAGE_TOKENS, 2 * SIGLIP_PARAMS * SIGLIP_TOKENS)


# -- the work of one request ----------------------------------------------------------------------


def forwards(
    prompt: float,
    window: float,
    nfe: float,
    g: int,
    cache: str = "none",
    block: int | None = None,
    cut: bool = False,
) -> Iterator[tuple]:
    """(count, q, kv) of a request's forwards (see the module docstring); `cut`: step 0 ran at
    the full window `g` before a window policy cut it to `window`."""
    P, W = float(prompt), max(1.0, float(window))
    left = float(nfe)
    if cut and left >= 1 and W < g:  # noqa: SIM300
        yield 1.0, P + g, P + g
        left -= 1
    b = float(block or W)
    nb = max(1, math.ceil(W / b))
    f = left / nb  # forwards per block
    for j in range(nb):
        start, end = j * b, min(W, (j + 1) * b)
        if cache == "prefix":
            yield min(1.0, f), P + W, P + W
            yield max(0.0, f - 1), W - start, P + W
        elif cache == "dual":
            yield min(1.0, f), P + W, P + W
            yield max(0.0, f - 1), end - start, P + W
        elif cache == "dpad":
            n = P + min(W, end + DPAD_WINDOW)
            yield f, n, n
        else:
            yield f, P + W, P + W


def terms(prompt, window, nfe, g, cache="none", block=None, cut=False) -> np.ndarray:
    """The features of one request: (1, forwards, sum q, sum q kv)."""
    out = np.array([1.0, 0.0, 0.0, 0.0])
    for n, q, kv in forwards(prompt, window, nfe, g, cache, block, cut):
        out += (0.0, n, n * q, n * q * kv)
    return out


@dataclass(slots=True)
class Fit:
    """Least-squares coefficients of (per request, per forward, per token, per token-key)."""

    coef: list[float]  # seconds: r, a, b, c
    n: int  # observations
    rel_rmse: float  # root mean square of (predicted / measured - 1) over the observations

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x) @ np.asarray(self.coef)


def fit(x: np.ndarray, y: np.ndarray) -> Fit:
    """Least squares of y (seconds) on the features x (rows of `terms`, or sums of them)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    scale = np.maximum(np.abs(x).max(axis=0), 1e-12)  # columns of very different sizes
    coef = np.linalg.lstsq(x / scale, y, rcond=None)[0] / scale
    pred = x @ coef
    ok = y > 0
    rel = float(np.sqrt(np.mean((pred[ok] / y[ok] - 1) ** 2))) if ok.any() else float("nan")
    return Fit([float(c) for c in coef], len(y), rel)


# -- projection -----------------------------------------------------------------------------------


def forward_seconds(shape: Shape, rows: int, q: float, kv: float, hw: dict = H200) -> float:
    """One forward of `rows` rows on `hw` (roofline: compute or memory bound, whichever is
    slower; bf16)."""
    flops = rows * (
        2 * shape.layer_params * q
        + 4 * shape.layers * shape.hidden * q * kv
        + 2 * shape.hidden * shape.vocab * q
    )
    nbytes = 2 * shape.params + rows * shape.layers * 2 * kv * shape.hidden * 2
    return max(flops / hw["flops"], nbytes / hw["bytes"])


def request_seconds(
    shape: Shape,
    batch: int,
    prompt,
    window,
    nfe,
    g,
    cache="none",
    block=None,
    cut=False,
    hw: dict = H200,
) -> float:
    """Projected seconds per request at `batch` rows per forward (every row alike)."""
    p = prompt + shape.image_tokens
    total = sum(
        n * forward_seconds(shape, batch, q, kv, hw)
        for n, q, kv in forwards(p, window, nfe, g, cache, block, cut)
    )
    return total / batch + shape.vision_flops / hw["flops"]


def project(
    results: dict,
    g: int,
    shape: Shape,
    batches=(1, 64),
    hw: dict = H200,
    prompt: float | None = None,
) -> dict:
    """Every config of a compare record's `results` projected on `shape` and `hw`: ms per
    request and the speed-up over its reference at each batch size, from the config's measured
    mean window, NFE, prompt length (or `prompt`), cache and block size."""
    out = {}
    for name, r in results.items():
        p = prompt if prompt is not None else r.get("prompt_tokens") or 0.0
        cut = bool(r.get("seer") or r["method"].startswith(("oracle", "static")))
        shp = dict(
            prompt=p,
            window=r["mean_window"],
            nfe=r["nfe"],
            g=g,
            cache=r.get("cache", "none"),
            block=r.get("block"),
            cut=cut,
        )
        out[name] = {f"b{b}_ms": 1000 * request_seconds(shape, b, hw=hw, **shp) for b in batches}
        out[name]["bound"] = _bound(shape, shp, hw)
    for name, r in out.items():
        ref = out.get(results[name].get("ref", ""), r)
        for b in batches:
            r[f"b{b}_speedup_vs_ref"] = ref[f"b{b}_ms"] / r[f"b{b}_ms"]
    return out


def _bound(shape: Shape, shp: dict, hw: dict) -> str:
    """Which roof the batch-1 full forward meets: compute or memory."""
    n = shp["prompt"] + shape.image_tokens + shp["window"]
    flops = 2 * shape.layer_params * n + 4 * shape.layers * shape.hidden * n * n
    return "compute" if flops / hw["flops"] > 2 * shape.params / hw["bytes"] else "memory"


# -- fitted on a comparison run -------------------------------------------------------------------


def _cut(cfg) -> bool:
    return bool(cfg.seer or cfg.oracle or cfg.static is not None)


def annotate(results: dict, rows: list, eng: dict, configs: list, g: int, clock: str) -> dict:
    """Fit the model on a comparison run's own times (batch 1: every request x config; batch
    32: every config's total) on `clock`, and add each config's fitted (in-sample) speed-up over
    its reference and its residual (`model_b1_speedup_vs_ref`, `model_b1_error`, and the
    same for b32) to `results`. Returns the fits (the record's "cost_model")."""
    from seerbench.compare_report import b1_repeats, b32_repeats, one_clock_entry
    from seerbench.stats import median

    out: dict = {"form": "r + sum over forwards (a + b q + c q kv)", "clock": clock}
    feats, ys, pred1 = {}, [], {}
    for c in configs:
        xs = []
        for row in rows:
            x = row["results"][c.name]
            xs.append(
                terms(
                    x.get("prompt_tokens", 0),
                    x["window"],
                    x["nfe"],
                    g,
                    c.params.get("cache", "none"),
                    c.block,
                    _cut(c),
                )
            )
            ys.append(median(b1_repeats(x, row, clock)))
        feats[c.name] = np.asarray(xs)
    if not feats:
        return out
    f1 = fit(np.concatenate(list(feats.values())), np.asarray(ys))
    out["b1"] = {"coef": f1.coef, "n": f1.n, "rel_rmse": f1.rel_rmse}
    for name, x in feats.items():
        pred1[name] = float(f1.predict(x).sum())
    _speedups(results, pred1, "b1", "b1_ms")
    b32 = [c for c in configs if c.name in eng and one_clock_entry(eng[c.name])]  # one clock
    if len(b32) >= 4:  # at least as many configs as coefficients
        x32 = {}
        for c in b32:
            e = eng[c.name]
            pt = e.get("prompt_tokens") or [0] * len(e["nfe"])
            cache, cut = c.params.get("cache", "none"), _cut(c)
            shapes = zip(pt, e["windows"], e["nfe"], strict=True)
            x32[c.name] = sum(terms(p, w, n, g, cache, c.block, cut) for p, w, n in shapes)
        y32 = [median(b32_repeats(eng[c.name], clock)) for c in b32]
        f32 = fit(np.stack(list(x32.values())), np.asarray(y32))
        out["b32"] = {"coef": f32.coef, "n": f32.n, "rel_rmse": f32.rel_rmse}
        _speedups(results, {k: float(f32.predict(v)) for k, v in x32.items()}, "b32", "b32_ms")
    return out


def _speedups(results: dict, pred: dict, key: str, ms: str) -> None:
    for name, p in pred.items():
        r = results[name]
        ref = r.get("ref", name)
        if ref not in pred or ms not in r or ms not in results[ref] or p <= 0:
            continue
        x = pred[ref] / p
        measured = results[ref][ms] / r[ms]
        r[f"model_{key}_speedup_vs_ref"] = x
        r[f"model_{key}_error"] = x / measured - 1


def projection_lines(
    record: dict, shapes=None, batches=(1, 64), hw: dict = H200, prompt: float | None = None
) -> list[str]:
    """A compare record's table projected to `shapes` (LLaDA-8B and LaViDa) on `hw`, as
    Markdown lines, labelled as a projection."""
    from seerbench.compare_report import normalise

    record = normalise(record)
    res, g = record["results"], record["gen_length"]
    shapes = shapes or (llada_8b(), lavida())
    out = []
    for shape in shapes:
        proj = project(res, g, shape, batches, hw, prompt)
        p = f"{prompt:g}" if prompt is not None else "the run's measured"
        out += [
            "",
            f"PROJECTION, not a measurement nor a validated prediction (for one: `seer "
            f"simulate`): {shape.name} ({shape.params / 1e9:.1f} B weights) on "
            f"one {hw['name']}, {hw['flops'] / 1e12:.0f} TFLOP/s and "
            f"{hw['bytes'] / 1e12:.1f} TB/s, "
            f"roofline with no efficiency factor; each config's measured mean window and NFE "
            f"from {record['model']} (gen_length {g}), {p} prompt lengths"
            + (f" + {shape.image_tokens} image positions" if shape.image_tokens else "")
            + ". Speed-ups over each config's reference.",
            "",
            "| config | window | NFE | "
            + " | ".join(f"b{b} ms/request | b{b} × ref" for b in batches)
            + " | measured b1 × ref | bound |",
            "|---" * (5 + 2 * len(batches)) + "|",
        ]
        for name, r in sorted(proj.items(), key=lambda kv: -kv[1][f"b{batches[0]}_ms"]):
            m = res[name]
            cells = " | ".join(
                f"{r[f'b{b}_ms']:.1f} | {r[f'b{b}_speedup_vs_ref']:.2f}×" for b in batches
            )
            out.append(
                f"| {name} | {m['mean_window']:.1f} | {m['nfe']:.1f} | {cells} | "
                f"{m['b1_speedup_vs_ref']:.2f}× | {r['bound']} |"
            )
    return out
