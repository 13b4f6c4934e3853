"""Traces: the requests a simulation serves, and what each method does to each of them.

A request is a token stream's shape: prompt positions, whether it carries an image, its answer
length and its arrival time; optionally, per method, the window and forwards (NFE) a real run
measured for it. Two sources:
- our measured records (`docs/results/compare/**/raw-*.jsonl`, `bench_compare.py`'s rows): each
  request's prompt length and, per method, the window Seer's detector cut and the NFE the real
  loop took (the policies' measured effect);
- built-in traces (`BUILTIN`): the answer-length spreads of the paper's benchmarks (Fig. 3(a),
  ChartQA / InfoVQA / DocVQA / MathVista, read off the log-scale histograms by eye: counts are
  approximate) and the answer and prompt lengths of the built-in text model's measured run.

Where a request has no measurement for a method, its window and forwards follow the rules the
engine's policies follow (`plan`): Seer's window is the answer rounded up to the SeerConfig's
`bucket` (plus its `margin`), i.e. a detector that finds the boundary, capped at gen_length;
steps scale with the window at the run's tokens per step, step 0 at the full window; threshold
decoding reveals `threshold_tokens` answer tokens per forward and each block of end tokens in
one forward (a declared assumption, not a fitted or validated number).
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

from seer.errors import SeerError

METHODS = ("baseline", "threshold", "seer", "seer+threshold")
CACHES = ("none", "prefix", "dual", "prefix_lm")
# bench_compare's config names at one token per step / threshold 0.9 -> our method names
RECORD_NAMES = {
    "baseline@k=1": "baseline",
    "seer@k=1": "seer",
    "threshold@t=0.9": "threshold",
    "seer+threshold@t=0.9": "seer+threshold",
}


@dataclass(slots=True)
class SimRequest:
    """One request of a trace."""

    prompt: int  # text prompt positions
    answer: int  # answer tokens (the valid text before the end tokens)
    image: bool = False  # carries an image (the model's image positions join the prompt)
    arrival: float = 0.0  # seconds after the trace starts
    measured: dict[str, tuple[int, int]] = field(default_factory=dict)  # method -> (window, nfe)


@dataclass(slots=True)
class Trace:
    """Requests and where they came from."""

    name: str  # as printed
    requests: list[SimRequest]  # in arrival order
    gen_length: int | None = None  # the window the measurements were taken at (None: any)


@dataclass(slots=True, frozen=True)
class Decoding:
    """How the methods decode (the run's settings, shared by every method)."""

    gen_length: int = 256  # the full window
    tokens_per_step: int = 1  # fixed-rate steps: gen_length / steps
    block: int = 32  # semi-autoregressive block length (threshold decoding)
    threshold_tokens: float = 2.0  # answer tokens revealed per forward under threshold 0.9
    seer_bucket: int = 8  # SeerConfig.bucket: the window rounded up to a multiple
    seer_margin: int = 0  # SeerConfig.margin: positions kept after the boundary
    cache: str = "none"  # none | prefix | dual (Fast-dLLM) | prefix_lm (LaViDa: prompt cached)
    # the output layer on every position a forward computes (the released samplers: LLaDA's and
    # Dream's `model(x).logits`, Fast-dLLM's), not only on the window's (the engine's)
    full_logits: bool = False

    def __post_init__(self) -> None:
        if self.gen_length < 1 or self.block < 1 or not 0 < self.threshold_tokens < math.inf:
            raise SeerError("gen_length and block must be >= 1, threshold_tokens finite and > 0")
        if self.tokens_per_step < 1 or self.gen_length % self.tokens_per_step:
            raise SeerError(
                f"tokens per step {self.tokens_per_step} must divide gen_length {self.gen_length}"
            )
        if self.cache not in CACHES:
            raise SeerError(f"unknown cache {self.cache!r}: choose one of {', '.join(CACHES)}")


def plan(r: SimRequest, method: str, d: Decoding) -> tuple[int, int]:
    """(window, forwards) of `r` under `method` (its measurement when it has one at this
    gen_length)."""
    if method in r.measured:
        return r.measured[method]
    g, a = d.gen_length, min(r.answer, d.gen_length)
    seer = method.startswith("seer")
    w = (
        min(g, max(1, d.seer_bucket * math.ceil((a + d.seer_margin) / d.seer_bucket)))
        if seer
        else g
    )
    if method.endswith("threshold"):
        nfe = math.ceil(a / d.threshold_tokens) + math.ceil((w - a) / d.block)
    else:
        nfe = math.ceil(w / d.tokens_per_step)
    return w, max(1, nfe + (1 if seer and w < g else 0))


# -- built-in traces --------------------------------------------------------------------------
def _hist(pairs: str) -> dict[int, float]:
    return {int(k): float(v) for k, v in (p.split(":") for p in pairs.split())}


# answer length -> count, read off the paper's Fig. 3(a) (log scale; approximate)
SPREADS = {
    "chartqa": _hist("1:400 2:500 3:380 4:560 5:350 6:150 7:60 8:20 9:6 10:4 11:15 12:9 13:2 14:2"),
    "infovqa": _hist(
        "1:500 2:560 3:700 4:350 5:230 6:150 7:75 8:50 9:30 10:20 11:18 12:8 13:5 "
        "14:3 15:1 16:4 17:1 18:3 20:1 21:1"
    ),
    "docvqa": {
        **{n: 700 * math.exp(-(n - 2) / 2.6) for n in range(1, 25)},
        **{n: 1.0 for n in (26, 27, 28, 29, 30, 31, 32, 33, 38, 39)},
    },
    "mathvista": _hist("1:20 2:20 3:18 4:15 5:12 6:10 7:8 8:6 9:5 10:4 11:3 12:2 13:2 30:1 36:1"),
}
VQA_PROMPT = 60  # text positions of a VQA question with its chat template (besides the image)
BUILTIN = (*SPREADS, "builtin-text")


def builtin(name: str, n: int = 512, seed: int = 0) -> Trace:
    """A built-in trace of `n` requests (all arriving at 0: an offline batch)."""
    rng = random.Random(seed)
    if name in SPREADS:
        lengths, weights = zip(*SPREADS[name].items(), strict=True)
        answers = rng.choices(lengths, weights=weights, k=n)
        return Trace(
            f"{name} (paper Fig. 3a spread)",
            [SimRequest(VQA_PROMPT, a, image=True) for a in answers],
        )
    if name == "builtin-text":
        data = json.loads((Path(__file__).parent / "builtin_text.json").read_text())
        pairs = rng.choices(data["requests"], k=n)
        return Trace(data["name"], [SimRequest(p, a) for p, a in pairs])
    raise SeerError(f"unknown trace {name!r}: a file, or one of {', '.join(BUILTIN)}")


# -- trace files ------------------------------------------------------------------------------
def load(source: str, n: int = 512, seed: int = 0) -> Trace:
    """A built-in name, a compare record's raw JSON Lines (`bench_compare.py`), or JSON Lines of
    {"prompt_tokens", "answer_tokens", "image" (optional), "arrival" (optional)}."""
    path = Path(source)
    if not path.is_file():
        if source in BUILTIN:
            return builtin(source, n, seed)
        raise SeerError(f"--trace {source}: no such file, and not one of {', '.join(BUILTIN)}")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise SeerError(f"--trace {source}: cannot read it ({e})") from None
    reqs, gen = [], None
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError("not a JSON object")
            if "results" in row:  # a compare record's request row
                settings = row.get("settings") or {}
                if "gen_length" not in settings:
                    raise ValueError("a compare record without settings.gen_length (rerun it)")
                gen = int(settings["gen_length"])
                reqs.append(_from_record(row))
            elif "answer_tokens" in row or "settings" not in row:  # a compare record's
                reqs.append(  # other rows (batch timings) carry settings and no request
                    SimRequest(
                        int(row["prompt_tokens"]),
                        int(row["answer_tokens"]),
                        bool(row.get("image", False)),
                        float(row.get("arrival", 0.0)),
                    )
                )
            else:
                continue
            r = reqs[-1]
            if r.prompt < 0 or r.answer < 0 or not 0 <= r.arrival < math.inf:
                raise ValueError("prompt_tokens, answer_tokens and arrival must be finite and >= 0")
        except (ValueError, KeyError, TypeError) as e:
            raise SeerError(f"--trace {source}: line {i} is not a trace row ({e})") from None
    if not reqs:
        raise SeerError(
            f"--trace {source}: no requests (rows need prompt_tokens and "
            f"answer_tokens, or a compare record's results)"
        )
    reqs.sort(key=lambda r: r.arrival)
    return Trace(path.name, reqs, gen)


def _from_record(row: dict) -> SimRequest:
    res = row["results"]
    base = res.get("baseline@k=1") or next(iter(res.values()))
    measured = {
        RECORD_NAMES[k]: (int(v["window"]), int(v["nfe"]))
        for k, v in res.items()
        if k in RECORD_NAMES
    }
    if "prompt_tokens" not in base:
        raise ValueError("a compare record without prompt_tokens (rerun it)")
    return SimRequest(int(base["prompt_tokens"]), int(base["tokens"]), measured=measured)
