"""Start dlmserve (PyPI `dlmserve==0.1.1`) on a local LLaDA-layout folder, float32 on the CPU,
listening on 127.0.0.1 only. Run by `benchmarks/bench_peers.py` with the Python of dlmserve's
own environment (dlmserve needs `transformers<5` and `einops`):

    /path/to/dlmserve-venv/bin/python benchmarks/dlmserve_launch.py --model DIR --port 8001

Two things of dlmserve are changed, at run time, in this process only (its installed files are
untouched), because it can load nothing but LLaDA-8B:
  - the mask id: dlmserve hard-codes LLaDA-8B's (126336) and refuses a tokenizer whose
    `<|mdm_mask|>` has another id; here the id is read from the model's tokenizer;
  - the precision: dlmserve offers int4 (bitsandbytes, CUDA) and bf16; here `float32` loads the
    weights in float32 on the CPU.
Both go through one replacement of `dlmserve.engine.load_llada` (`patch`), which does what
dlmserve's loader does (left padding, the pad-is-not-mask check, `AutoModel` with remote code,
eval mode) with those two differences; every other dtype still goes to dlmserve's own loader.
Nothing else of dlmserve is changed: its scheduler, batching, denoising loop, sampler, LocalLeap
and HTTP API run as installed. Its own `main` binds 0.0.0.0; this script runs the same app with
uvicorn on 127.0.0.1.

This file imports nothing of Seer: it runs in dlmserve's environment.
"""

from __future__ import annotations

import argparse
import os
import sys
from types import ModuleType
from typing import Any

PATCHED = "float32"  # the dtype this launcher adds to dlmserve's int4 / bf16


def mask_id_of(tokenizer: Any, mask_token: str) -> int:
    """The id of `mask_token` in `tokenizer`, or one line saying it has none."""
    mid = tokenizer.convert_tokens_to_ids(mask_token)
    if not isinstance(mid, int) or mid == getattr(tokenizer, "unk_token_id", None):
        raise SystemExit(f"the tokenizer has no {mask_token!r} token: not a LLaDA tokenizer")
    return mid


def float32_loader(llada: ModuleType):
    """A `load_llada(model_id, dtype, device)` for dlmserve's `models.llada` module `llada`:
    dtype "float32" loads the model in float32 with the tokenizer's own mask id; any other
    dtype calls dlmserve's loader unchanged."""
    original = llada.load_llada

    def load_llada(
        model_id: str = llada.DEFAULT_MODEL_ID, dtype: str = "int4", device: Any = "cuda"
    ):
        if dtype != PATCHED:
            return original(model_id=model_id, dtype=dtype, device=device)
        tokenizer = llada.AutoTokenizer.from_pretrained(model_id, trust_remote_code=True)
        if tokenizer.padding_side != "left":
            tokenizer.padding_side = "left"
        mask_id = mask_id_of(tokenizer, llada.MASK_TOKEN)
        if tokenizer.pad_token_id == mask_id:
            raise RuntimeError(f"pad_token_id ({tokenizer.pad_token_id}) equals mask id")
        model = llada.AutoModel.from_pretrained(
            model_id, torch_dtype=llada.torch.float32, trust_remote_code=True
        ).to(device)
        model.eval()
        resolved = next(model.parameters()).device
        return llada.LoadedLLaDA(
            model=model, tokenizer=tokenizer, device=resolved, dtype=dtype, mask_id=mask_id
        )

    load_llada.patched_from = original  # type: ignore[attr-defined]
    return load_llada


def patch(llada: ModuleType, engine: ModuleType) -> None:
    """Route dlmserve's engine through `float32_loader` (the one change; see the docstring)."""
    engine.load_llada = float32_loader(llada)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="a LLaDA-layout folder with its modeling files")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--log-level", default="warning")
    args = ap.parse_args(argv)
    # dlmserve's server module reads these when it is imported
    os.environ["DLMSERVE_MODEL"] = args.model
    os.environ["DLMSERVE_DTYPE"] = PATCHED
    os.environ["DLMSERVE_DEVICE"] = "cpu"
    os.environ.setdefault("DLMSERVE_LOG_LEVEL", args.log_level)
    import torch

    torch.set_num_threads(args.threads)
    import dlmserve.engine as engine
    import dlmserve.models.llada as llada

    patch(llada, engine)
    import uvicorn
    from dlmserve.api import server

    uvicorn.run(
        server.app,
        host="127.0.0.1",
        port=args.port,
        log_level=args.log_level,
        timeout_graceful_shutdown=int(server.GRACEFUL_SHUTDOWN_TIMEOUT),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
