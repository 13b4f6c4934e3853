#!/usr/bin/env python
"""Golden fixture for ρ-EOS: the official `generate` run on the built-in text model and the tiny
LLaDA checkpoint.

Official code (none of it is in this repository; it is read from a checkout at run time):
yjyddq/rho-EOS (arXiv 2601.22527), `models/LLaDA_rho_EOS.py`: the functions `add_gumbel_noise`,
`_calculate_eos_confidence`, `_calculate_eos_density`, `E_factor_func`,
`_adjust_length_by_eos_density` and `generate`, taken from the file's syntax tree unchanged (the
module itself imports the whole `dllm_eval` harness, whose `datasets` and `accelerate` set-up is
not needed) and run with `torch`, `torch.nn.functional as F`, `torch.distributed as dist` and the
`typing` names, as the file imports them. The model is the checkout's own
`dllm_eval/models/modeling_llada.py` (`LLaDAModelLM.from_pretrained`, float32). The end and mask
ids are the checkpoint's config.json ids, passed as the harness passes `tokenizer.eos_token_id`
and its `mask_id`. Every case is greedy (temperature 0), batch 1 (the official batch adjusts rows
that have finished while another row denoises; Seer's rows move alone, each equal to its batch-1
run).

Recorded per case: the official output row (prompt + final window; variable length), the NFE
(model calls, counted by a wrapper around the model's `forward`), the canvas width of every call
(growth and shrinking show in it), the official log's per-step actions, and whether the float64
model gives the same tokens (decisions are not on a rounding edge).

Recipe (used for tests/fixtures/golden/rho_eos/golden.json)::

    mkdir -p /work/ext/rho-EOS
    git -C /work/.mirror/yjyddq+rho-EOS/repo archive HEAD | tar -x -C /work/ext/rho-EOS
    TORCHDYNAMO_DISABLE=1 /work/venvs/rhoeos/bin/python tools/goldens/make_rho_eos_golden.py \\
        --rho-eos /work/ext/rho-EOS --commit 9cb20c66f73546dc3b728e0c1e064a455b6eb4d6 \\
        --out tests/fixtures/golden/rho_eos/golden.json

/work/venvs/rhoeos: Python 3.11.7, `python -m venv` with a `.pth` line to a site-packages holding
torch 2.13.0+cpu (and safetensors, numpy), then `pip install transformers==4.49.0 einops
accelerate==0.34.2` (the venv's own packages come first on `sys.path`). No official file is
modified.
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
import re
import sys
import typing
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from goldens_common import git_rev, import_dir_as_package  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LLADA = ROOT / "tests" / "fixtures" / "golden" / "llada"
BUILTIN = ROOT / "src" / "seer" / "assets" / "builtin"

BUILTIN_TEXTS = (  # requests in the style of the built-in text model's task (seer.data builtin)
    'Count the people in the following line:\n["Edward McKnight", "Ruth Fox", "Ivan Stone"]',
    'Here is the line:\n["Jean Barnes", "Marion Estrada", "Pedro McCarthy", "Harriet Day"]\n'
    "Reverse the order of the list and give only the final list.",
    'The line should be organized alphabetically:\n["Don Goodman", "Gary Hanson", '
    '"Beverly Salinas", "Gene Dyer", "Ada Lane", "Tom Hill"]',
    'Find the position of "Ruth Fox" in the following line:\n["Ivan Stone", "Ruth Fox"]',
)
OFFICIAL = dict(initial_gen_length=64, max_gen_length=128, block_length=32)  # the script's
SCALED = dict(initial_gen_length=16, max_gen_length=128, block_length=8, eos_check_tokens=8)


def builtin_cases(ids) -> list[tuple[str, list[list[int]], dict]]:
    """On the built-in text model (it predicts [EOS] where its answers end, confidently)."""
    step1 = dict(
        SCALED,
        initial_gen_length=64,
        expansion_factor=1,
        scheduler="const",
        low_density_threshold=0.5,
        high_density_threshold=0.5,
        high_conf_threshold=1.0,
    )
    return [
        *[(f"builtin_official_{i}", [ids[i]], OFFICIAL) for i in range(len(ids))],
        *[(f"builtin_scaled_{i}", [ids[i]], SCALED) for i in range(len(ids))],
        ("builtin_linear_1", [ids[1]], dict(SCALED, scheduler="linear")),
        ("builtin_const_2", [ids[2]], dict(SCALED, scheduler="const", expansion_factor=4)),
        # a wide band, a low reveal threshold: several reveals per step, a kept length
        (
            "builtin_band_2",
            [ids[2]],
            dict(
                OFFICIAL,
                low_density_threshold=0.0,
                high_density_threshold=1.0,
                high_conf_threshold=0.5,
            ),
        ),
        # grows to the cap (never shrinks: the band is above every density), then denoise-only
        (
            "builtin_grow_cap64_1",
            [ids[1]],
            dict(SCALED, max_gen_length=64, low_density_threshold=1.0, high_density_threshold=1.0),
        ),
        # one reveal per step, +-1 per step: past the 64 adjusting steps (then the length stays)
        ("builtin_pm1_1", [ids[1]], step1),
        ("builtin_pm1_2", [ids[2]], step1),
    ]


def tiny_cases(prompts) -> list[tuple[str, list[list[int]], dict]]:
    """On the tiny random checkpoint ([EOS] is never its argmax: ρ is 0 and the window grows
    by the largest step to the cap, then denoises; a low threshold reveals several per step)."""
    small = dict(
        initial_gen_length=8,
        max_gen_length=48,
        block_length=8,
        high_conf_threshold=0.05,
        expansion_factor=4,
    )
    return [
        ("tiny_official_max96", prompts["p7"], dict(initial_gen_length=64, max_gen_length=96)),
        ("tiny_small", prompts["p3"], small),
        ("tiny_small_linear", prompts["p7"], dict(small, scheduler="linear")),
    ]


def load_official(rho: Path):
    """The functions of models/LLaDA_rho_EOS.py that `generate` calls, and LLaDAModelLM."""
    path = rho / "models" / "LLaDA_rho_EOS.py"
    src = path.read_text()
    wanted = (
        "add_gumbel_noise",
        "_calculate_eos_confidence",
        "_calculate_eos_density",
        "E_factor_func",
        "_adjust_length_by_eos_density",
        "generate",
    )
    body = [n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef) and n.name in wanted]
    assert {n.name for n in body} == set(wanted), "the official file changed"
    ns = {"torch": torch, "F": F, "dist": torch.distributed}
    ns.update({k: getattr(typing, k) for k in ("Dict", "List", "Optional", "Tuple", "Union")})
    exec(compile(ast.Module(body=body, type_ignores=[]), str(path), "exec"), ns)
    mods = import_dir_as_package(
        "rho_eos_llada", rho / "dllm_eval" / "models", ["configuration_llada", "modeling_llada"]
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


STEP = re.compile(r"\[Step (\d+)\] density=\[([^\]]*)\] action=\[([^\]]*)\]")


def run(generate, model, prompt: list[list[int]], kw: dict, ids: dict) -> dict:
    """One official call; `ids`: mask_id and eos_token_id."""
    counted = Counted(model)
    with contextlib.redirect_stdout(io.StringIO()) as log:
        out = generate(
            counted, torch.tensor(prompt), None, temperature=0.0, cfg_scale=0.0, **ids, **kw
        )
    steps = STEP.findall(log.getvalue())
    return dict(
        output_ids=[o.tolist() for o in out],
        nfe=len(counted.widths),
        widths=counted.widths,
        densities=[float(d) for _, d, _ in steps],
        actions=[int(a) for _, _, a in steps],
        stagnant="stagnant" in log.getvalue(),
        step_cap="max_decode_steps" in log.getvalue(),
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rho-eos", type=Path, required=True, help="a yjyddq/rho-EOS checkout")
    ap.add_argument("--commit", default=None, help="its commit (when it is not a git checkout)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--prompt-seed", type=int, default=11)
    args = ap.parse_args(argv)
    import transformers
    from transformers import AutoTokenizer

    generate, LLaDAModelLM = load_official(args.rho_eos)
    tok = AutoTokenizer.from_pretrained(str(BUILTIN))
    chat = [
        tok.apply_chat_template(
            [{"role": "user", "content": t}], add_generation_prompt=True, tokenize=True
        )
        for t in BUILTIN_TEXTS
    ]
    g = torch.Generator().manual_seed(args.prompt_seed)
    rand = lambda *shape: torch.randint(0, 300, shape, generator=g).tolist()  # noqa: E731
    prompts = {"p7": rand(1, 7), "p3": rand(1, 3)}
    gens = []
    for folder, todo in ((BUILTIN, builtin_cases(chat)), (LLADA, tiny_cases(prompts))):
        cfg = json.loads((folder / "config.json").read_text())
        ids = {"mask_id": cfg["mask_token_id"], "eos_token_id": cfg["eos_token_id"]}
        model = LLaDAModelLM.from_pretrained(str(folder), torch_dtype=torch.float32).eval()
        model64 = LLaDAModelLM.from_pretrained(str(folder), torch_dtype=torch.float64).eval()
        for name, prompt, kw in todo:
            rec = run(generate, model, prompt, kw, ids)
            rec64 = run(generate, model64, prompt, kw, ids)
            entry = dict(
                name=name,
                checkpoint=str(folder.relative_to(ROOT)),
                prompt_ids=prompt,
                kwargs=kw,
                **rec,
                same_in_float64=rec64["output_ids"] == rec["output_ids"],
            )
            gens.append(entry)
            n = len(rec["output_ids"][0]) - len(prompt[0])
            print(
                f"[rho-eos] {name}: nfe={rec['nfe']} length={n} f64={entry['same_in_float64']} "
                f"widths={rec['widths'][:10]} actions={rec['actions'][:10]}"
            )
    defaults = {
        k: v.default
        for k, v in inspect.signature(generate).parameters.items()
        if v.default is not inspect.Parameter.empty
    }
    meta = {
        "generator": "tools/goldens/make_rho_eos_golden.py",
        "official": {
            "repo": "yjyddq/rho-EOS",
            "commit": git_rev(args.rho_eos) or args.commit,
            "sampler": "models/LLaDA_rho_EOS.py: add_gumbel_noise, _calculate_eos_confidence, "
            "_calculate_eos_density, E_factor_func, _adjust_length_by_eos_density, generate "
            "(unchanged)",
            "model": "dllm_eval/models/modeling_llada.py: LLaDAModelLM (float32)",
            "script": "scripts/eval_LLaDA_rho_EOS.sh: low_density_threshold=0.4, "
            "high_density_threshold=0.6, scheduler=exp, block_length=32, initial_gen_length in "
            "64..1024, max_gen_length=2048, high_conf_threshold=0.9, expansion_factor=8, "
            "eos_check_tokens=32",
        },
        "checkpoints": "src/seer/assets/builtin (its tokenizer's chat template for the prompts) "
        "and tests/fixtures/golden/llada",
        "signature": "generate" + str(inspect.signature(generate)),
        "defaults": defaults,
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
    print(f"[rho-eos] wrote {args.out}")
    return 0 if all(e["same_in_float64"] for e in gens) else 1


if __name__ == "__main__":
    sys.exit(main())
