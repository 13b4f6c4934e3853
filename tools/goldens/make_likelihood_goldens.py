#!/usr/bin/env python
"""Golden values of the Monte-Carlo log-likelihood, from the *official* LLaDA estimator.

Runs ``get_log_likelihood(model, prompt, answer, mc_num, batch_size, cfg_scale, mask_id)`` of
``get_log_likelihood.py`` (github.com/ML-GSAI/LLaDA) on the tiny golden checkpoints beside the
other goldens (``tests/fixtures/golden/llada`` and ``.../dream``, loaded with the official model
classes of NVlabs/Fast-dLLM, as ``make_goldens.py`` does), each case after
``torch.manual_seed(seed)``, and writes ``tests/fixtures/golden/likelihood/golden.json``.
``tests/test_likelihood.py`` checks that ``seer.likelihood.log_likelihood`` gives the same
numbers with ``generator=torch.Generator().manual_seed(seed)``.

Dream: the official LLaDA estimator is run on the official ``DreamModel`` wrapped so that its
logits are shifted right by one position (position j's logits predict token j + 1 in Dream),
the shift Dream's own evaluation code (``eval/eval.py`` of HKUNLP/Dream, ``get_logits``)
applies before its loss. The wrapper is written here; no official file is changed.

This script contains none of the official code; it imports it at run time from checkouts that
live outside this repository. Recipe (what produced the committed file)::

    python3 -m venv /work/venvs/harness-golden && . /work/venvs/harness-golden/bin/activate
    pip install torch==2.13.0 transformers==4.49.0 accelerate==0.34.2 einops safetensors numpy
    # checkouts: ML-GSAI/LLaDA @ b7e6c3565f194352da44b38dd12b6970597309f3 (get_log_likelihood.py)
    #            NVlabs/Fast-dLLM @ 24cc59e75f20a6384bae8c905965bb090b96388e (llada/model,
    #            dream/model)
    python tools/goldens/make_likelihood_goldens.py --llada /src/LLaDA --fast-dllm /src/Fast-dLLM \
        --out tests/fixtures/golden   # (+ --llada-commit/--fast-dllm-commit for plain folders)

The official remote code needs ``transformers<5`` (4.49.0 was used). ``TORCHDYNAMO_DISABLE=1``
is set before torch is imported (Fast-dLLM's ``modeling_llada.py`` wraps SDPA in
``@torch.compile()``; see ``make_goldens.py``). Everything runs on CPU in float32; nothing
touches the network.
"""

from __future__ import annotations

import os

os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")  # must happen before torch is imported

import argparse
import inspect
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from goldens_common import git_rev, import_dir_as_package, import_file  # noqa: E402

# (name, checkpoint, prompt length, answer length, mc_num, batch_size, cfg_scale, seed)
CASES = [
    ("llada-basic", "llada", 7, 5, 8, 4, 0.0, 0),
    ("llada-long-answer", "llada", 4, 9, 16, 8, 0.0, 1),
    ("llada-batch-over-answer", "llada", 6, 3, 16, 8, 0.0, 2),  # mask counts wrap modulo n
    ("llada-one-token", "llada", 8, 1, 1, 1, 0.0, 3),  # MMLU's setting: mc_num = 1
    ("llada-cfg", "llada", 5, 4, 4, 2, 0.5, 4),
    ("dream-basic", "dream", 7, 5, 8, 4, 0.0, 5),
    ("dream-cfg", "dream", 5, 6, 6, 3, 1.5, 6),
]
ID_RANGE = 300  # ordinary token ids of the fixtures' vocabulary (specials sit at 300..319)


class ShiftedLogits(torch.nn.Module):
    """An official DreamModel whose logits are shifted the way Dream's eval code shifts them."""

    def __init__(self, model):
        super().__init__()
        self.inner = model

    @property
    def device(self):
        return self.inner.device

    def forward(self, ids):
        logits = self.inner(ids).logits
        return SimpleNamespace(logits=torch.cat([logits[:, :1], logits[:, :-1]], dim=1))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--llada", type=Path, required=True, help="checkout of ML-GSAI/LLaDA")
    ap.add_argument("--fast-dllm", type=Path, required=True, help="checkout of NVlabs/Fast-dLLM")
    ap.add_argument("--out", type=Path, required=True, help="tests/fixtures/golden")
    ap.add_argument("--llada-commit", help="commit of --llada (when it is not a git checkout)")
    ap.add_argument("--fast-dllm-commit", help="commit of --fast-dllm (likewise)")
    args = ap.parse_args(argv)

    ll_file = args.llada / "get_log_likelihood.py"
    ll_mod = import_file("official_get_log_likelihood", ll_file)
    llada = import_dir_as_package(
        "official_llada",
        args.fast_dllm / "llada" / "model",
        ["configuration_llada", "modeling_llada"],
    )
    dream = import_dir_as_package(
        "official_dream",
        args.fast_dllm / "dream" / "model",
        ["configuration_dream", "generation_utils", "modeling_dream"],
    )
    models = {}
    for kind in ("llada", "dream"):
        folder = args.out / kind
        if kind == "llada":
            m = llada["modeling_llada"].LLaDAModelLM.from_pretrained(
                str(folder), torch_dtype=torch.float32
            )
        else:
            m = ShiftedLogits(
                dream["modeling_dream"].DreamModel.from_pretrained(
                    str(folder), torch_dtype=torch.float32
                )
            )
        m.eval()
        mask_id = json.loads((folder / "config.json").read_text())["mask_token_id"]
        models[kind] = (m, mask_id)

    cases = []
    for name, kind, lp, la, mc, bs, cfg, seed in CASES:
        model, mask_id = models[kind]
        g = torch.Generator().manual_seed(1000 + seed)  # the ids; not the estimator's draws
        prompt = torch.randint(0, ID_RANGE, (lp,), generator=g)
        answer = torch.randint(0, ID_RANGE, (la,), generator=g)
        torch.manual_seed(seed)
        value = ll_mod.get_log_likelihood(
            model, prompt, answer, mc_num=mc, batch_size=bs, cfg_scale=cfg, mask_id=mask_id
        )
        print(f"{name:26s} {value:.8f}")
        cases.append(
            dict(
                name=name,
                checkpoint=kind,
                prompt=prompt.tolist(),
                answer=answer.tolist(),
                mc_num=mc,
                batch_size=bs,
                cfg_scale=cfg,
                seed=seed,
                mask_id=mask_id,
                log_likelihood=value,
            )
        )

    import transformers

    meta = {
        "estimator": {
            "repo": "ML-GSAI/LLaDA",
            "git_commit": args.llada_commit or git_rev(args.llada),
            "file": "get_log_likelihood.py",
            "function": "get_log_likelihood" + str(inspect.signature(ll_mod.get_log_likelihood)),
        },
        "models": {
            "repo": "NVlabs/Fast-dLLM",
            "git_commit": args.fast_dllm_commit or git_rev(args.fast_dllm),
            "files": ["llada/model/modeling_llada.py", "dream/model/modeling_dream.py"],
        },
        "dream_shift": "logits[:, j] := logits[:, j - 1] (j >= 1), as Dream's eval get_logits",
        "seeding": "torch.manual_seed(seed) before each call (CPU: randint and randperm)",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "dtype": "float32",
    }
    path = args.out / "likelihood" / "golden.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"meta": meta, "cases": cases}, indent=1) + "\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
