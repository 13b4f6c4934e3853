"""`seer serve` against a peer serving engine, dlmserve (PyPI `dlmserve==0.1.1`: an
OpenAI-compatible LLaDA server with per-step continuous batching and the LocalLeap
accelerator), on the same weights and the same held-out requests.

    python benchmarks/bench_peers.py --llada-code DIR --dlmserve-python VENV/bin/python \\
        --n 100 --out docs/results/peers

Weights: the model (`--model`, default the built-in text model) is copied to a temporary folder in
the official LLaDA layout (config.json with its `auto_map`, model.safetensors, the tokenizer) with
the official modeling files from `--llada-code DIR` (`modeling_llada.py`,
`configuration_llada.py`, the LLaDA-8B-Instruct hub files or a copy of them; they are not shipped
with Seer). Both servers serve that one folder: dlmserve loads it through transformers' remote
code, in its own environment (`--dlmserve-python`: a Python with `dlmserve==0.1.1`,
`transformers<5` and `einops`), started by `benchmarks/dlmserve_launch.py`, which changes two
things of dlmserve at run time (the mask id read from the tokenizer, float32 on the CPU; see
that file) and nothing else.

Configs (greedy, temperature 0, every request non-streamed through `/v1/chat/completions`):
  dlmserve-default    dlmserve's defaults: 128 denoising steps, a 128-token canvas, one block
  dlmserve-localleap  the same with LocalLeap (`use_local_leap`, its default thresholds)
  seer-default        `seer serve`'s defaults: Seer on, the model's steps and window
  seer-fastest        Seer + confidence threshold 0.9
  seer-equal          Seer off, dlmserve's default steps, window and block (equal work)
Protocol: the same held-out requests (`seerbench.draws.held_out`, the built-in task's evaluation
part) for every config; concurrency 1 and 16 (`--concurrency`); one server at a time, the two
engines interleaved in rounds so that both see the same background load: the requests are split
into `--rounds` equal parts, and in each round one engine is started, warmed, runs its configs
at every concurrency on that part and is stopped, then the other; the engine that goes first
alternates between rounds. With `--budget-minutes`, no round starts that the longest round so
far says would end past the budget; the record then holds the rounds that ran (every config on
the same requests) and says so. The machine's load average is recorded at the start and end of
every server's turn. Per config and concurrency: requests per second over the point's wall time
(the sum of its rounds), latency p50 / p90 / p99 (request sent -> answer received),
accuracy (`seer.data.score`) beside the baseline's (the engine's full-window config at
concurrency 1, its solo answers), the paired non-inferiority at `--margin` points, and how many
of the batched answers (concurrency > 1) equal the engine's own solo answers (concurrency 1).
Ratios (seer / dlmserve requests per second, one run, one clock): at both engines' defaults, each
at its fastest, and at equal work. The margin and the primary comparison are written into the
record (and printed) before the first request.

dlmserve is stopped with SIGTERM and, if it has not exited after `--stop-timeout` seconds
(0.1.1 can hang in its drain), SIGKILL. Raw per-request records (answers, latencies, scores):
`<out>/requests/<config>-c<N>.jsonl`, rewritten after every round; with `--resume` the rounds
those files hold (the same in every file, and the same protocol) are read back and the rest are
run, so a run the budget cut can be finished. A table, then the JSON record as the last line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from seerbench import runs

ROOT = Path(__file__).resolve().parents[1]
LAUNCHER = ROOT / "benchmarks" / "dlmserve_launch.py"
CODE_FILES = ("modeling_llada.py", "configuration_llada.py")
# dlmserve 0.1.1's request defaults (api/protocol.py: num_denoising_steps 128; api/server.py:
# gen_length = max_tokens or 128, block_length = gen_length); the steps are read from the
# installed package at start-up and checked against this.
DLM_STEPS, DLM_GEN = 128, 128
CONFIGS: dict[str, tuple[str, dict]] = {
    "dlmserve-default": ("dlmserve", {}),
    "dlmserve-localleap": ("dlmserve", {"use_local_leap": True}),
    "seer-default": ("seer", {}),
    "seer-fastest": ("seer", {"seer": True, "threshold": 0.9}),
    "seer-equal": (
        "seer",
        {"seer": False, "steps": DLM_STEPS, "block_length": DLM_GEN, "max_tokens": DLM_GEN},
    ),
}
BASELINE = {"seer": "seer-equal", "dlmserve": "dlmserve-default"}  # each engine's full window
PAIRS = {  # seer config, dlmserve config
    "defaults": ("seer-default", "dlmserve-default"),
    "fastest": ("seer-fastest", "dlmserve-localleap"),
    "equal work": ("seer-equal", "dlmserve-default"),
}
PRIMARY = "equal work"  # the pair of the primary comparison, at the highest concurrency run
FLOOR = 0.30  # accuracy below this is "near the floor"


# ---- the model folder ---------------------------------------------------------------------


def check_llada_code(code: Path | None) -> Path:
    """The folder holding the official modeling files, or one line saying what is missing."""
    if code is None:
        raise SystemExit(
            "bench_peers: --llada-code DIR is required (a folder with the official "
            f"LLaDA modeling files {' and '.join(CODE_FILES)}, e.g. those of the "
            "LLaDA-8B-Instruct hub folder)"
        )
    missing = [f for f in CODE_FILES if not (Path(code) / f).is_file()]
    if missing:
        raise SystemExit(
            f"bench_peers: --llada-code {code}: no {', '.join(missing)} there "
            "(the official LLaDA modeling files)"
        )
    return Path(code)


def export_llada(folder: Path, code: Path, dest: Path) -> Path:
    """Copy the LLaDA-layout model `folder` (its files, not sub-folders) to `dest` with the
    modeling files of `code`; one line if `folder` is not a LLaDA-layout model."""
    cfg_file = folder / "config.json"
    if not cfg_file.is_file():
        raise SystemExit(f"bench_peers: {folder} has no config.json")
    cfg = json.loads(cfg_file.read_text())
    auto = cfg.get("auto_map") or {}
    if cfg.get("model_type") != "llada" or "modeling_llada" not in str(auto.get("AutoModel")):
        raise SystemExit(
            f"bench_peers: {folder} is not a LLaDA-layout model (config.json's model_type "
            "must be llada with an auto_map to modeling_llada)"
        )
    dest.mkdir(parents=True, exist_ok=True)
    for f in sorted(folder.iterdir()):
        if f.is_file():
            shutil.copy2(f, dest / f.name)
    for name in CODE_FILES:
        shutil.copy2(code / name, dest / name)
    return dest


# ---- the servers --------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(engine: str, modules: Path) -> dict:
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "SEER_NO_PROGRESS": "1",
    }
    if engine == "dlmserve":
        env.pop("PYTHONPATH", None)  # dlmserve's own environment, nothing of ours
        env["HF_MODULES_CACHE"] = str(modules)  # transformers' copy of the remote code
        # Fast-dLLM's copy of the hub file wraps SDPA in @torch.compile: run it eagerly, the
        # plain SDPA call of the hub file (as the golden fixtures do)
        env["TORCHDYNAMO_DISABLE"] = "1"
    return env


def server_command(engine: str, model: Path, port: int, python: str) -> list[str]:
    if engine == "seer":
        return [
            sys.executable,
            "-m",
            "seer.cli",
            "serve",
            "--model",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ]
    return [python, str(LAUNCHER), "--model", str(model), "--port", str(port), "--threads", "1"]


def wait_ready(proc: subprocess.Popen, url: str, log: Path, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"bench_peers: the server exited:\n{log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    stop(proc, 5)
    raise SystemExit(f"bench_peers: the server did not start in {timeout:.0f} s (log: {log})")


def stop(proc: subprocess.Popen, timeout: float) -> str:
    """SIGTERM, then SIGKILL after `timeout` seconds: how it ended ("exited" or "killed")."""
    if proc.poll() is not None:
        return "exited"
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
        return "exited"
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return "killed"


# ---- the requests -------------------------------------------------------------------------


def body(model_name: str, prompt: str, options: dict) -> dict:
    return {
        "model": model_name,
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0.0,
        **options,
    }


async def run_point(url, model_name, examples, options, concurrency, timeout) -> tuple[list, float]:
    """Send every example with `options`, at most `concurrency` at a time: per-request records
    (index, status, text, completion tokens, latency) and the wall time of the point."""
    sem = asyncio.Semaphore(concurrency)
    out: list = [None] * len(examples)

    async def one(i, ex, client):
        async with sem:
            t0 = time.perf_counter()
            rec = {"i": i, "id": ex.id}
            try:
                r = await client.post(
                    "/v1/chat/completions", json=body(model_name, ex.prompt, options)
                )
                rec["latency_s"] = round(time.perf_counter() - t0, 4)
                rec["status"] = r.status_code
                if r.status_code == 200:
                    js = r.json()
                    rec["text"] = js["choices"][0]["message"]["content"]
                    rec["completion_tokens"] = js["usage"]["completion_tokens"]
                else:
                    rec["error"] = r.text[:300]
            except Exception as e:  # counted as lost
                rec["latency_s"] = round(time.perf_counter() - t0, 4)
                rec["status"] = None
                rec["error"] = repr(e)[:300]
            out[i] = rec

    limits = httpx.Limits(max_connections=concurrency + 4)
    async with httpx.AsyncClient(base_url=url, timeout=timeout, limits=limits) as client:
        t0 = time.perf_counter()
        await asyncio.gather(*(one(i, ex, client) for i, ex in enumerate(examples)))
        wall = time.perf_counter() - t0
    return out, wall


# ---- the summary (pure) -------------------------------------------------------------------


def percentile(xs: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in [0, 1]) of `xs`; None when empty."""
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def answered(recs: list[dict]) -> list[dict]:
    return [r for r in recs if r.get("status") == 200 and r.get("text") is not None]


def point_summary(recs: list[dict], wall: float) -> dict:
    ok = answered(recs)
    lat = [r["latency_s"] for r in ok]
    scores = [r["score"] for r in ok if r.get("score") is not None]

    def rnd(x):
        return None if x is None else round(x, 4)

    return {
        "requests": len(recs),
        "answered": len(ok),
        "lost": len(recs) - len(ok),
        "wall_s": round(wall, 3),
        "req_per_s": round(len(ok) / wall, 4) if wall > 0 else None,
        "p50_s": rnd(percentile(lat, 0.5)),
        "p90_s": rnd(percentile(lat, 0.9)),
        "p99_s": rnd(percentile(lat, 0.99)),
        "accuracy": round(sum(scores) / len(scores), 4) if scores else None,
    }


def equal_count(a: list[dict], b: list[dict]) -> int:
    """How many requests got the same answer text in `a` and `b` (records in request order)."""
    by = {r["i"]: r.get("text") for r in answered(b)}
    return sum(1 for r in answered(a) if r["i"] in by and by[r["i"]] == r["text"])


def summarise(points: dict, margin: float) -> dict:
    """`points`: {(config, concurrency): (records, wall)} -> the record's results: one row per
    point (figures, accuracy beside the baseline's, non-inferiority, answers equal to the
    engine's solo answers), the seer / dlmserve ratios per pair and concurrency, and
    dlmserve's solo answers against seer's at equal work."""
    from seerbench.stats import noninferior

    rows = []
    concs = sorted({c for _, c in points})
    solo_c = concs[0]
    for (cfg, c), (recs, wall) in points.items():
        row = {
            "config": cfg,
            "engine": CONFIGS[cfg][0],
            "concurrency": c,
            **point_summary(recs, wall),
        }
        base = (BASELINE[CONFIGS[cfg][0]], solo_c)
        if base in points:
            brecs = points[base][0]
            row["baseline"] = f"{base[0]}@c={base[1]}"
            row["baseline_accuracy"] = point_summary(brecs, points[base][1])["accuracy"]
            paired = [
                (r.get("score") or 0.0, b.get("score") or 0.0)
                for r, b in zip(recs, brecs, strict=True)
            ]
            if (cfg, c) != base and paired:
                ok, lo = noninferior([p[0] for p in paired], [p[1] for p in paired], margin / 100)
                row["noninferior"], row["diff_lower95"] = ok, round(lo * 100, 2)
        if c != solo_c and (cfg, solo_c) in points:
            row["solo_equal"] = equal_count(recs, points[(cfg, solo_c)][0])
        acc = row["accuracy"]
        row["near_floor"] = acc is not None and acc < FLOOR
        rows.append(row)
    rows.sort(key=lambda r: (r["concurrency"], list(CONFIGS).index(r["config"])))
    by = {(r["config"], r["concurrency"]): r for r in rows}
    ratios: dict = {}
    for name, (s, d) in PAIRS.items():
        for c in concs:
            if (s, c) in by and (d, c) in by and by[(d, c)]["req_per_s"]:
                ratios.setdefault(name, {})[str(c)] = round(
                    by[(s, c)]["req_per_s"] / by[(d, c)]["req_per_s"], 3
                )
    cross = {}
    for c in concs:
        if ("seer-equal", c) in points and ("dlmserve-default", c) in points:
            cross[str(c)] = equal_count(
                points[("seer-equal", c)][0], points[("dlmserve-default", c)][0]
            )
    primary = ratios.get(PRIMARY, {}).get(str(concs[-1]))
    return {
        "rows": rows,
        "ratios": ratios,
        "seer_equal_vs_dlmserve_default": cross,
        "primary": primary,
    }


def show(results: dict, n: int) -> None:
    print(f"seer serve vs dlmserve 0.1.1: {n} held-out requests per point, greedy, non-streamed")
    head = (
        f"{'config':<19} {'conc':>4} {'req/s':>7} {'p50 s':>7} {'p90 s':>7} {'p99 s':>7} "
        f"{'acc %':>6} {'base %':>6} {'>=-m':>4} {'solo=':>6} {'lost':>4}"
    )
    print(head)
    print("-" * len(head))

    def pc(x):
        return "-" if x is None else f"{100 * x:.1f}"

    for r in results["rows"]:
        ni = {True: "yes", False: "no", None: "-"}[r.get("noninferior")]
        solo = "-" if "solo_equal" not in r else f"{r['solo_equal']}/{r['answered']}"
        print(
            f"{r['config']:<19} {r['concurrency']:>4} {r['req_per_s']:>7.3f} "
            f"{r['p50_s']:>7.3f} {r['p90_s']:>7.3f} {r['p99_s']:>7.3f} {pc(r['accuracy']):>6} "
            f"{pc(r.get('baseline_accuracy')):>6} {ni:>4} {solo:>6} {r['lost']:>4}"
            + ("  near the floor" if r["near_floor"] else "")
        )
    for name, by_c in results["ratios"].items():
        s, d = PAIRS[name]
        print(f"{name}: {s} / {d} = " + ", ".join(f"{x:.2f}x at c={c}" for c, x in by_c.items()))
    for c, k in results["seer_equal_vs_dlmserve_default"].items():
        print(f"c={c}: seer-equal's answers equal dlmserve-default's on {k} requests")


# ---- main ---------------------------------------------------------------------------------


def split(xs: list, k: int) -> list[tuple[int, list]]:
    """`xs` in `k` contiguous parts of near-equal size (none empty): (offset, part) pairs."""
    k = max(1, min(k, len(xs)))
    q, r = divmod(len(xs), k)
    out, at = [], 0
    for j in range(k):
        size = q + (1 if j < r else 0)
        out.append((at, xs[at : at + size]))
        at += size
    return out


def loadavg() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def busy(min_cpu: float = 20.0) -> list[str]:
    """The processes using at least `min_cpu` % of a core now (ps), as 'cpu% command' lines:
    the background load the record states."""
    try:
        out = subprocess.run(
            ["ps", "-eo", "pcpu,args", "--sort=-pcpu"], capture_output=True, text=True, timeout=10
        ).stdout.splitlines()[1:]
    except (OSError, subprocess.SubprocessError):
        return []
    rows = []
    for line in out:
        cpu, _, cmd = line.strip().partition(" ")
        try:
            if float(cpu) >= min_cpu:
                rows.append(f"{cpu}% {cmd.strip()[:120]}")
        except ValueError:
            continue
    return rows


def rounds_done(recs: list[dict], parts: list[tuple[int, list]]) -> int | None:
    """How many leading rounds of `parts` the records `recs` hold, every request of each in
    order; None if they are not such a prefix (another split, another request set)."""
    want: list[int] = []
    for k, (offset, part) in enumerate(parts):
        if [r["i"] for r in recs] == want:
            return k
        want += range(offset, offset + len(part))
    return len(parts) if [r["i"] for r in recs] == want else None


def resume(raw: Path, keys: list[tuple[str, int]], parts: list, n: int) -> tuple[int, dict]:
    """The rounds every point under `raw` already holds and those points ({key: [records,
    wall]}), or one line when their raw files disagree (a missing file counts as no round)."""
    got, ks = {}, set()
    for cfg, c in keys:
        path = raw / f"{cfg}-c{c}.jsonl"
        if not path.is_file():
            ks.add(0)
            continue
        lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        head, recs = lines[0], lines[1:]
        k = rounds_done(recs, parts) if head.get("n") == n else None
        if k is None:
            raise SystemExit(
                f"bench_peers: --resume: {path} holds other requests than this "
                "run's rounds (another --n, --seed or --rounds?)"
            )
        ks.add(k)
        got[(cfg, c)] = [recs, head["wall_s"]]
    if len(ks) > 1:
        raise SystemExit(
            f"bench_peers: --resume: the raw files under {raw} hold different "
            f"numbers of rounds ({sorted(ks)}); remove them or run without "
            "--resume"
        )
    k = ks.pop() if ks else 0
    return k, (got if k else {})


def save_point(path: Path, recs: list, wall: float, meta: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({**meta, "wall_s": round(wall, 4)})] + [json.dumps(r) for r in recs]
    path.write_text("\n".join(lines) + "\n")


VENV_RECIPE = (
    "python3 -m venv DIR; DIR/bin/pip install torch (first: on a CPU machine the CPU build); "
    "DIR/bin/pip install dlmserve==0.1.1 'transformers<5' einops"
)


def prerequisites(code: Path | None, python: str | None) -> Path:
    """The modeling folder, or one line for each missing prerequisite (the modeling files,
    dlmserve's Python), all at once."""
    lines = []
    try:
        folder = check_llada_code(code)
    except SystemExit as e:
        lines.append(str(e))
    if not python:
        lines.append(
            "bench_peers: --dlmserve-python PATH is required (the Python of a "
            "dlmserve environment, or env DLMSERVE_PYTHON; make one: "
            f"{VENV_RECIPE})"
        )
    if lines:
        raise SystemExit("\n".join(lines))
    return folder


def engine_order(rnd: int) -> tuple[str, str]:
    """The engines of round `rnd` in the order they run: the first one alternates."""
    return ("seer", "dlmserve") if rnd % 2 == 0 else ("dlmserve", "seer")


def round_fits(rnd: int, elapsed: float, longest: float, budget_minutes: float | None) -> bool:
    """Whether round `rnd` may start: always the first; later ones only if the longest round
    so far, started now, ends within the budget."""
    return budget_minutes is None or rnd == 0 or elapsed + longest <= 60 * budget_minutes


def preflight(python: str) -> dict:
    """dlmserve's versions and default steps, from its own environment; one line if absent."""
    code = (
        "import json, dlmserve, transformers, einops\n"
        "from dlmserve.api.protocol import ChatCompletionRequest as R\n"
        "print(json.dumps({'dlmserve': dlmserve.__version__, "
        "'transformers': transformers.__version__, "
        "'steps': R.model_fields['num_denoising_steps'].default}))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    try:
        out = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, timeout=300, env=env
        )
    except OSError as e:
        raise SystemExit(
            f"bench_peers: --dlmserve-python {python}: {e.strerror} (make a "
            f"dlmserve environment: {VENV_RECIPE})"
        ) from None
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["?"])[-1]
        raise SystemExit(
            f"bench_peers: --dlmserve-python {python} cannot import dlmserve, "
            f"transformers<5 and einops ({last}); make one: "
            f"{VENV_RECIPE}"
        )
    info = json.loads(out.stdout.strip().splitlines()[-1])
    if info["steps"] != DLM_STEPS:
        raise SystemExit(
            f"bench_peers: dlmserve's default steps are {info['steps']}, this "
            f"benchmark's equal-work config assumes {DLM_STEPS} (0.1.1)"
        )
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="builtin", help="a built-in model's name or a LLaDA folder")
    runs.add_arguments(ap, n=100, data="builtin", skip=("repeats", "threads"))
    ap.add_argument(
        "--llada-code",
        type=Path,
        default=None,
        help="folder with the official modeling_llada.py and configuration_llada.py",
    )
    ap.add_argument(
        "--dlmserve-python",
        default=os.environ.get("DLMSERVE_PYTHON"),
        help="the Python of dlmserve's environment (env DLMSERVE_PYTHON)",
    )
    ap.add_argument("--concurrency", type=runs.positive, nargs="+", default=[1, 16])
    ap.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    ap.add_argument(
        "--margin",
        type=float,
        default=3.0,
        help="non-inferiority margin, points (stated before the run)",
    )
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per request")
    ap.add_argument(
        "--stop-timeout",
        type=float,
        default=30.0,
        help="seconds a server may take to exit after SIGTERM before SIGKILL",
    )
    ap.add_argument(
        "--resume",
        action="store_true",
        help="read back the rounds the raw files under --out hold; run the rest",
    )
    ap.add_argument(
        "--rounds",
        type=runs.positive,
        default=4,
        help="split the requests into this many rounds, the engines interleaved",
    )
    ap.add_argument(
        "--budget-minutes",
        type=float,
        default=None,
        help="start no round that would end past this many minutes",
    )
    ap.add_argument("--log-dir", type=Path, default=None, help="the servers' output (default: tmp)")
    args = ap.parse_args(argv)
    code = prerequisites(args.llada_code, args.dlmserve_python)

    from seer.data import score
    from seer.errors import SeerError
    from seer.models.loader import model_folder
    from seerbench.draws import held_out

    tmp = Path(tempfile.mkdtemp(prefix="bench_peers-"))
    try:  # the model and the requests first: a bad one is one line, before dlmserve is asked
        folder = export_llada(model_folder(args.model), code, tmp / "llada")
        examples = held_out(args.data, args.n, args.seed)
    except SeerError as e:
        raise SystemExit(f"bench_peers: {e}") from None
    finally:
        if not (tmp / "llada" / "config.json").is_file():
            shutil.rmtree(tmp, ignore_errors=True)
    info = preflight(args.dlmserve_python)
    args.threads = 1
    session = runs.Session("peers", args)
    logs = args.log_dir or tmp
    logs.mkdir(parents=True, exist_ok=True)
    raw = Path(args.out) / "requests" if args.out else tmp / "requests"
    protocol = {
        "primary": f"requests/s of {PAIRS[PRIMARY][0]} / {PAIRS[PRIMARY][1]} at "
        f"concurrency {max(args.concurrency)} (equal work: both run LLaDA's low-confidence "
        f"decoding, {DLM_STEPS} steps over a {DLM_GEN}-token window in one block)",
        "margin_points": args.margin,
        "accuracy_baseline": "each engine's full-window config at concurrency "
        f"{min(args.concurrency)} (seer: {BASELINE['seer']}, dlmserve: {BASELINE['dlmserve']})",
        "configs": {c: CONFIGS[c][1] for c in args.configs},
        "dlmserve": info,
        "requests": [e.id for e in examples],
    }
    print("protocol (fixed before the first request): " + json.dumps(protocol), flush=True)
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        fixed = Path(args.out) / "protocol.json"
        if args.resume and fixed.is_file() and json.loads(fixed.read_text()) != protocol:
            raise SystemExit(
                f"bench_peers: --resume: {fixed} states another protocol than "
                "this run's; remove it or run without --resume"
            )
        fixed.write_text(json.dumps(protocol, indent=1) + "\n")

    parts = split(examples, args.rounds)
    keys = [(cfg, c) for c in args.concurrency for cfg in args.configs]
    acc: dict = {}  # (config, concurrency) -> [records, wall]
    first = 0  # the first round this process runs
    if args.resume:
        first, acc = resume(raw, keys, parts, len(examples))
        if first:
            print(f"[peers] read back {first} of {len(parts)} rounds", flush=True)
    stops: list = []
    load: list = [{"at": "start", "loadavg": loadavg(), "busy": busy()}]
    rounds_run, longest, t_start = 0, 0.0, time.monotonic()
    for rnd, (offset, part) in enumerate(parts):
        if rnd < first:
            rounds_run += 1
            continue
        elapsed = time.monotonic() - t_start
        if not round_fits(rnd - first, elapsed, longest, args.budget_minutes):
            print(
                f"[peers] stopping after {rnd} of {len(parts)} rounds: the next would end "
                f"past the {args.budget_minutes:g}-minute budget",
                flush=True,
            )
            break
        t_round = time.monotonic()
        for engine in engine_order(rnd):
            todo = [(cfg, c) for cfg, c in keys if CONFIGS[cfg][0] == engine]
            if not todo:
                continue
            port = free_port()
            log = logs / f"{engine}-r{rnd}.log"
            load_start = loadavg()
            proc = subprocess.Popen(
                server_command(engine, folder, port, args.dlmserve_python),
                env=server_env(engine, tmp / "modules"),
                stdout=log.open("w"),
                stderr=subprocess.STDOUT,
                cwd=tmp,
            )
            url = f"http://127.0.0.1:{port}"
            try:
                wait_ready(proc, url, log)
                if engine == "dlmserve":
                    name = str(folder)  # dlmserve's model id is the folder it was given
                else:
                    name = httpx.get(f"{url}/v1/models", timeout=10).json()["data"][0]["id"]
                for cfg in dict.fromkeys(cfg for cfg, _ in todo):  # warm-up, batched too
                    asyncio.run(
                        run_point(
                            url,
                            name,
                            part[:2],
                            CONFIGS[cfg][1],
                            min(max(args.concurrency), 2),
                            args.timeout,
                        )
                    )
                for cfg, c in todo:
                    print(
                        f"[peers] round {rnd + 1}/{len(parts)}: {cfg} at concurrency {c} "
                        f"({len(part)} requests) ...",
                        flush=True,
                    )
                    recs, wall = asyncio.run(
                        run_point(url, name, part, CONFIGS[cfg][1], c, args.timeout)
                    )
                    for r, ex in zip(recs, part, strict=True):
                        r["i"] += offset
                        r["round"] = rnd
                        r["score"] = score(ex, r["text"]) if r.get("text") is not None else None
                    got = acc.setdefault((cfg, c), [[], 0.0])
                    got[0].extend(recs)
                    got[1] += wall
                    save_point(
                        raw / f"{cfg}-c{c}.jsonl",
                        got[0],
                        got[1],
                        {"config": cfg, "concurrency": c, "n": len(examples), "rounds": rnd + 1},
                    )
            finally:
                stops.append(
                    {"engine": engine, "round": rnd, "stopped": stop(proc, args.stop_timeout)}
                )
                load.append(
                    {
                        "at": f"round {rnd + 1} {engine}",
                        "loadavg_start": load_start,
                        "loadavg_end": loadavg(),
                    }
                )
        rounds_run += 1
        longest = max(longest, time.monotonic() - t_round)
    n_run = sum(len(p) for _, p in parts[:rounds_run])
    points = {k: (v[0], v[1]) for k, v in acc.items()}
    results = summarise(points, args.margin)
    record = session.record(
        results["rows"],
        model=args.model,
        source=args.data,
        n=n_run,
        protocol=protocol,
        ratios=results["ratios"],
        primary=results["primary"],
        seer_equal_vs_dlmserve_default=results["seer_equal_vs_dlmserve_default"],
        stops=stops,
        rounds={
            "planned": len(parts),
            "run": rounds_run,
            "read_back": first,
            "requests_planned": len(examples),
        },
        load=load,
    )
    show(results, n_run)
    if n_run < len(examples):
        print(
            f"[peers] the budget cut the run to {rounds_run} of {len(parts)} rounds: "
            f"{n_run} of {len(examples)} requests per point",
            flush=True,
        )
    session.emit(record)
    shutil.rmtree(tmp / "llada", ignore_errors=True)
    return 0 if all(r["lost"] == 0 for r in results["rows"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
