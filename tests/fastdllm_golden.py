"""The tiny LLaDA golden checkpoint and the cases recorded with Fast-dLLM's three `generate`
functions (tools/goldens/make_goldens.py), shared by the cache and parallel-decoding tests."""

from __future__ import annotations

import json
from pathlib import Path

from seer.sampling import SamplingParams, TokenIds

GOLDEN = Path(__file__).parent / "fixtures" / "golden" / "llada"
GOLDEN_TOKENS = TokenIds(mask=310, eos=300, pad=300)  # the golden checkpoint's config.json
CACHE_OF = {  # Fast-dLLM function -> our cache policy
    "generate": "none",
    "generate_with_prefix_cache": "prefix",
    "generate_with_dual_cache": "dual",
}


def cases(name: str) -> list[dict]:
    """The recorded generations of `golden_<name>.json`."""
    return json.loads((GOLDEN / f"golden_{name}.json").read_text())["generations"]


def golden_params(case: dict) -> SamplingParams:
    """Our sampling options for a recorded Fast-dLLM call (threshold/factor when it had them)."""
    kw = case["kwargs"]
    return SamplingParams(
        gen_length=kw["gen_length"],
        steps=kw["steps"],
        block_length=kw["block_length"],
        temperature=kw["temperature"],
        remasking=kw["remasking"],
        threshold=kw.get("threshold"),
        factor=kw.get("factor"),
        cache=CACHE_OF[case["function"]],
    )
