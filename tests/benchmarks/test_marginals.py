"""Our loop, driven by a perfect model of ParallelBench's list tasks (exact conditional marginals,
temperature 1), reproduces the closed-form accuracy of parallel decoding within sampling error;
the closed forms equal a brute-force enumeration; and the check fails for a wrong semantics."""

from __future__ import annotations

import math
import random

import pytest
import torch

from seer.errors import SeerError
from seer.sampling import TokenIds
from seerbench.marginals import (
    REMASKING,
    TASKS,
    MarginalsModel,
    answers,
    closed_form,
    exact_accuracy,
    measure,
    score,
    step_counts,
    wilson,
)

TRIALS = 2000  # rows per measured point: sigma <= 0.011


def _within(got: float, p: float, trials: int = TRIALS, z: float = 4.0) -> bool:
    return abs(got - p) <= z * math.sqrt(p * (1 - p) / trials)


@pytest.mark.parametrize("remasking", REMASKING)
@pytest.mark.parametrize("task", TASKS)
def test_closed_forms_equal_the_enumeration_of_every_decoding_path(task, remasking):
    for n in range(1, 6):
        for k in range(1, n + 1):
            counts = step_counts(n, k)
            want = exact_accuracy(task, n, counts, remasking)
            assert closed_form(task, counts, remasking) == pytest.approx(want, abs=1e-12)


def test_closed_forms_at_the_ends_and_where_the_rules_differ():
    for n in (3, 6, 12):
        one = step_counts(n, 1)
        assert closed_form("shuffle", one) == pytest.approx(1 - 1 / math.factorial(n))
        assert closed_form("shuffle", [n]) == pytest.approx(math.factorial(n) / n**n - n**-n)
        assert closed_form("replace_random", one) == pytest.approx(1.0)
        assert closed_form("replace_random", [n]) == pytest.approx((1 - 1 / n) ** (n - 1))
        assert closed_form("copy", [n]) == 1.0
    # LLaDA's low-confidence rule holds the new word back until several positions must take it
    assert closed_form("replace_random", [3, 3]) == pytest.approx(0.60442, abs=1e-5)
    assert closed_form("replace_random", [3, 3], "low_confidence") == pytest.approx(
        0.44861, abs=1e-5
    )
    # the enumeration is not a copy of the closed form: it tells the step counts apart
    assert exact_accuracy("shuffle", 4, [2, 2]) != pytest.approx(closed_form("shuffle", [1] * 4))


def test_step_counts_follow_the_linear_schedule():
    assert step_counts(12, 4) == [4, 4, 4]
    assert step_counts(5, 2) == [2, 2, 1]
    assert step_counts(7, 7) == [7]
    for bad in (0, 8):
        with pytest.raises(SeerError, match="tokens per step"):
            step_counts(7, bad)


def test_the_official_metrics_on_token_lists():
    items = [4, 7, 1, 9]
    assert score("copy", items, [4, 7, 1, 9]) == 1.0
    assert score("copy", items, [4, 7, 9, 1]) == 0.0
    assert score("shuffle", items, [9, 4, 1, 7]) == 1.0
    assert score("shuffle", items, items) == 0.0  # the official metric wants a different order
    assert score("shuffle", items, [9, 9, 1, 7]) == 0.0
    assert score("replace_random", items, [4, 3, 1, 9], word=3) == 1.0
    assert score("replace_random", items, [4, 3, 3, 9], word=3) == 0.0  # two new words
    assert score("replace_random", items, [4, 7, 1, 9], word=3) == 0.0  # none
    assert score("replace_random", items, [4, 3, 9, 9], word=3) == 0.0  # another item changed
    with pytest.raises(SeerError, match="unknown list task"):
        score("sort", items, items)


def _support_marginal(task, items, word, state, i, vocab):
    fits = [
        a
        for a in answers(task, items, word)
        if all(s is None or s == v for s, v in zip(state, a, strict=True))
    ]
    out = torch.zeros(vocab)
    for a in fits:
        out[a[i]] += 1 / len(fits)
    return out


@pytest.mark.parametrize("task", TASKS)
def test_the_model_gives_the_conditionals_of_the_answer_distribution(task):
    """At every masked position of every consistent partial answer (n = 4), the model's
    marginal is the answer distribution's conditional given the revealed tokens."""
    n, pool = 4, 8
    tokens = TokenIds(mask=pool + 1, eos=pool, pad=pool)
    model = MarginalsModel(task, n, tokens, pool + 2)
    items, word = (5, 2, 7, 0), 3
    prompt = list(items) + ([word] if task == "replace_random" else [])
    rng, checked = random.Random(0), 0
    for full in answers(task, items, word):
        for hidden in range(1 << n):
            state = tuple(None if hidden >> i & 1 else v for i, v in enumerate(full))
            if task == "shuffle" and rng.random() > 0.3:  # 24 x 16 states: a sample
                continue
            row = prompt + [tokens.mask if s is None else s for s in state] + [tokens.mask]
            x = torch.tensor([row])
            probs = model(x).logits.exp()[0, len(prompt) :]  # (n + 1, V)
            assert (
                probs[n].tolist()
                == torch.nn.functional.one_hot(torch.tensor(pool), pool + 2).tolist()
            )
            for i in (i for i, s in enumerate(state) if s is None):
                want = _support_marginal(task, items, word, state, i, pool + 2)
                assert torch.allclose(probs[i], want, atol=1e-6), (state, i)
                checked += 1
    assert checked > 10


CASES = [  # (task, remasking, n, k)
    ("shuffle", "random", 6, 2),
    ("shuffle", "random", 6, 3),
    ("shuffle", "random", 8, 4),
    ("shuffle", "low_confidence", 6, 2),
    ("replace_random", "random", 6, 3),
    ("replace_random", "random", 8, 8),
    ("replace_random", "low_confidence", 6, 3),
    ("copy", "low_confidence", 6, 6),
]


@pytest.mark.parametrize(("task", "remasking", "n", "k"), CASES)
def test_our_loop_reproduces_the_closed_form(task, remasking, n, k):
    got = measure(task, n, k, TRIALS, seed=0, remasking=remasking)
    p = closed_form(task, step_counts(n, k), remasking)
    assert got.nfe == len(step_counts(n, k))  # one forward per step: k tokens each
    if p == 1.0:
        assert got.correct == got.trials
    else:
        assert 0 < p < 1 and _within(got.accuracy, p), (got.accuracy, p)


class Stale(MarginalsModel):
    """A wrong loop, seen from the model: each forward sees none of the tokens revealed by
    earlier steps (as a stale cache would), so every step draws from the step-0 marginals."""

    def marginals(self, x):
        x = x.clone()
        x[:, self.prompt_len :] = self.tokens.mask
        return super().marginals(x)


def test_the_check_fails_for_wrong_semantics(monkeypatch):
    shuffle = measure("shuffle", 6, 2, TRIALS, seed=0)
    assert _within(shuffle.accuracy, closed_form("shuffle", [2, 2, 2]))
    # the closed form of another k
    for k in (1, 3):
        assert not _within(shuffle.accuracy, closed_form("shuffle", step_counts(6, k)))
    # draws of a step conditioned on each other: the same law as one token per step
    seq = measure("shuffle", 6, 1, TRIALS, seed=0)
    assert not _within(seq.accuracy, closed_form("shuffle", [2, 2, 2]))
    # positions chosen by confidence where the closed form assumes random ones
    lc = measure("replace_random", 6, 3, TRIALS, seed=0, remasking="low_confidence")
    assert not _within(lc.accuracy, closed_form("replace_random", [3, 3], "random"))
    # a model that never sees the revealed tokens
    monkeypatch.setattr("seerbench.marginals.MarginalsModel", Stale)
    stale = measure("shuffle", 6, 2, TRIALS, seed=0)
    assert not _within(stale.accuracy, closed_form("shuffle", [2, 2, 2]))


def test_bad_requests_get_one_clear_line():
    with pytest.raises(SeerError, match="unknown list task 'sort'"):
        measure("sort", 6, 2, 10)
    with pytest.raises(SeerError, match="no closed form for remasking 'entropy'"):
        measure("shuffle", 6, 2, 10, remasking="entropy")
    with pytest.raises(SeerError, match="cannot hold 6 distinct items"):
        measure("shuffle", 6, 2, 10, pool=6)
    with pytest.raises(SeerError, match="tokens per step must be in 1..6"):
        measure("shuffle", 6, 7, 10)
    with pytest.raises(SeerError, match="at least one position"):
        closed_form("shuffle", [2, 0])


def test_the_wilson_interval_holds_the_rate():
    for correct, trials in ((0, 10), (10, 10), (3, 10), (2000, 2000), (1, 2000)):
        lo, hi = wilson(correct, trials)
        assert 0 <= lo <= correct / trials <= hi <= 1
    lo, hi = wilson(50, 100)
    assert (lo, hi) == pytest.approx((0.4038, 0.5962), abs=1e-4)
