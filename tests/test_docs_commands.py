"""The shell commands of README.md and the documentation site (```bash / ```console blocks):
every one that a CPU affords in seconds runs as written, from the repository root; every other
one is listed below with the reason it is not run here, or with the test that already runs it.
A command the docs gain that is neither run nor listed fails `test_every_command_is_run_or_listed`:
run it in `RUN`, or review it into `COVERED` / `NOT_RUN`.

(The Python blocks run in tests/test_docs.py; the README's `seer generate ... --seer --json` line
and its Python quick start in tests/test_first_runs.py.)
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from test_docs import PAGES, README, ROOT

# reasons, shared by the entries below
INSTALL = "installs packages or makes a virtual environment (network, minutes)"
CI = "the whole test suite (.ci/run / pytest): what CI runs, not a doc check"
USER_PATH = "names the user's own folder or file (DIR, FILE, /models/, /path/to/, /shared/)"
SYNOPSIS = "a usage synopsis ([optional] flags, a|b choices, ...), not a command to run as written"
SERVER = "starts a long-running server (seer serve / seer ui) or talks to one on port 8000"
RAY = "needs a Ray cluster (ray start, --ray-address auto, replicas on other nodes)"
GPU = "needs a CUDA device and a real checkpoint (--device cuda / cuda:0)"
SLOW = "minutes of CPU on the built-in models (hundreds of requests, or every method)"
NETWORK = "downloads a repository (git clone) or a wheel"
ENV = "sets the environment of the block's later commands; nothing to run"
OUTSIDE = "needs a checkout outside the repository (the official LLaDA sampler)"

# run here, each with what its output must show (a regular expression; None: exit status 0 only)
RUN: dict[str, str | None] = {
    # the figures docs/evaluation.md gives for this line: builtin, 0.00 and 0.75
    "python -m seer.harness.lm_eval --model seer "
    "--model_args pretrained=builtin,seer=true,mc_num=8 "
    "--tasks seer_tiny_gen,seer_tiny_mc --include_path tests/harness/tasks --apply_chat_template "
    "--batch_size 10 --device cpu": r"seer_tiny_gen\|.*exact_match\|↑ *\| *0\.00\|(?s:.*)"
    r"seer_tiny_mc *\|.*acc *\|↑ *\| *0\.75\|",
    # the figure docs/evaluation.md gives for this line: builtin-vqa, 0.5
    "python -m lmms_eval --model seer --model_args pretrained=builtin-vqa,seer=true "
    "--tasks seer_tiny_vqa --include_path tests/harness/lmms_tasks --batch_size 6 "
    "--device cpu": r"seer_tiny_vqa\|.*exact_match\|↑ *\| *0\.5\|",
    # docs/gpu.md: a simulation, labelled as one
    "seer simulate --model mmada-8b --gpu a100 --trace infovqa --batches 1 --gen-length 64": (
        r"PREDICTED, not measured"
    ),
}
RUN_NEEDS = {"lm_eval": "eval", "lmms_eval": "eval"}  # the module each needs: its extra

# run by another test, named file::function
COVERED: dict[str, str] = {
    "seer generate --model builtin --prompt $'Count the people in the following line:\\n"
    '["Ann Young", "Carl Ross"]\' --seer --json': (
        "tests/test_first_runs.py::test_the_readme_generate_example_reports_a_cut"
    ),
}

# reviewed: not run here, and why
NOT_RUN: dict[str, str] = {
    # install and CI
    "python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 && "
    'pip install -e ".[dev]" && seer demo': INSTALL,
    ".ci/run": CI,
    "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu": INSTALL,
    'pip install -e ".[dev]"': INSTALL,
    'pip install -e ".[serve,ui]"': INSTALL,
    "python -m pytest -q tests/harness tests/test_likelihood.py": CI,
    "git clone https://github.com/furiosa-ai/ParallelBench /path/to/ParallelBench": NETWORK,
    # the demo, datasets and calibration on the built-in models
    "seer demo": "about 25 s of CPU (8 images, with and without Seer); tests/test_demo.py",
    "seer batch --model builtin --data builtin --n 300 --out answers.jsonl --seer": SLOW,
    "seer calibrate --model builtin --data builtin --n 300 --out calib/": SLOW,
    "seer bench --model builtin --n 64 --batches 8 32 64": SLOW,
    "seer simulate --model DIR --gpu h100 --trace FILE": USER_PATH,
    "seer calibrate --model builtin-v1 --n 600 --out docs/results/calibration": SLOW,
    "seer calibrate --model builtin-vqa-v1 --n 600 --out docs/results/calibration-vqa": SLOW,
    "seer calibrate --model checkpoints/builtin-vqa2/export --data builtin-vqa --n 600 "
    "--out calibration-vqa2 --write": SLOW + "; and a training checkpoint folder",
    # the benchmark scripts (docs/benchmarks.md): each minutes to hours
    "nice python benchmarks/bench_compare.py --model builtin --out docs/results/compare": SLOW,
    "nice python benchmarks/bench_compare.py --model builtin-vqa --out docs/results/compare": SLOW,
    "nice python benchmarks/bench_compare.py --model builtin-v1 --out docs/results/compare": SLOW,
    "nice python benchmarks/bench_compare.py --model builtin-vqa-v1 "
    "--out docs/results/compare": SLOW,
    "nice python benchmarks/bench_compare.py --model checkpoints/builtin-vqa2/export "
    "--data builtin-vqa --out docs/results/compare": SLOW,
    "nice python benchmarks/bench_compare.py --model builtin "
    "--data parallelbench:/path/to/ParallelBench/waiting_line --out docs/results/compare "
    "--raw /somewhere/outside/the/repo.jsonl": SLOW + "; and ParallelBench's data",
    "nice python benchmarks/bench_loop.py --official-generate /work/official/LLaDA/generate.py": (
        OUTSIDE
    ),
    "nice python benchmarks/bench_cache.py": "about a minute of CPU",
    "nice python benchmarks/bench_seer.py --model DIR --n 300": USER_PATH,
    "nice python benchmarks/bench_seer.py --model builtin-v1 --n 300": SLOW,
    "nice python benchmarks/bench_detect.py --n 40": SLOW,
    "nice python benchmarks/bench_uncalibrated.py --n 60": SLOW,
    "nice python benchmarks/bench_serving.py --plot docs/results/figures/serving_latency.png": SLOW,
    "nice python benchmarks/bench_loop.py --sizes tiny --baseline --threads 1": (
        "extracts another commit with git archive and times 41 rounds"
    ),
    "nice python benchmarks/bench_loop.py --sizes tiny --baseline <commit> --rounds 31": SYNOPSIS,
    "nice python benchmarks/bench_parallel_closed_form.py "
    "--out docs/results/figures/parallel_closed_form.png "
    "| tee docs/results/parallel_closed_form.txt": (
        "minutes of CPU, and it rewrites a published record"
    ),
    # bench_peers.py: dlmserve in its own environment, the official modeling files elsewhere
    "python3 -m venv ~/venvs/dlmserve": INSTALL,
    "~/venvs/dlmserve/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu": (
        INSTALL
    ),
    "~/venvs/dlmserve/bin/pip install dlmserve==0.1.1 'transformers<5' einops": INSTALL,
    "git clone https://github.com/NVlabs/Fast-dLLM ~/src/Fast-dLLM": INSTALL,
    "python benchmarks/bench_peers.py --llada-code ~/src/Fast-dLLM/llada/model "
    "--dlmserve-python ~/venvs/dlmserve/bin/python --n 100 --rounds 4 --concurrency 1 16 "
    "--stop-timeout 10 --budget-minutes 65 --out docs/results/peers": (
        SLOW + "; needs dlmserve's environment and the LLaDA modeling files outside the repo"
    ),
    "export OMP_NUM_THREADS=1": ENV,
    "export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1": ENV,
    # the user's own models and data
    "seer calibrate --model DIR --data prompts.jsonl --out calib/ --write": USER_PATH,
    "seer calibrate --model DIR --data builtin-vqa --n 600 "
    "--out calibration-vqa --write": USER_PATH,
    "seer batch --model /models/LLaDA-8B-Instruct --data prompts.jsonl --out answers.jsonl "
    "--gen-length 256 --block-length 32 --seer --dtype bfloat16 --device cuda --resume": GPU,
    "seer batch --model builtin --data parallelbench:/path/to/ParallelBench/waiting_line/copy "
    "--out out.jsonl": USER_PATH + "; ParallelBench's data",
    # published evaluations (docs/evaluation.md): 8B checkpoints on a GPU
    "python -m seer.harness.lm_eval --model seer --tasks gsm8k --batch_size 8 --device cuda:0 "
    "--model_args pretrained=/models/LLaDA-8B-Base,gen_length=1024,steps=1024,block_length=1024,"
    "dtype=bfloat16 --output_path results/llada-base-gsm8k": GPU,
    "python -m seer.harness.lm_eval --model seer --tasks gsm8k --batch_size 8 --device cuda:0 "
    "--model_args pretrained=/models/LLaDA-8B-Base,gen_length=1024,steps=1024,block_length=1024,"
    "dtype=bfloat16,seer=true --output_path results/llada-base-gsm8k-seer": GPU,
    "python -m seer.harness.lm_eval --model seer --tasks gsm8k --apply_chat_template "
    "--batch_size 8 --device cuda:0 "
    "--model_args pretrained=/models/LLaDA-8B-Instruct,gen_length=512,steps=512,"
    "block_length=512,confidence_eos_eot_inf=true,dtype=bfloat16 "
    "--output_path results/llada-instruct-gsm8k": GPU,
    "python -m seer.harness.lm_eval --model seer --tasks hellaswag --device cuda:0 "
    "--model_args pretrained=/models/LLaDA-8B-Base,mc_num=128,mc_batch=8,cfg=0.5,"
    "dtype=bfloat16": GPU,
    "python -m lmms_eval --model seer --tasks docvqa_val,chartqa,textvqa_val,infovqa_val "
    "--batch_size 8 --device cuda:0 --model_args pretrained=/models/lavida-llada-v1.0-instruct,"
    "cache=prefix_lm,schedule=linear,dtype=bfloat16 --log_samples "
    "--output_path results/lavida-llada": GPU,
    "python -m lmms_eval --model seer --tasks docvqa_val,chartqa,textvqa_val,infovqa_val "
    "--batch_size 8 --device cuda:0 --model_args pretrained=/models/lavida-llada-v1.0-instruct,"
    "cache=prefix_lm,schedule=linear,dtype=bfloat16,seer=true --log_samples "
    "--output_path results/lavida-llada-seer": GPU,
    # serving
    "seer serve": SERVER,
    "img=$(base64 -w0 src/seer/assets/images/00_colour.png)": (
        "sets $img for the next command, which needs a server; tests/serve covers the request"
    ),
    "curl -s http://127.0.0.1:8000/v1/chat/completions -H 'Content-Type: application/json' -d '{ "
    '"model": "builtin-vqa", "messages": [{"role": "user", "content": [ {"type": "text", "text": '
    '"what colour is the bar ?"}, {"type": "image_url", "image_url": {"url": '
    '"data:image/png;base64,\'"$img"\'"}}]}]}\'': SERVER,
    "seer serve --model DIR --replicas 2": RAY,
    'pip install -e ".[ray]" && seer serve --model DIR --replicas 2': RAY,
    "seer ui": SERVER,
    "seer ui --model builtin-vqa": SERVER,
    "seer serve --model DIR --port 8000 --api-key KEY [--public-metrics] [--no-seer] "
    "[--max-queue N] [--max-batch N] [--max-tokens-per-step N] [--allow-local-images DIR] "
    "[--max-image-mb 8] [--max-image-mp 16] [--image-pixel-budget 32] [--max-body-mb 32] "
    "[--prepare-timeout 30] [--read-timeout 10] [--max-connections 1024] "
    "[--drain-timeout 60] [--dtype] [--device]": SYNOPSIS,
    "seer serve --model DIR --replicas 2 --min-replicas 1 --max-replicas 4": RAY,
    "seer serve --model DIR --replicas 8 --ray-address auto --host 0.0.0.0": RAY,
    "ray start --head --port=6379": RAY,
    "ray start --address=HEAD:6379": RAY,
    "seer batch --model /shared/LLaDA-8B-Instruct --data /shared/prompts.jsonl --out answers.jsonl "
    "--ray 16 --ray-address auto --device cuda --dtype bfloat16 --gen-length 256 --seer": RAY,
    "seer serve --model /shared/LLaDA-8B-Instruct --replicas 8 --min-replicas 4 --max-replicas 16 "
    "--ray-address auto --host 0.0.0.0 --port 8000 --dtype bfloat16 --api-key KEY": RAY,
    # the command-line synopsis of docs/getting-started.md
    'seer generate --model DIR --prompt "..." [--stream] '
    "[--image FILE|data-URI --gen-length --steps "
    "--block-length --temperature --remasking/--alg --alg-temp --top-p --top-k --cfg-scale "
    "--schedule linear|timestep|shift --threshold --factor --seed --dtype --daedal "
    "--daedal-initial N ... (every DAEDAL option) --device --cache none|prefix|dual|prefix_lm "
    "--stop WORD --no-chat --json] [--seer --seer-signal sparsity|eos_prob|combined --seer-layer N "
    "--seer-theta X --seer-tensor down|gate --seer-rule snr|changepoint --seer-fallback N ... "
    "(every SeerConfig field)]": SYNOPSIS,
    "seer make-checkpoint --arch llada|dream|lavida-llada|lavida-dream --out DIR": SYNOPSIS,
    "seer demo [--text]": SYNOPSIS,
    'seer profile --prompt "..." [--image FILE] --out heatmap.png [--model DIR] [--seer-...]': (
        SYNOPSIS
    ),
    "seer calibrate --model DIR --data FILE --out DIR [--write --margin 2 --max-over X]": SYNOPSIS,
    "seer bench [--model DIR] --n 64 --batches 8 32 64": SYNOPSIS,
    "seer batch --model DIR --data FILE --out answers.jsonl [--seer --resume --ray N]": SYNOPSIS,
    "seer serve [--model DIR|builtin|builtin-vqa] [--port 8000] [--api-key KEY] [--no-seer]": (
        SYNOPSIS
    ),
    "seer serve ... --replicas N [--min-replicas A --max-replicas B --ray-address auto]": SYNOPSIS,
    "seer ui [--model builtin|builtin-vqa|DIR] [--port 8000] [--host 127.0.0.1]": SYNOPSIS,
}

SHELL = re.compile(r"^```(bash|console|sh|shell)[^\n]*\n(.*?)^```", re.S | re.M)


def _open_quote(text: str) -> bool:
    """Whether `text` leaves a quote open (the command goes on on the next line)."""
    try:
        shlex.split(text.rstrip().removesuffix("\\").replace("$'", "'"))
    except ValueError:
        return True
    return False


def _code(line: str) -> str:
    """A line without its trailing comment (`  # ...`, as the docs write them)."""
    return re.split(r"\s{2,}#", line)[0].rstrip()


def commands(path: Path) -> list[tuple[str, str]]:
    """("file:line", command) for every command of the shell blocks of one Markdown file: comment
    lines dropped, a trailing `  # comment` cut (not inside a quoted argument), a line that ends in
    `\\`, leaves a quote open or is followed by an indented line (a synopsis) joined to the next,
    whitespace collapsed. In a ```console block only `$ ` lines are commands."""
    text = path.read_text()
    out: list[tuple[str, str]] = []
    for block in SHELL.finditer(text):
        first = text[: block.start()].count("\n") + 2
        lines = block.group(2).splitlines()
        if block.group(1) == "console":
            lines = [x[2:] for x in lines if x.startswith("$ ")]
        parts: list[str] = []
        start = 0
        for i, line in enumerate(lines):
            quoted = bool(parts) and _open_quote("\n".join(parts))
            if not parts and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if not parts:
                start = i
            parts.append(line if quoted else _code(line))
            command = "\n".join(parts)
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if command.endswith("\\") or _open_quote(command) or nxt[:1].isspace():
                continue
            joined = " ".join(x.removesuffix("\\") for x in parts)
            out.append((f"{path.relative_to(ROOT)}:{first + start}", " ".join(joined.split())))
            parts = []
        assert not parts, f"{path.name}:{first}: a command that never ends: {parts}"
    return out


def all_commands() -> list[tuple[str, str]]:
    return [c for path in [README, *PAGES] for c in commands(path)]


def test_the_parser():
    """Continuations, comments, quotes across lines and synopsis lines come out as one command."""
    page = ROOT / "tests" / "fixtures" / "docs_commands.md"
    assert [c for _, c in commands(page)] == [
        "seer demo",
        "seer batch --model builtin --data builtin --n 3 --out a.jsonl",
        'curl -s URL -d \'{ "a": 1, "b": "# not a comment"}\'',
        "seer serve --model DIR [--port 8000] [--max-queue N]",
        "seer generate --model builtin --prompt hi",
    ]


def test_the_docs_have_commands():
    found = all_commands()
    assert len(found) >= 60
    assert any(c.startswith("seer generate --model builtin") for _, c in found)


def test_every_command_is_run_or_listed():
    """A command the docs gain is reviewed: run here (`RUN`), run by another test (`COVERED`), or
    listed with the reason it is not run (`NOT_RUN`)."""
    known = RUN.keys() | COVERED.keys() | NOT_RUN.keys()
    new = sorted({f"{where}: {c}" for where, c in all_commands() if c not in known})
    assert not new, "commands neither run nor listed in tests/test_docs_commands.py:\n" + "\n".join(
        new
    )


def test_every_listed_command_is_in_the_docs():
    """No entry outlives its command (a reworded command must be reviewed again)."""
    shown = {c for _, c in all_commands()}
    for table in (RUN, COVERED, NOT_RUN):
        stale = sorted(table.keys() - shown)
        assert not stale, f"listed but not in the docs: {stale}"
    assert not RUN.keys() & NOT_RUN.keys() and not COVERED.keys() & (RUN.keys() | NOT_RUN.keys())


def test_covered_commands_have_their_test():
    for command, where in COVERED.items():
        file, name = where.split("::")
        source = (ROOT / file).read_text()
        assert f"def {name}(" in source, f"{where} (for {command!r}) does not exist"
        assert command.split(" --prompt")[0] in source, f"{where} does not read {command!r}"


@pytest.mark.parametrize("command", sorted(RUN), ids=lambda c: c[:48])
def test_quick_command_runs_as_written(command):
    module = command.split()[2] if command.startswith("python -m ") else None
    if module in RUN_NEEDS:
        pytest.importorskip(module.split(".")[0], reason=f"the {RUN_NEEDS[module]} extra")
    bin_dir = Path(sys.executable).parent  # `python`, `seer` of the interpreter running the tests
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "OMP_NUM_THREADS": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    out = subprocess.run(
        ["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    expect = RUN[command]
    if expect is not None:
        assert re.search(expect, out.stdout), out.stdout[-3000:]


def test_the_run_figures_are_the_ones_the_docs_give():
    """The figures `RUN` checks are the ones docs/evaluation.md states for these lines."""
    text = " ".join((ROOT / "docs" / "evaluation.md").read_text().split())
    assert "`builtin` gives exact match 0.00 on `seer_tiny_gen`" in text
    assert "accuracy 0.75 on `seer_tiny_mc`" in text
    assert "`builtin-vqa` gives exact match 0.5 on `seer_tiny_vqa`" in text
    assert "`seer_tiny_vqa` on `builtin-vqa-v1`" in text and "exact match 0.333" in text
