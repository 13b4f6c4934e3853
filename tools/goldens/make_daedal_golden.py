#!/usr/bin/env python
"""Golden fixture for DAEDAL: the official `generate` run on the tiny LLaDA checkpoint.

Official code (none of it is in this repository; it is read from a checkout at run time):
Li-Jinsong/DAEDAL (arXiv 2508.00819), `models/LLaDA_DAEDAL.py`: the functions
`add_gumbel_noise` and `generate`, taken from the file's syntax tree unchanged (the module itself
imports the whole `dllm_eval` harness, whose `datasets` does not import in this venv) and run
with `torch`, `torch.nn.functional as F` and `torch.distributed as dist`, the names the file
imports them as. The model is the checkout's own `dllm_eval/models/modeling_llada.py`
(`LLaDAModelLM.from_pretrained` on `tests/fixtures/golden/llada`, float32). The end and mask ids
are the checkpoint's config.json ids, passed as the harness passes `tokenizer.eos_token_id` and
its `mask_id`. Every case is greedy (temperature 0).

Recorded per case: the official output rows (prompt + final window; variable length), the NFE
(model calls, counted by a wrapper around the model's `forward`), the canvas width of every call
(sizing growth, the [EOS] tail and mask insertions show in it), and whether the same call in
float64 gives the same tokens (decisions are not on a rounding edge). Batch cases also record
each row run alone (its tokens must equal its batch row; its NFE is the per-row NFE Seer
reports, see `seer.diffusion.daedal`).

Recipe (used for tests/fixtures/golden/daedal/golden.json)::

    mkdir -p /tmp/daedal-official
    git -C /work/.mirror/Li-Jinsong+DAEDAL/repo archive HEAD | tar -x -C /tmp/daedal-official
    TORCHDYNAMO_DISABLE=1 /work/venvs/fastdllm/bin/python tools/goldens/make_daedal_golden.py \\
        --daedal /tmp/daedal-official --commit 303c9e98c24f829de2d6754d6c9f5d1e7dbc3909 \\
        --out tests/fixtures/golden/daedal/golden.json

/work/venvs/fastdllm: Python 3.11.7, torch 2.13.0+cpu, transformers 4.49.0, accelerate 0.34.2
(see make_goldens.py's docstring for how it was made). No official file is modified.
"""

from __future__ import annotations

import os

os.environ.setdefault("TORCHDYNAMO_DISABLE", "1")

import argparse
import ast
import contextlib
import inspect
import io
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from goldens_common import git_rev, import_dir_as_package  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LLADA = ROOT / "tests" / "fixtures" / "golden" / "llada"

BUILTIN = ROOT / "checkpoints" / "builtin-v1"  # src/seer/assets/builtin-v1 when made
# The tiny model's confidences are 0.02-0.3: a reveal threshold among them
SMALL = dict(
    initial_gen_length=8,
    max_gen_length=48,
    block_length=8,
    high_conf_threshold=0.25,
    low_conf_threshold=0.05,
    expansion_factor=4,
    eos_confidence_threshold=0.01,
    expand_eos_confidence_threshold=0.05,
    eos_check_tokens=4,
)


BUILTIN_TEXTS = (  # held-out style requests of the built-in text model (seer.data builtin-v1)
    "the box is orange , the cube is red , the bag is red . what color is the cube ?",
    "copy : orange goat hen cube owl fish blue pig duck",
    "copy : white box duck blue table bird bag",  # the same length as the next: a batch of 2
    "copy : orange goat hen cube owl fish blue",
    # as long as the first (no padding in a batch): rows that change phase at different steps
    "copy : white box duck blue table bird bag pink orange orange dog owl fish blue pig duck hen "
    "red cube",
)


def builtin_cases(ids) -> list[tuple[str, list[list[int]], dict]]:
    """On the built-in text model (it predicts [EOS] where its answers end)."""
    official = dict(initial_gen_length=64, max_gen_length=128, block_length=32)
    small = dict(initial_gen_length=8, max_gen_length=64, block_length=8, eos_check_tokens=8)
    inserts = dict(
        small, initial_gen_length=4, expand_eos_confidence_threshold=0.99, low_conf_threshold=0.3
    )
    return [
        ("builtin_official_lookup", [ids[0]], official),
        ("builtin_official_copy", [ids[1]], official),
        ("builtin_small_lookup", [ids[0]], small),
        ("builtin_small_copy", [ids[1]], small),
        ("builtin_inserts_lookup", [ids[0]], inserts),
        ("builtin_inserts_copy", [ids[1]], inserts),
        ("builtin_inserts_cap32_copy", [ids[1]], dict(inserts, max_gen_length=32)),
        ("builtin_inserts_batch2", [ids[2], ids[3]], inserts),
        ("builtin_inserts_mixed_batch2", [ids[0], ids[4]], inserts),
    ]


def tiny_cases(prompts) -> list[tuple[str, list[list[int]], dict]]:
    """On the tiny random checkpoint ([EOS] is never its argmax: a window grows to the cap,
    then denoises without insertions; several reveals per step with a low threshold)."""
    return [
        ("tiny_official_max96", prompts["p7"], dict(initial_gen_length=64, max_gen_length=96)),
        ("tiny_small", prompts["p3"], SMALL),
        ("tiny_batch2", prompts["p7_batch"], SMALL),
        # sizing stops at once (no end confidence is < 0): insertions among scattered reveals
        (
            "tiny_inserts",
            prompts["p7"],
            dict(SMALL, eos_confidence_threshold=0.0, low_conf_threshold=0.1),
        ),
        (
            "tiny_inserts_batch2",
            prompts["p7_batch"],
            dict(SMALL, eos_confidence_threshold=0.0, low_conf_threshold=0.1),
        ),
    ]


def load_official(daedal: Path):
    """`add_gumbel_noise` and `generate` of models/LLaDA_DAEDAL.py, and LLaDAModelLM."""
    path = daedal / "models" / "LLaDA_DAEDAL.py"
    src = path.read_text()
    wanted = ("add_gumbel_noise", "generate")
    body = [n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef) and n.name in wanted]
    ns = {"torch": torch, "F": F, "dist": torch.distributed}
    exec(compile(ast.Module(body=body, type_ignores=[]), str(path), "exec"), ns)
    mods = import_dir_as_package(
        "daedal_llada", daedal / "dllm_eval" / "models", ["configuration_llada", "modeling_llada"]
    )
    return ns["generate"], mods["modeling_llada"].LLaDAModelLM


class Counted(torch.nn.Module):
    """The model, counting calls and recording each call's canvas width."""

    def __init__(self, model):
        super().__init__()
        self.model, self.widths = model, []

    def forward(self, x, attention_mask=None):
        self.widths.append(int(x.shape[1]))
        return self.model(x, attention_mask=attention_mask)


def run(generate, model, prompt: list[list[int]], kw: dict, ids: dict) -> dict:
    """One official call; `ids`: mask_id and eos_token_id."""
    counted = Counted(model)
    with contextlib.redirect_stdout(io.StringIO()) as log:
        out = generate(
            counted, torch.tensor(prompt), None, temperature=0.0, cfg_scale=0.0, **ids, **kw
        )
    sizing = log.getvalue().count("Expand initial length")
    return dict(
        output_ids=[o.tolist() for o in out],
        nfe=len(counted.widths),
        widths=counted.widths,
        sizing_growths=sizing,
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--daedal", type=Path, required=True, help="a Li-Jinsong/DAEDAL checkout")
    ap.add_argument("--commit", default=None, help="its commit (when it is not a git checkout)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--prompt-seed", type=int, default=11)
    args = ap.parse_args(argv)
    import transformers

    generate, LLaDAModelLM = load_official(args.daedal)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(BUILTIN))
    chat = [
        tok.apply_chat_template(
            [{"role": "user", "content": t}], add_generation_prompt=True, tokenize=True
        )
        for t in BUILTIN_TEXTS
    ]
    g = torch.Generator().manual_seed(args.prompt_seed)
    rand = lambda *shape: torch.randint(0, 300, shape, generator=g).tolist()  # noqa: E731
    prompts = {"p7": rand(1, 7), "p3": rand(1, 3), "p7_batch": rand(2, 7)}
    gens = []
    for folder, todo in ((BUILTIN, builtin_cases(chat)), (LLADA, tiny_cases(prompts))):
        cfg = json.loads((folder / "config.json").read_text())
        ids = {"mask_id": cfg["mask_token_id"], "eos_token_id": cfg["eos_token_id"]}
        model = LLaDAModelLM.from_pretrained(str(folder), torch_dtype=torch.float32).eval()
        model64 = LLaDAModelLM.from_pretrained(str(folder), torch_dtype=torch.float64).eval()
        for name, prompt, kw in todo:
            rec = run(generate, model, prompt, kw, ids)
            rec64 = run(generate, model64, prompt, kw, ids)
            same64 = rec64["output_ids"] == rec["output_ids"]
            entry = dict(
                name=name,
                checkpoint=str(folder.relative_to(ROOT)),
                prompt_ids=prompt,
                kwargs=kw,
                **rec,
                same_in_float64=same64,
            )
            if len(prompt) > 1:
                solo = [run(generate, model, [row], kw, ids) for row in prompt]
                entry["solo_nfe"] = [s["nfe"] for s in solo]
                entry["solo_equal"] = [s["output_ids"][0] for s in solo] == rec["output_ids"]
            gens.append(entry)
            lens = [len(o) - len(prompt[0]) for o in rec["output_ids"]]
            print(
                f"[daedal] {name}: nfe={rec['nfe']} sizing={rec['sizing_growths']} "
                f"lengths={lens} f64={entry['same_in_float64']} widths={rec['widths'][:12]}"
            )
    meta = {
        "generator": "tools/goldens/make_daedal_golden.py",
        "official": {
            "repo": "Li-Jinsong/DAEDAL",
            "commit": git_rev(args.daedal) or args.commit,
            "sampler": "models/LLaDA_DAEDAL.py: add_gumbel_noise, generate (unchanged)",
            "model": "dllm_eval/models/modeling_llada.py: LLaDAModelLM (float32)",
        },
        "checkpoints": "src/seer/assets/builtin-v1 (its tokenizer's chat template for the prompts) "
        "and tests/fixtures/golden/llada",
        "signature": "generate" + str(inspect.signature(generate)),
        "defaults": {
            k: v.default
            for k, v in inspect.signature(generate).parameters.items()
            if v.default is not inspect.Parameter.empty
        },
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "python": sys.version.split()[0],
        },
        "prompt_seed": args.prompt_seed,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"meta": meta, "generations": gens}, indent=1)
    args.out.write_text(text + "\n")
    print(f"[daedal] wrote {args.out}")
    return 0 if all(e["same_in_float64"] and e.get("solo_equal", True) for e in gens) else 1


if __name__ == "__main__":
    sys.exit(main())
