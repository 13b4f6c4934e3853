"""Model `seer` for lm-evaluation-harness (`pip install -e ".[eval]"`).

    python -m seer.harness.lm_eval --model seer \\
        --model_args pretrained=/models/LLaDA-8B-Base,gen_length=256,steps=256,seer=true \\
        --tasks gsm8k --batch_size 8

`python -m seer.harness.lm_eval` is lm-eval's own command line with this module imported (lm-eval
0.4.13 reads no plugin entry points for models: importing the module is what registers `seer`);
`lm_eval.simple_evaluate(model="seer", ...)` works the same after `import seer.harness.lm_eval`.

Model arguments: see `seer.harness.options.HarnessOptions` (pretrained, seer, seer_<option>,
gen_length, steps, block_length, cache, dtype, device, batch_size, mc_num, mc_batch, cfg, seed).

- `generate_until`: every request goes to the step-level engine (`seer.engine.Engine`, at
  most `batch_size` rows at once, requests with other generation arguments side by side); the
  answer is cut to `max_gen_toks` tokens and at the first stop string (`until`).
  `--apply_chat_template` formats prompts with the tokenizer's chat template
  (`apply_chat_template` below); a prompt that already starts with the BOS token is tokenized
  without adding special tokens again.
- `loglikelihood`: LLaDA's Monte-Carlo estimator (`seer.likelihood`, golden-tested against the
  official `get_log_likelihood`), `mc_num` samples in forwards of `mc_batch`; Dream-style models
  get their logit shift. Each request's draws start from `seed` afresh, so its value is what the
  official function returns after `torch.manual_seed(seed)`, whatever the order of the requests
  (and the choices of one question share their random masks: common random numbers). Contexts and
  continuations are tokenized as lm-eval's `TemplateLM` does (trailing spaces of the context move
  to the continuation). `is_greedy` is False unless `check_greedy=true` (the official LLaDA
  eval's `is_check_greedy`, which its commands turn off; only LAMBADA-style metrics use it): then
  the continuation's positions are decoded one token per step, most confident first, through
  the engine, and compared with the continuation.
- `loglikelihood_rolling` (perplexity tasks) is not supported: a clear error.
"""

from __future__ import annotations

import torch
from tqdm import tqdm

from seer import extras
from seer.engine.request import process
from seer.errors import SeerError
from seer.harness.options import CHUNK, HarnessOptions, answer_text, request_params, run_engine
from seer.likelihood import log_likelihood

try:
    from lm_eval.api.model import TemplateLM
    from lm_eval.api.registry import register_model
except ImportError as e:
    extras.import_failed("eval", "model seer for lm-evaluation-harness", e, __name__)


@register_model("seer")
class SeerLM(TemplateLM):
    """A Seer `DiffusionLM` behind lm-eval's model interface."""

    def __init__(self, max_batch_size=None, **model_args) -> None:
        super().__init__()
        self.opts = HarnessOptions.from_args(**model_args)
        self.lm = self.opts.load()
        if self.lm.tokenizer is None:
            raise SeerError("model seer needs a tokenizer in the model folder")
        self.tokenizer = self.lm.tokenizer

    # -- tokens -----------------------------------------------------------------------------
    @property
    def eot_token_id(self) -> int:
        return self.lm.tokens.eos

    @property
    def prefix_token_id(self) -> int:
        bos = self.lm.tokens.bos
        return self.eot_token_id if bos is None else bos

    @property
    def max_length(self) -> int:
        return self.lm.max_length

    @property
    def tokenizer_name(self) -> str:
        return getattr(self.tokenizer, "name_or_path", "") or self.lm.name

    def tok_encode(
        self, string: str, add_special_tokens: bool | None = None, **kwargs
    ) -> list[int]:
        if add_special_tokens is None:  # the tokenizer's own default, unless BOS is there
            bos = self.tokenizer.bos_token
            add_special_tokens = not (bos and string.startswith(bos))
        return list(self.tokenizer(string, add_special_tokens=add_special_tokens)["input_ids"])

    def apply_chat_template(self, chat_history: list[dict], add_generation_prompt=True) -> str:
        if not getattr(self.tokenizer, "chat_template", None):
            raise SeerError(f"{self.lm.name} has no chat template; drop --apply_chat_template")
        return self.tokenizer.apply_chat_template(
            chat_history, tokenize=False, add_generation_prompt=add_generation_prompt
        )

    # -- generation -------------------------------------------------------------------------
    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        jobs, limits = [], []
        for req in requests:
            context, gen_kwargs = req.args[0], req.args[1]
            p, max_toks = request_params(self.lm, self.opts, gen_kwargs)
            ids = self.tok_encode(context)
            jobs += process(self.lm, ids, p, seer=self.opts.seer, chat=False)
            limits.append((max_toks, gen_kwargs.get("until")))
        out = []
        with tqdm(total=len(requests), disable=disable_tqdm, desc="seer generate_until") as bar:
            for lo in range(0, len(jobs), CHUNK):  # the bar moves; the engine batches inside
                for i, res in enumerate(run_engine(self.lm, self.opts, jobs[lo : lo + CHUNK])):
                    text = answer_text(self.lm, res, *limits[lo + i])
                    self.cache_hook.add_partial("generate_until", requests[lo + i].args, text)
                    out.append(text)
                bar.update(len(jobs[lo : lo + CHUNK]))
        return out

    # -- likelihood -------------------------------------------------------------------------
    def _loglikelihood_tokens(self, requests, disable_tqdm: bool = False, **kwargs):
        out = []
        for _, context, continuation in tqdm(
            requests, disable=disable_tqdm, desc="seer loglikelihood"
        ):
            if len(context) + len(continuation) > self.max_length:
                raise SeerError(
                    f"context + continuation of {len(context) + len(continuation)} tokens exceed "
                    f"the model's context of {self.max_length}"
                )
            value = log_likelihood(
                self.lm.model,
                context,
                continuation,
                mask_id=self.lm.tokens.mask,
                mc_num=self.opts.mc_num,
                batch_size=self.opts.mc_samples_per_forward,
                cfg_scale=self.opts.cfg,
                generator=torch.Generator().manual_seed(self.opts.mc_seed),
            )
            out.append(value)
        greedy = self._greedy(requests) if self.opts.check_greedy else [False] * len(out)
        for (key, _, _), value, flag in zip(requests, out, greedy, strict=True):
            if key is not None:
                self.cache_hook.add_partial("loglikelihood", key, (value, flag))
        return list(zip(out, greedy, strict=True))

    def _greedy(self, requests) -> list[bool]:
        """is_greedy: does decoding the continuation's positions one token per step, most
        confident first (LLaDA's `low_confidence`, greedy, one block), give the continuation?
        The official eval's `suffix_greedy_prediction`, run by the one denoising loop."""
        if self.lm.default_rule != "low_confidence":
            raise SeerError("check_greedy is defined for LLaDA-family models (low_confidence)")
        jobs = []
        for _, context, continuation in requests:
            n = len(continuation)
            p = self.lm.sampling(
                gen_length=n,
                steps=n,
                block_length=n,
                remasking="low_confidence",
                temperature=0.0,
                cfg_scale=self.opts.cfg,
                logits_eos_inf=False,
                confidence_eos_eot_inf=False,
            )
            jobs += process(self.lm, list(context), p, chat=False)
        results = run_engine(self.lm, self.opts, jobs)
        return [r.token_ids == list(c) for r, (_, _, c) in zip(results, requests, strict=True)]

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise SeerError(
            "model seer does not support loglikelihood_rolling (perplexity tasks such as "
            "wikitext): a masked-diffusion model has no left-to-right token likelihoods"
        )


def main() -> None:
    """lm-eval's command line, with model `seer` registered."""
    from lm_eval.__main__ import cli_evaluate

    cli_evaluate()


if __name__ == "__main__":
    main()
