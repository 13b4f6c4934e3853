"""A perfect model of ParallelBench's list tasks, run by our loop, against its closed forms.

ParallelBench (Kang et al., ICLR 2026, arXiv 2510.04767, furiosa-ai/ParallelBench) shows that
parallel decoding loses accuracy even for a *perfect* model: one that knows the exact marginal of
every masked answer position given the tokens revealed so far. Tokens revealed in the same step
are drawn independently from their marginals, so a step that reveals several positions of an
answer whose tokens depend on each other can produce a combination no answer has. This module
turns that into a check of our parallel-decoding semantics that needs no training:

- `MarginalsModel`: a model for `DenoisingLoop` whose logits at each masked answer position are
  the exact conditional marginal of a list task given the currently revealed answer tokens, over a
  toy vocabulary where each list item is one token (past the list: [EOS]).
- `closed_form`: the accuracy of that model with c_t positions revealed at step t.
- `exact_accuracy`: the same number by brute-force enumeration of every decoding path, from the
  task's answer distribution alone (no closed form, no `MarginalsModel`), for small lists.
- `measure`: our loop driven by `MarginalsModel` at temperature 1 (many seeded rows in one batch),
  scored with the task's official metric (`score`).

Tasks (n distinct items x_1..x_n; the answer distribution a perfect model knows):
- copy: the list itself. Every marginal is a point mass: accuracy 1 at any k.
- shuffle: a uniformly random permutation of the list. ParallelBench's metric
  (`list_shuffle_score`) asks for a permutation that differs from the input.
- replace_random: the list with the item at a uniformly random index replaced by a given new
  word w (not in the list). Metric (`list_random_replace_score` with the word given): the first
  w in the answer marks the index, and the rest must equal the input.

The closed forms are derived here (the paper's formulas were not at hand: its repository holds no
code for them), and `exact_accuracy` checks each against every decoding path for n <= 5.
Setting: the answer window holds the n list positions only; step t (t = 1..T) reveals c_t of the
m_t = n - c_1 - ... - c_{t-1} still-masked positions (the loop's linear schedule: k each when k
divides n). ParallelBench's setting is the draw itself (each step's tokens sampled independently
from the marginals); which positions a step reveals is the unmasking rule's. For copy and
shuffle the rule does not matter (below); for replace_random it does, and both LLaDA rules have
their closed form.

shuffle. While the revealed tokens are distinct, the answer's conditional distribution is a
uniform permutation of the m_t unrevealed items over the m_t masked positions, so every masked
position's marginal is uniform over those m_t items, whichever positions are masked. The c_t
draws of the step are independent: all distinct with probability m_t! / ((m_t - c_t)! m_t^c_t),
and then the state is consistent again; any repeat leaves a duplicate in the answer (failure).
Positions are chosen independently of the drawn values under `random` remasking, and under
`low_confidence` too (every confidence is 1/m_t). So
    P(permutation) = prod_t prod_{j < c_t} (1 - j / m_t),
    P(answer == input) = prod_t m_t^-c_t  (each draw must hit its own position's item),
    accuracy (the official metric) = P(permutation) - P(answer == input).
k = 1 gives 1 - 1/n!; one step of n gives n!/n^n - n^-n.

replace_random, `random` remasking. While w is not revealed, the index is uniform over the m_t
masked positions: each masked marginal is w with probability 1/m_t, else the position's own
item; once w is revealed every marginal is a point mass. Every non-w draw is the right item, so
success is "exactly one w in the end". A step's c_t independent draws hold no w with
probability q_t = (1 - 1/m_t)^c_t and exactly one with probability c_t/m_t (1 - 1/m_t)^(c_t - 1):
    accuracy = sum_t (prod_{s < t} q_s) c_t/m_t (1 - 1/m_t)^(c_t - 1).
k = 1 gives 1; one step of n gives (1 - 1/n)^(n - 1) (about 1/e).

replace_random, `low_confidence` remasking. LLaDA's rule draws a token at every masked position,
then reveals the c_t most confident; w's confidence is 1/m_t and a kept item's 1 - 1/m_t. For
m_t > 2 the kept items win, so with J ~ Binomial(m_t, 1/m_t) draws of w the step reveals
max(0, c_t - (m_t - J)) of them: the run goes on with probability P(J <= m_t - c_t) and succeeds
with P(J = m_t - c_t + 1). For m_t <= 2 every confidence is 1/2 (or one position is left), the
choice does not depend on the values, and the step is the `random` one. The rule delays w until
it is forced, in one step, onto several positions at once: at n = 6, k = 3 it reaches 0.449
where random positions reach 0.604.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from functools import cache
from itertools import combinations, permutations, product

import torch
from torch import nn

from seer.diffusion.loop import DenoisingLoop, make_canvas
from seer.errors import SeerError
from seer.sampling import SamplingParams, TokenIds

TASKS = ("copy", "shuffle", "replace_random")
REMASKING = ("random", "low_confidence")  # the LLaDA rules this module has closed forms for


def _check(task: str, remasking: str = "random") -> None:
    if task not in TASKS:
        raise SeerError(f"unknown list task {task!r}; choose one of {', '.join(TASKS)}")
    if remasking not in REMASKING:
        raise SeerError(f"no closed form for remasking {remasking!r}; use {' or '.join(REMASKING)}")


# -- the closed forms ---------------------------------------------------------------------------
def step_counts(n: int, k: int) -> list[int]:
    """Positions revealed per step for n positions at k tokens per step: ceil(n / k) steps, split
    as the loop's linear schedule does (LLaDA's even split, remainder first)."""
    if not 1 <= k <= n:
        raise SeerError(f"tokens per step must be in 1..{n}, got {k}")
    steps = -(-n // k)
    return [n // steps + (t < n % steps) for t in range(steps)]


def closed_form(task: str, counts: list[int], remasking: str = "random") -> float:
    """Accuracy of the perfect model revealing `counts[t]` positions at step t (module
    docstring for the derivations), scored with the task's official metric."""
    _check(task, remasking)
    if not counts or min(counts) < 1:
        raise SeerError(f"every step reveals at least one position, got counts {counts}")
    m, acc, alive = sum(counts), 0.0, 1.0
    if task == "copy":
        return 1.0
    if task == "shuffle":
        perm, same = 1.0, 1.0
        for c in counts:
            perm *= math.prod(1 - j / m for j in range(c))
            same *= m**-c
            m -= c
        return perm - same
    for c in counts:  # replace_random: `alive` = w not revealed yet
        if remasking == "low_confidence" and m > 2:
            pj = [math.comb(m, j) * (1 / m) ** j * (1 - 1 / m) ** (m - j) for j in range(m + 1)]
            one, none = pj[m - c + 1], sum(pj[: m - c + 1])
        else:
            one, none = c / m * (1 - 1 / m) ** (c - 1), (1 - 1 / m) ** c
        acc, alive, m = acc + alive * one, alive * none, m - c
    return min(acc, 1.0)  # k = 1 sums n terms of 1/n


# -- the official metrics, on token lists -------------------------------------------------------
def score(task: str, items: list[int], answer: list[int], word: int | None = None) -> float:
    """The task's ParallelBench metric (`metrics.py`) on item tokens: copy `list_match_score`,
    shuffle `list_shuffle_score`, replace_random `list_random_replace_score` (word given)."""
    _check(task)
    items, answer = list(items), list(answer)
    if task == "copy":
        return float(answer == items)
    if task == "shuffle":
        return float(sorted(answer) == sorted(items) and answer != items)
    if word not in answer or len(answer) != len(items):
        return 0.0
    expected = list(items)
    expected[answer.index(word)] = word
    return float(answer == expected)


def answers(task: str, items: tuple[int, ...], word: int | None = None) -> list[tuple[int, ...]]:
    """The support of the task's answer distribution (each answer equally likely)."""
    _check(task)
    if task == "copy":
        return [items]
    if task == "shuffle":
        return list(permutations(items))
    return [items[:i] + (word,) + items[i + 1 :] for i in range(len(items))]


# -- brute force --------------------------------------------------------------------------------
def exact_accuracy(task: str, n: int, counts: list[int], remasking: str = "random") -> float:
    """Accuracy by enumerating every decoding path, with the marginals computed from the answer
    distribution's support by conditioning on the revealed tokens (small n only: the paths grow
    as n^n). `random` remasking: every set of c_t masked positions is equally likely, draws only
    there. `low_confidence`: a draw at every masked position, then the c_t with the highest
    p(draw) are revealed, ties by position (any rule that breaks ties without looking at the
    drawn values gives the same accuracy here)."""
    _check(task, remasking)
    items, word = tuple(range(n)), n
    support = answers(task, items, word)

    @cache
    def go(state: tuple[int | None, ...], t: int) -> float:
        if t == len(counts):
            return score(task, list(items), list(state), word)
        fits = [
            a for a in support if all(s is None or s == v for s, v in zip(state, a, strict=True))
        ]
        if not fits:  # no answer holds the revealed tokens: the final answer is not one either
            return 0.0
        masked = [i for i, s in enumerate(state) if s is None]
        marg = {i: Counter(a[i] for a in fits) for i in masked}  # counts over len(fits)
        total, c, f = 0.0, counts[t], len(fits)
        if remasking == "random":
            subsets = list(combinations(masked, c))
            for sub in subsets:
                for draw in product(*(marg[i].items() for i in sub)):
                    p = math.prod(w / f for _, w in draw) / len(subsets)
                    total += p * go(_put(state, sub, [v for v, _ in draw]), t + 1)
            return total
        for draw in product(*(marg[i].items() for i in masked)):
            p = math.prod(w / f for _, w in draw)
            ranked = sorted(range(len(masked)), key=lambda j: (-draw[j][1], masked[j]))[:c]
            sub = [masked[j] for j in ranked]
            total += p * go(_put(state, sub, [draw[j][0] for j in ranked]), t + 1)
        return total

    return go((None,) * n, 0)


def _put(state: tuple, positions, values) -> tuple:
    out = list(state)
    for i, v in zip(positions, values, strict=True):
        out[i] = v
    return tuple(out)


# -- the model ----------------------------------------------------------------------------------
@dataclass(slots=True)
class MarginalsOutput:
    logits: torch.Tensor  # (B, columns asked for, V) log-marginals; -inf where impossible
    past_key_values: None = None  # no cache: every step is a full forward


class MarginalsModel(nn.Module):
    """Exact conditional marginals of a list task as logits, for `DenoisingLoop`.

    Canvas layout: the prompt is the n items (then the new word for replace_random); the answer
    window starts at column `prompt_len`. Its first n positions are the list, later ones [EOS].
    At a masked list position the logits are log P(token | revealed answer tokens); the loop's
    temperature-1 sampling then draws from exactly that. Revealed tokens that no answer holds
    (a repeat after a parallel step) leave the run failed whatever follows; the marginals stay
    defined: shuffle draws from the items not yet revealed, replace_random from point masses."""

    # the model protocol the loop reads (seer.models.base)
    logits_shift = 0
    confidence_dtype = None
    compact_topk = False
    default_rule = "low_confidence"

    def __init__(self, task: str, n: int, tokens: TokenIds, vocab: int) -> None:
        super().__init__()
        _check(task)
        self.task, self.n, self.tokens, self.vocab = task, n, tokens, vocab
        self.prompt_len = n + (task == "replace_random")

    def forward(
        self, input_ids, attention_mask=None, position_ids=None, logits_positions=None, **_
    ) -> MarginalsOutput:
        x = input_ids  # (B, S)
        probs = x.new_zeros((*x.shape, self.vocab), dtype=torch.float32)
        probs[:, : self.prompt_len] = 1 / self.vocab  # prompt columns: never read
        probs[:, self.prompt_len :] = self.marginals(x)
        logits = probs.log()
        return MarginalsOutput(logits if logits_positions is None else logits[:, logits_positions])

    def marginals(self, x: torch.Tensor) -> torch.Tensor:
        """(B, S) canvas -> (B, W, V) answer-position marginals given the revealed tokens."""
        n, v, mask = self.n, self.vocab, self.tokens.mask
        items, answer = x[:, :n], x[:, self.prompt_len :]  # (B, n), (B, W)
        out = answer.new_zeros((*answer.shape, v), dtype=torch.float32)
        out[:, n:, self.tokens.eos] = 1.0
        lst = answer[:, :n]
        masked = lst == mask  # (B, n)
        own = nn.functional.one_hot(items, v).float()  # (B, n, V): each position's item
        if self.task == "copy":
            out[:, :n] = own
        elif self.task == "shuffle":  # uniform over the items not yet revealed (a multiset)
            seen = nn.functional.one_hot(lst, v).float() * (~masked)[..., None]
            left = (own.sum(1) - seen.sum(1)).clamp(min=0)  # (B, V)
            out[:, :n] = (left / left.sum(-1, keepdim=True).clamp(min=1))[:, None]
        else:  # replace_random: the word w.p. 1/m until it is revealed, else the own item
            word = x[:, n]
            placed = (lst == word[:, None]).any(1)
            p = torch.where(placed, 0.0, 1 / masked.sum(1).clamp(min=1).float())  # (B,)
            out[:, :n] = own * (1 - p)[:, None, None]
            out[:, :n].scatter_(
                -1, word[:, None, None].expand(-1, n, 1), p[:, None, None].expand(-1, n, 1)
            )
        return out


# -- the measurement ----------------------------------------------------------------------------
@dataclass(slots=True)
class Measured:
    task: str  # a TASKS name
    n: int  # list length (the answer window)
    k: int  # tokens per step (steps = ceil(n / k))
    remasking: str  # the loop's unmasking rule
    correct: int  # rows the official metric scores 1
    trials: int  # rows run
    nfe: int  # forwards of the run (one per step)

    @property
    def accuracy(self) -> float:
        return self.correct / self.trials


def measure(
    task: str, n: int, k: int, trials: int, seed: int = 0, remasking: str = "random", pool: int = 32
) -> Measured:
    """`trials` rows of the task (n distinct items each, drawn from `pool` item tokens, and the
    new word for replace_random), decoded in one batch by our loop with `MarginalsModel` at
    temperature 1, k tokens per step; each row scored with the official metric."""
    _check(task, remasking)
    if pool < n + 1:
        raise SeerError(f"an item pool of {pool} cannot hold {n} distinct items and a new word")
    tokens = TokenIds(mask=pool + 1, eos=pool, pad=pool)
    g = torch.Generator().manual_seed(seed)
    draw = torch.rand(trials, pool, generator=g).argsort(dim=1)[:, : n + 1]  # (trials, n + 1)
    prompts = draw[:, : n + (task == "replace_random")].tolist()
    model = MarginalsModel(task, n, tokens, pool + 2)
    p = SamplingParams(
        gen_length=n,
        steps=len(step_counts(n, k)),
        temperature=1.0,
        remasking=remasking,
        seed=seed + 1,
    )
    out = DenoisingLoop(model, tokens).run(make_canvas(prompts, n, tokens, "cpu"), p)
    items, words, got = draw[:, :n].tolist(), draw[:, n].tolist(), out.answer.tolist()
    correct = sum(score(task, i, a, w) for i, a, w in zip(items, got, words, strict=True))
    return Measured(task, n, k, remasking, int(correct), trials, out.nfe)


def wilson(correct: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a success rate (95 % by default)."""
    if trials == 0:
        return 0.0, 1.0
    p = correct / trials
    mid = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = (
        z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    )
    return max(0.0, min(p, mid - half)), min(1.0, max(p, mid + half))  # holds p (rounding)
