"""`score(example, text)`: how good an answer is, for every source that has a reference or a
checker.

* An example with a `metric` (ParallelBench rows) is scored by that task's official metric,
  re-implemented in `seer.data.parallelbench_metrics` (0.0 or 1.0 per answer; ``strict=True``
  gives the official ``score_strict``). Metrics that need an external service or model
  (words-to-sentence, paraphrase, summarize) are left out: `unscorable` says why.
* Any other example with a reference `answer` (a dataset file's ``answer`` column, the built-in
  tasks ``builtin`` / ``builtin-vqa``) is scored by exact match of the stripped texts — the
  check the built-in models were trained and measured with (`seer.demo.train.exact_match`,
  `seer.demo.train_vqa.exact_match`); their tasks have no other checker.
"""

from __future__ import annotations

from seer.data.example import Example
from seer.data.parallelbench_metrics import LEFT_OUT, METRICS
from seer.errors import SeerError


def unscorable(example: Example) -> str | None:
    """Why `example` cannot be scored (None: it can)."""
    if example.metric is not None:
        if example.metric in METRICS:
            return None
        why = LEFT_OUT.get(example.metric, "seer does not re-implement it")
        return f"metric {example.metric} is left out: {why}"
    if example.answer is None:
        return "no reference answer"
    return None


def scorable(example: Example) -> bool:
    return unscorable(example) is None


def score(example: Example, text: str, *, strict: bool = False) -> float:
    """The score of answer `text` for `example` in [0, 1] (see the module docstring); a
    `SeerError` naming the reason when the example cannot be scored."""
    why = unscorable(example)
    if why is not None:
        raise SeerError(f"example {example.id} cannot be scored: {why}")
    if example.metric is None:
        return float(text.strip() == example.answer.strip())
    return METRICS[example.metric](text, example.reference, strict=strict)
