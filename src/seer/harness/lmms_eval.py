"""Model `seer` for lmms-eval (multimodal: LaViDa-LLaDA / LaViDa-Dream, LLaDA-V, MMaDA).

    python -m lmms_eval --model seer \\
        --model_args pretrained=/models/lavida-llada-v1.0-instruct,seer=true \\
        --tasks docvqa_val,chartqa --batch_size 8

lmms-eval finds model `seer` through the `lmms_eval.models` entry point that Seer's package
declares (`seer.harness.lmms_manifest`); importing this module registers it as well, and
`python -m seer.harness.lmms_eval ...` runs lmms-eval's command line with it (for a source
checkout that was not pip-installed).

Model arguments: as for lm-eval (`seer.harness.options.HarnessOptions`).

- `generate_until`: each request's visuals (`doc_to_visual(doc)`) go with its context to the
  step-level engine (`seer.engine.Engine`, at most `batch_size` rows at once); the model's
  prompt processor builds the official conversation (LaViDa: system prompt, "<image>\\n" +
  question) and splices the image features in. A context that already holds "<image>" has it
  removed first (the processor puts it where the official template does). One image per
  request: a document with several visuals (multi-image, video) is refused with an error naming
  it. The window: `gen_length`, else the task's `max_new_tokens`, else the model's default; the
  answer is cut at `until`.
- `loglikelihood` (multiple-choice by likelihood) is not supported: a clear error.
"""

from __future__ import annotations

from tqdm import tqdm

from seer import extras
from seer.engine.request import process
from seer.errors import SeerError
from seer.harness.options import CHUNK, HarnessOptions, answer_text, request_params, run_engine
from seer.models.tokens import IMAGE_TOKEN  # LLaVA's placeholder, as lmms-eval's tasks write it

try:
    if extras.missing("eval"):
        raise ImportError(name=extras.missing("eval"))
    from lmms_eval.api.model import lmms
except ImportError as e:
    hint = (
        'pip install -e ".[eval]" (in the seer checkout), then pip install --no-deps '
        '"lmms-eval==0.7.3"'
    )
    extras.import_failed("eval", "model seer for lmms-eval", e, __name__, hint)


class SeerLMMs(lmms):
    """A Seer `DiffusionLM` (multimodal) behind lmms-eval's model interface."""

    is_simple = True

    def __init__(self, max_batch_size=None, **model_args) -> None:
        super().__init__()
        self.opts = HarnessOptions.from_args(**model_args)
        self.lm = self.opts.load()

    def generate_until(self, requests) -> list[str]:
        jobs, limits = [], []
        for req in requests:
            gen_kwargs = dict(req.args[1])
            if "max_new_tokens" in gen_kwargs:  # lmms-eval's name for lm-eval's max_gen_toks
                gen_kwargs.setdefault("max_gen_toks", gen_kwargs["max_new_tokens"])
            p, max_toks = request_params(self.lm, self.opts, gen_kwargs)
            text, image = self._prompt(req)
            jobs += process(self.lm, text, p, seer=self.opts.seer, image=image)
            limits.append((max_toks, gen_kwargs.get("until")))
        out = []
        bar = tqdm(total=len(requests), disable=self.rank != 0, desc="seer generate_until")
        for lo in range(0, len(jobs), CHUNK):  # the bar moves; the engine batches inside
            for i, res in enumerate(run_engine(self.lm, self.opts, jobs[lo : lo + CHUNK])):
                text = answer_text(self.lm, res, *limits[lo + i])
                self.cache_hook.add_partial("generate_until", requests[lo + i].args[:2], text)
                out.append(text)
            bar.update(len(jobs[lo : lo + CHUNK]))
        bar.close()
        return out

    def _prompt(self, request):
        """(question text, image or None) of one request."""
        context, _, doc_to_visual, doc_id, task, split = request.args[:6]
        visuals = doc_to_visual(self.task_dict[task][split][doc_id]) if doc_to_visual else None
        visuals = [v for v in (visuals or []) if v is not None]
        if len(visuals) > 1:
            raise SeerError(
                f"{task} document {doc_id} has {len(visuals)} visuals; model seer takes one image "
                "per request (multi-image and video tasks are not supported)"
            )
        if visuals and not self.lm.multimodal:
            raise SeerError(f"{task} gives images, but {self.lm.name} is a text model")
        text = context.replace(f"{IMAGE_TOKEN}\n", "", 1).replace(IMAGE_TOKEN, "", 1).strip()
        return text or context, (visuals[0] if visuals else None)

    def loglikelihood(self, requests):
        raise SeerError(
            "model seer does not support loglikelihood in lmms-eval (multiple-choice by "
            "likelihood); use the task's generation variant"
        )

    def generate_until_multi_round(self, requests):
        raise SeerError("model seer does not support multi-round generation in lmms-eval")


def register() -> None:
    """Put model `seer` into lmms-eval's registry (the entry point does this when installed)."""
    from lmms_eval.models import MODEL_REGISTRY_V2

    from seer.harness import lmms_manifest

    MODEL_REGISTRY_V2.register_manifest(lmms_manifest(), overwrite=True)


register()


def main() -> None:
    """lmms-eval's command line, with model `seer` registered (for a source checkout)."""
    from lmms_eval.cli.dispatch import main as lmms_main

    lmms_main()


if __name__ == "__main__":
    main()
