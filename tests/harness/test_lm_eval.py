"""Model `seer` through lm-evaluation-harness's own evaluator, on tiny local tasks (no downloads).

The harness's scores must equal a direct loop over the same JSON Lines data: `DiffusionLM.generate`
one prompt at a time for the generation task, `seer.likelihood.log_likelihood` for the
multiple-choice task.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

lm_eval = pytest.importorskip("lm_eval")

from seer.errors import SeerError  # noqa: E402
from seer.harness.lm_eval import SeerLM  # noqa: E402  (registers model "seer")
from seer.harness.options import HarnessOptions  # noqa: E402
from seer.likelihood import log_likelihood  # noqa: E402

TASKS = Path(__file__).parent / "tasks"


def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (TASKS / name).read_text().splitlines()]


@pytest.fixture(scope="module")
def builtin():
    return HarnessOptions(pretrained="builtin-v1").load()


@pytest.fixture()
def evaluate(monkeypatch, offline):
    """lm-eval's `simple_evaluate` on a task of tests/harness/tasks, offline."""
    from lm_eval.tasks import TaskManager

    monkeypatch.chdir(TASKS.parents[2])  # the task files name their data from the repository root

    def run(task: str, model_args: str):
        tm = TaskManager(include_path=str(TASKS), include_defaults=False)
        return lm_eval.simple_evaluate(
            model="seer",
            model_args=model_args,
            tasks=[task],
            task_manager=tm,
            apply_chat_template=True,
            log_samples=True,
        )

    return run


@pytest.mark.parametrize("use_seer", [False, True], ids=["baseline", "seer"])
def test_generate_until_equals_direct_loop(evaluate, builtin, use_seer):
    out = evaluate("seer_tiny_gen", f"pretrained=builtin-v1,batch_size=4,seer={use_seer}")
    samples = sorted(out["samples"]["seer_tiny_gen"], key=lambda s: s["doc_id"])
    rows = _rows("seer_tiny.jsonl")
    direct = [
        builtin.generate(r["prompt"], gen_length=64, seer=True if use_seer else None).text
        for r in rows
    ]  # one prompt at a time; the task's max_gen_toks is 64
    assert [s["resps"][0][0] for s in samples] == direct
    expected = sum(d == r["answer"] for d, r in zip(direct, rows, strict=True)) / len(rows)
    score = out["results"]["seer_tiny_gen"]["exact_match,none"]
    assert score == pytest.approx(expected)
    assert 0 < score < 1  # the built-in model gets some right and some wrong: a real measurement


def test_multiple_choice_equals_direct_estimator(evaluate, builtin):
    out = evaluate("seer_tiny_mc", "pretrained=builtin-v1,mc_num=8,mc_batch=4,seed=7")
    samples = sorted(out["samples"]["seer_tiny_mc"], key=lambda s: s["doc_id"])
    correct = []
    for r, s in zip(_rows("seer_tiny_mc.jsonl"), samples, strict=True):
        context = builtin.encode(r["prompt"])  # the chat template, as --apply_chat_template
        values = [
            log_likelihood(
                builtin.model,
                context,
                builtin.tokenizer(c, add_special_tokens=False)["input_ids"],
                mask_id=builtin.tokens.mask,
                mc_num=8,
                batch_size=4,
                generator=torch.Generator().manual_seed(7),
            )
            for c in r["choices"]
        ]
        assert [v[0][0] for v in s["resps"]] == pytest.approx(values, rel=1e-6)
        correct.append(max(range(len(values)), key=values.__getitem__) == r["gold"])
    acc = out["results"]["seer_tiny_mc"]["acc,none"]
    assert acc == pytest.approx(sum(correct) / len(correct))


def test_stop_strings_and_max_gen_toks(builtin):
    from lm_eval.api.instance import Instance

    lm = SeerLM.__new__(SeerLM)
    lm.opts, lm.lm, lm.tokenizer = HarnessOptions(batch_size=2), builtin, builtin.tokenizer
    lm.cache_hook = type("Hook", (), {"add_partial": lambda *a: None})()
    prompt = builtin.tokenizer.apply_chat_template(
        [{"role": "user", "content": "say star 12 times"}],
        tokenize=False,
        add_generation_prompt=True,
    )

    def req(**kw):
        return Instance("generate_until", {}, (prompt, {"until": [], "do_sample": False, **kw}), 0)

    full, short, stopped = lm.generate_until(
        [req(max_gen_toks=64), req(max_gen_toks=5), req(max_gen_toks=64, until=["star star"])]
    )
    assert full.split()[:5] == short.split() and len(short.split()) == 5
    assert stopped == "" and full.startswith("star star")


def _suffix_greedy(model, context: list[int], target: list[int], mask: int) -> bool:
    """Reference for is_greedy, written from its definition: fill the masked continuation one
    position per step, the most confident (softmax probability of the argmax) first."""
    seq = torch.tensor(context + [mask] * len(target))[None]
    with torch.no_grad():
        for _ in target:
            masked = (seq[0] == mask).nonzero().flatten()
            probs = model(seq).logits[0, masked].float().softmax(-1)
            conf, best = probs.max(-1)
            j = int(conf.argmax())
            seq[0, masked[j]] = best[j]
    return seq[0, len(context) :].tolist() == target


def test_check_greedy_matches_its_definition(builtin):
    lm = SeerLM.__new__(SeerLM)
    lm.opts = HarnessOptions.from_args(mc_num=2, check_greedy=True)
    lm.lm, lm.tokenizer = builtin, builtin.tokenizer
    lm.cache_hook = type("Hook", (), {"add_partial": lambda *a: None})()
    reqs = []
    for r in _rows("seer_tiny_mc.jsonl")[:4]:
        context = builtin.encode(r["prompt"])
        for c in r["choices"]:
            reqs.append(
                (None, context, builtin.tokenizer(c, add_special_tokens=False)["input_ids"])
            )
    flags = [g for _, g in lm._loglikelihood_tokens(reqs, disable_tqdm=True)]
    expected = [_suffix_greedy(builtin.model, c, t, builtin.tokens.mask) for _, c, t in reqs]
    assert flags == expected
    assert any(flags) and not all(flags)  # right answers come out greedily, wrong ones do not


def test_bad_model_arguments_are_one_line_errors():
    with pytest.raises(SeerError, match="unknown model argument"):
        HarnessOptions.from_args(pretrained="builtin-v1", gen_lenght=64)
    with pytest.raises(SeerError, match="mc_num"):
        HarnessOptions.from_args(mc_num=10, mc_batch=4)
    with pytest.raises(SeerError, match="does not support loglikelihood_rolling"):
        SeerLM.loglikelihood_rolling(None, [])
    assert HarnessOptions.from_args(seer="eos_prob", seer_eos_run=2).seer == {
        "signal": "eos_prob",
        "eos_run": 2,
    }
    assert HarnessOptions.from_args(seer=False).seer is None
    opts = HarnessOptions.from_args(confidence_eos_eot_inf="true", remasking="random")
    assert opts.sampling == {"confidence_eos_eot_inf": True, "remasking": "random"}
    opts = HarnessOptions.from_args(batch_size="10", cfg="0.5", seed="3", mc_num=8)
    assert (opts.batch_size, opts.cfg, opts.seed, opts.mc_batch) == (10, 0.5, 3, 8)
    default = HarnessOptions().batch_size  # the engine's max_batch (one default, seer.spec)
    assert HarnessOptions.from_args(batch_size="auto:4").batch_size == default
    with pytest.raises(SeerError, match="batch_size must be a positive integer"):
        HarnessOptions.from_args(batch_size="many")
