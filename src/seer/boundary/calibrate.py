"""Measure the step-0 signals on held-out data and choose a model's Seer defaults.

`collect` runs, for each prompt, the baseline generation (full window) to learn where the
answer really ends, and one step-0 forward that records, at every layer, the window slice of the
down-projection input and of act(gate), plus the step-0 end-token probability.
`sweep` scores detector settings on those samples: boundary MAE, over-truncation (the kept window
would cut the end token), detection rate and mean kept window. `choose` picks the setting with
the smallest mean window among those that over-truncate at most `max_over` of the answers,
falling back to the smallest over-truncation; the result is stored in the model's seer.json.
`auc` says how well a per-position signal separates answer positions from padding.

The held-out requests come from one of the demo tasks (`TASKS`): "text" (`seer.demo.tasks`, the
built-in text model's families) or "vqa" (`seer.demo.vqa`, image questions for the built-in
multimodal model); `task_for` picks "vqa" for a multimodal model unless told otherwise. Each
request is encoded once with `DiffusionLM.prompt` (for images: vision tower, projector and the
features spliced into the prompt embeddings) and that `PromptInput` is what both the baseline
generation and the measured step-0 forward receive, so the step-0 canvas is exactly the one
`generate` denoises (`DiffusionLM.canvas`; the loop feeds its prompt embeddings). The benchmark
(`benchmarks/bench_seer.py`) uses the same example source.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass

import torch

from seer.boundary.detector import ChangePointRule, SNRRule, ThresholdRule
from seer.boundary.probe import TENSORS, step0
from seer.boundary.truncation import round_window
from seer.errors import SeerError

THETAS = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
TASKS = ("text", "vqa")


@dataclass(slots=True)
class Example:
    """One held-out request of a demo task, as the calibration and the benchmark use it."""

    family: str  # task family
    text: str  # the prompt (text task) or the question (vqa: the processor places the image)
    answer: str  # reference answer
    image: object | None = None  # PIL image (vqa), else None


def task_for(lm, task: str | None) -> str:
    """`task` checked against the model; None -> "vqa" for a multimodal model, else "text"."""
    if task is None:
        return "vqa" if lm.multimodal else "text"
    if task not in TASKS:
        raise SeerError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
    if task == "vqa" and not lm.multimodal:
        raise SeerError(f"{lm.name or 'this model'} is a text model; the vqa task needs images")
    return task


def heldout_examples(task: str, n: int, seed: int, part: str = "eval") -> list[Example]:
    """`n` unique held-out requests of a demo task (images rendered) from one side of
    `seer.data.split`: "calib" for calibrations, "eval" (never seen by a calibration, nor by
    the shipped models' tuning) for benchmarks. See `seer.data.builtin`."""
    from seer.data import builtin_examples

    source = "builtin-vqa" if task == "vqa" else "builtin"
    return [
        Example(e.family, e.prompt, e.answer, e.image)
        for e in builtin_examples(source, n, seed, part)
    ]


@dataclass(slots=True)
class Sample:
    """One held-out prompt, measured."""

    family: str  # task family (for per-family tables)
    true_len: int  # answer tokens before the end token in the baseline answer
    correct: bool  # baseline answer equals the reference
    sparsity: torch.Tensor  # (2 tensors [down, gate], n_layers, n_thetas, W)
    end_prob: torch.Tensor  # (W,) step-0 probability of an end token


@torch.inference_mode()
def collect(
    lm, examples: list[Example], gen_length: int, batch: int = 32, progress=None
) -> list[Sample]:
    """Baseline answers and step-0 profiles of `examples`, `batch` requests at a time."""
    out: list[Sample] = []
    for i in range(0, len(examples), batch):
        chunk = examples[i : i + batch]
        inputs = [lm.prompt(e.text, e.image) for e in chunk]  # encoded once, used twice
        gens = lm.generate(inputs, gen_length=gen_length)
        prof = step0(lm, inputs, gen_length, thetas=THETAS, tensors=TENSORS)
        for r, (e, g) in enumerate(zip(chunk, gens, strict=True)):
            sp = prof.sparsity[:, :, :, r]  # (2 tensors [down, gate], n_layers, n_thetas, W)
            out.append(Sample(e.family, g.stats.tokens, g.text == e.answer, sp, prof.end_prob[r]))
        if progress is not None:
            progress(len(chunk))
    return out


@dataclass(slots=True)
class Score:
    """How a detector setting does on a set of samples."""

    setting: dict  # the SeerConfig fields that define it
    mae: float  # mean |L* - (true_len + 1)|, undetected rows counted at gen_length
    over: float  # share of rows whose kept window would cut the end token
    detected: float  # share of rows with a boundary
    mean_window: float  # mean kept window after bucket rounding (gen_length if undetected)


def _window(length: int | None, g: int, bucket: int, margin: int) -> int:
    return g if length is None else round_window(length, g, bucket, margin)


def score(setting: dict, lengths: list[int | None], samples, g: int, bucket: int) -> Score:
    margin = setting.get("margin", 0)
    err, over, det, win = 0.0, 0, 0, 0
    for length, s in zip(lengths, samples, strict=True):
        target = s.true_len + 1
        w = _window(length, g, bucket, margin)
        err += abs((length if length is not None else g) - target)
        over += w < min(target, g)
        det += length is not None
        win += w
    n = len(samples)
    return Score(setting, err / n, over / n, det / n, win / n)


def sweep(samples: list[Sample], g: int, bucket: int = 8) -> list[Score]:
    """Score the sparsity detector over layers x thetas x tensors x directions x (tau, gamma),
    and the end-probability detector over thresholds."""
    results = []
    n_layers = samples[0].sparsity.shape[1]
    grid = itertools.product(
        enumerate(("down", "gate")),
        range(n_layers),
        enumerate(THETAS),
        ("rising", "falling"),
        (0.01, 0.02, 0.03, 0.05, 0.1),
        (0.3, 0.6, 1.0),
    )
    # on the host once, as float64: every rule below reads slices of these
    stacked = torch.stack([s.sparsity for s in samples]).double().numpy()  # (N, 2, L, thetas, W)
    ends = torch.stack([s.end_prob for s in samples]).double().numpy()  # (N, W)
    for (ti, tensor), layer, (hi, theta), direction, tau, gamma in grid:
        index = SNRRule(tau, gamma, 3, direction).find_all(stacked[:, ti, layer, hi])
        lengths = [None if i < 0 else i + 1 for i in index.tolist()]
        setting = dict(
            signal="sparsity", tensor=tensor, layer=layer, theta=theta,
            direction=direction, tau_jump=tau, gamma=gamma,
        )  # fmt: skip
        results.append(score(setting, lengths, samples, g, bucket))
    grid = itertools.product(enumerate(("down", "gate")), range(n_layers), enumerate(THETAS),
                             ("rising", "falling"), (2.0, 3.0, 4.0, 6.0, 8.0))  # fmt: skip
    for (ti, tensor), layer, (hi, theta), direction, z in grid:
        index = ChangePointRule(z, direction).find_all(stacked[:, ti, layer, hi])
        lengths = [None if i < 0 else i + 1 for i in index.tolist()]
        setting = dict(signal="sparsity", rule="changepoint", tensor=tensor, layer=layer,
                       theta=theta, direction=direction, z=z)  # fmt: skip
        results.append(score(setting, lengths, samples, g, bucket))
    for tau, run in itertools.product((0.2, 0.3, 0.5, 0.7, 0.9), (1, 2, 3)):
        index = ThresholdRule(tau, run).find_all(ends)
        lengths = [None if i < 0 else i + 1 for i in index.tolist()]
        setting = dict(signal="eos_prob", eos_tau=tau, eos_run=run)
        results.append(score(setting, lengths, samples, g, bucket))
    return results


def choose(scores: list[Score], signal: str, max_over: float = 0.01) -> Score:
    pool = [s for s in scores if s.setting["signal"] == signal]
    safe = [s for s in pool if s.over <= max_over and s.detected > 0]
    if safe:
        return min(safe, key=lambda s: (s.mean_window, s.mae))
    return min(pool, key=lambda s: (s.over, s.mae))


def auc(pos: torch.Tensor, neg: torch.Tensor) -> float:
    """P(neg > pos) + 0.5 P(tie): 1.0 = padding always scores higher than answer positions."""
    if pos.numel() == 0 or neg.numel() == 0:
        return float("nan")
    allv = torch.cat([pos, neg]).double()
    ranks = allv.argsort().argsort().double() + 1
    # average ranks over ties
    uniq, inv = torch.unique(allv, return_inverse=True)
    sums = torch.zeros(len(uniq), dtype=torch.float64).index_add_(0, inv, ranks)
    counts = torch.zeros(len(uniq), dtype=torch.float64).index_add_(0, inv, torch.ones_like(ranks))
    ranks = (sums / counts)[inv]
    r_neg = ranks[pos.numel() :].sum()
    n1, n2 = neg.numel(), pos.numel()
    return float((r_neg - n1 * (n1 + 1) / 2) / (n1 * n2))


def separation(samples: list[Sample], signal) -> float:
    """AUC of a per-position signal (sample -> (W,)) for padding vs answer positions."""
    pos, neg = [], []
    for s in samples:
        v = signal(s)
        end = min(s.true_len, v.shape[0])
        pos.append(v[:end])
        neg.append(v[end + 1 :])
    return auc(torch.cat(pos), torch.cat(neg))


def as_rows(scores: list[Score]) -> list[dict]:
    return [{**s.setting, **{k: v for k, v in asdict(s).items() if k != "setting"}} for s in scores]
