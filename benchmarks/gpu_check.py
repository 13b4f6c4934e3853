"""The prepared GPU check (run by `benchmarks/gpu_check.sh`): nine sections, each timed, each
writing its result under `--out` (default docs/results/gpu/), a summary table and a last-line JSON.

  graphs   the engine's static path with CUDA graphs against the same path run eagerly
           (`EngineConfig(cuda_graphs=False)`): same tokens; time of a second (warm) pass
  triton   the compiled Triton compaction kernel against the reference (`seer.kernels`) on
           random groups (row and packed layouts): every output tensor equal
  bf16     the LLaDA golden cases (official LLaDA `generate`, Fast-dLLM caches, Fast-dLLM
           threshold/factor) on the device in float32 (must match token for token) and in
           bfloat16 (reported: how many still match, and the largest logit difference)
  engine   the engine's throughput with a mid-size random LLaDA (bf16) at batch 64 and 256:
           no truncation / Seer with naive padding / Seer routed / oracle routed
           (`seer.throughput.run`, held-out and synthetic long-tailed workloads)
  serving  `bench_serving.py` with that random LLaDA (bf16) on the device: Poisson arrivals up to
           saturation, one-at-a-time / static / fcfs / shortest_first (issue 14's GPU run)
  project  the cost model's H200 projection (`seerbench.costmodel.forward_seconds`, the roofline
           behind `benchmarks/project_h200.py`) against timed forwards of a random LLaDA (bf16) at
           batch 1 and 64 over prompt + window of 128 and 384 positions: measured / projected
  compare  `bench_compare.py` on the built-in text model at one budget (4 tokens per step)
  train    the text model v2's trainer on the device: one batch's loss equal to the CPU's, and
           optimiser steps/s at batch 16 and 256 (whether a GPU session can train there)
  merge    `EngineConfig.merge_on` off against auto (the default: merges priced on the GPU
           found): the built-in model serves `bench_trace_ticks.py`'s uniform and mixed traces;
           every forward timed on the GPU clock beside its predicted seconds, and each case's
           serving wall (the host's planning included), each setting timed twice in the order
           off, auto, auto, off (last: it stops starting cases past the budget and says so)

Every row timed by `graphs`, `engine`, `project`, `compare` (its cache-free configs at
batch 1) and `merge` is printed with the simulator's prediction
beside it (`seer.sim`: the same requests' windows and NFE replayed on the engine's scheduler,
priced by the roofline of the GPU found, with the validated efficiencies), so the first GPU run
confirms or refutes the simulator; on a device the simulator does not know (a CPU), the
prediction is priced as an H100 and labelled so.

`--tiny` shrinks every size so that the whole check runs on a CPU in a few minutes (`--device
cpu --tiny`): it proves that each step runs, not what a GPU does (no graphs, no Triton on CPU:
those sections then say "skipped" with the reason).

    python benchmarks/gpu_check.py --device cuda --out docs/results/gpu
    python benchmarks/gpu_check.py --device cpu --tiny --out /tmp/gpu_check
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import statistics
import tempfile
import time
import traceback
from pathlib import Path

import torch

import seer
from seer.sampling import SamplingParams, TokenIds
from seerbench.machine import machine_info

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "fixtures" / "golden" / "llada"


def sync(device: str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def random_llada(folder: Path, tiny: bool) -> Path:
    from seer.models.factory import make_random_checkpoint

    if (folder / "config.json").is_file():  # made by an earlier section
        return folder
    width, layers = (64, 2) if tiny else (1024, 12)
    return make_random_checkpoint("llada", folder, layers=layers, width=width, seed=0)


def prompts(n: int) -> list[str]:
    from seer.data import load_examples

    return [e.prompt for e in load_examples("builtin-v1", n=n, part="eval")]  # its vocabulary


# -- the simulator's predictions beside the measurements -------------------------------------------


def sim_profile(device: str) -> tuple[str, str]:
    """The `seer.sim` GPU profile the device's name names (`seer.roofline.hardware.profile_of`, as
    merge_on="auto" finds it; h100 when it names none), and a label."""
    from seer.roofline import hardware

    name = torch.cuda.get_device_name(0) if torch.device(device).type == "cuda" else device
    if (key := hardware.profile_of(name)) is not None:
        return key, f"predicted for {hardware.gpu(key).name}"
    return "h100", f"no simulated GPU is {name!r}: predicted for an H100"


def sim_gpu(device: str):
    """The `seer.sim` GPU that matches the device (an H100 when it knows none), and a label."""
    from seer.roofline import hardware

    key, label = sim_profile(device)
    return hardware.gpu(key), label


def sim_seconds(folder: Path, device: str, shapes: list, cfg, gen_length: int) -> float:
    """Predicted seconds of a warmed-up engine run of requests with these (prompt, window, NFE,
    answer tokens), all arriving at once, under EngineConfig `cfg`."""
    from seer.sim import load_shape, report
    from seer.sim.engine import SimEngine
    from seer.sim.trace import Decoding, SimRequest

    hw, _ = sim_gpu(device)
    reqs = [SimRequest(p, a, measured={"seer": (w, n)}) for p, w, n, a in shapes]
    sim = SimEngine(
        load_shape(str(folder)), hw, report.efficiency(), cfg, Decoding(gen_length=gen_length)
    )
    sim.run(reqs, "seer")  # the warm-up run, as measured: its graphs are captured before timing
    return sim.run(reqs, "seer").seconds


# -- sections ------------------------------------------------------------------------------------


def check_graphs(args, tmp: Path) -> dict:
    from seer.engine import Engine, EngineConfig, Request

    dtype = torch.float32 if args.tiny else torch.bfloat16
    lm = seer.load(random_llada(tmp / "graphs", args.tiny), dtype=dtype, device=args.device)
    n = 8 if args.tiny else 64
    p = SamplingParams(gen_length=64, steps=16)
    rng = random.Random(0)
    has_window = "window" in getattr(Request, "__dataclass_fields__", {})
    reqs = []
    for text in prompts(n):
        kw = {"window": rng.choice([8, 16, 24, 32, 64])} if has_window else {"seer": True}
        reqs.append(Request(text, params=p, **kw))
    out, predicted = {}, {}
    folder = random_llada(tmp / "graphs", args.tiny)
    for graphs in (True, False):
        cfg = EngineConfig(max_batch=n, cuda_graphs=graphs, routing="static")
        eng = Engine(lm, cfg)
        eng.generate(reqs)  # warm-up: captures the graphs
        sync(args.device)
        t0 = time.perf_counter()
        res = eng.generate(reqs)
        sync(args.device)
        out[graphs] = (time.perf_counter() - t0, [r.token_ids for r in res])
        shapes = [(r.prompt_tokens, r.window, r.nfe, r.tokens) for r in res]
        predicted[graphs] = sim_seconds(folder, args.device, shapes, cfg, 64)
        print(
            f"  [graphs] cuda_graphs={graphs}: {out[graphs][0]:.3f} s measured, "
            f"{predicted[graphs]:.3f} s {sim_gpu(args.device)[1]}",
            flush=True,
        )
    same = sum(a == b for a, b in zip(out[True][1], out[False][1], strict=True))
    used = torch.device(args.device).type == "cuda"
    return {
        "predicted_graphs_seconds": predicted[True],
        "predicted_eager_seconds": predicted[False],
        "predicted_speedup": predicted[False] / predicted[True],
        "ok": same == n,
        "requests": n,
        "same_tokens": same,
        "graphs_seconds": out[True][0],
        "eager_seconds": out[False][0],
        "speedup": out[False][0] / out[True][0],
        "note": None if used else "no CUDA: both passes ran eagerly (graphs are CUDA-only)",
    }


def check_triton(args, tmp: Path) -> dict:
    from seer.kernels import dispatch
    from seer.kernels.compact_ref import compact_reference

    if not dispatch.triton_available():
        return {"ok": None, "skipped": "triton is not installed (pip install seer[kernels])"}
    if torch.device(args.device).type != "cuda" and not dispatch._interpreting():
        return {"ok": None, "skipped": "no CUDA and TRITON_INTERPRET is not set"}
    g = torch.Generator().manual_seed(0)
    cases, bad = 0, []
    for trial in range(8 if args.tiny else 64):
        b = int(torch.randint(1, 9 if args.tiny else 65, (1,), generator=g))
        plens = torch.randint(1, 40, (b,), generator=g).tolist()
        wins = torch.randint(1, 65, (b,), generator=g).tolist()
        rows = sorted(random.Random(trial).sample(range(b), k=max(1, b // 2)))
        for capacity in (0, 128):
            args_, kw = _compact_case(plens, wins, rows, capacity, g, args.device)
            ref = compact_reference(*args_, **kw, pad_id=0, eos_id=1)
            with dispatch.use_backend("triton"):
                got = dispatch.compact(*args_, **kw, pad_id=0, eos_id=1)
            cases += 1
            for f in ref.__dataclass_fields__:
                if not torch.equal(getattr(ref, f).cpu(), getattr(got, f).cpu()):
                    bad.append(f"trial {trial} capacity {capacity}: {f}")
    return {"ok": not bad, "cases": cases, "mismatches": bad[:10]}


def _compact_case(plens, windows, rows, capacity, g, device):
    """A step-0 canvas and the arguments of one group (as the engine's scheduler builds them)."""
    b, p_in, w_in = len(plens), max(plens), max(windows)
    x = torch.randint(2, 100, (b, p_in + w_in), generator=g)
    for r, q in enumerate(plens):
        x[r, : p_in - q] = 0
    width = max(windows[r] for r in rows)
    p_out = max(plens[r] for r in rows) + 1
    offsets, n_packs = None, 0
    if capacity:
        lengths = [plens[r] + windows[r] for r in rows]
        capacity = max([capacity, *lengths])
        offs, pack, used = [], 0, 0
        for n in lengths:  # next-fit
            if used + n > capacity:
                pack, used = pack + 1, 0
            offs.append(pack * capacity + used)
            used += n
        offsets, n_packs = torch.tensor(offs, device=device), pack + 1
    t = lambda v: torch.tensor(v, dtype=torch.long, device=device)  # noqa: E731
    kw = dict(p_in=p_in, p_out=p_out, width=width, capacity=capacity, n_packs=n_packs, shift=0)
    return (x.to(device), t(plens), t(windows), t(rows), offsets), kw


def check_bf16(args, tmp: Path) -> dict:
    from seer.diffusion.loop import DenoisingLoop, make_canvas
    from seer.models.loader import load_model

    raw = json.loads((GOLDEN / "config.json").read_text())  # the fixture's ids, not literals
    tokens = TokenIds(mask=raw["mask_token_id"], eos=raw["eos_token_id"], pad=raw["eos_token_id"])
    cache_of = {
        "generate": "none",
        "generate_with_prefix_cache": "prefix",
        "generate_with_dual_cache": "dual",
    }
    cases = []
    for name in ("golden.json", "golden_cache.json", "golden_parallel.json"):
        for c in json.loads((GOLDEN / name).read_text())["generations"]:
            kw = c["kwargs"]
            if c.get("attention_mask") is not None or kw.get("cfg_scale", 0) > 0:
                continue
            p = SamplingParams(
                gen_length=kw["gen_length"],
                # more steps than tokens is refused; Fast-dLLM's extra steps reveal nothing (a
                # block runs while it has masks), so its tokens are those of steps = gen_length
                steps=min(kw["steps"], kw["gen_length"]),
                block_length=kw["block_length"],
                remasking=kw["remasking"],
                threshold=kw.get("threshold"),
                factor=kw.get("factor"),
                cache=cache_of.get(c.get("function"), "none"),
            )
            cases.append((f"{name}:{c['name']}", c["prompt_ids"], p, c["output_ids"]))
    if args.tiny:
        cases = cases[::6]
    out = {}
    logits = {}
    for dtype in (torch.float32, torch.bfloat16):
        model = load_model(GOLDEN, dtype=dtype, device=args.device)
        loop = DenoisingLoop(model, tokens)
        hits = 0
        for _, ids, p, want in cases:
            c = make_canvas(ids, p.gen_length, tokens, args.device)
            res = loop.run(c, p)
            got = torch.cat([torch.tensor(ids), res.answer.cpu()], dim=1).tolist()
            hits += got == want
        x = torch.tensor(cases[0][1], device=args.device)
        with torch.inference_mode():
            logits[dtype] = model(x).logits.float().cpu()
        out[str(dtype).split(".")[1]] = {"cases": len(cases), "token_exact": hits}
    diff = float((logits[torch.float32] - logits[torch.bfloat16]).abs().max())
    return {
        "ok": out["float32"]["token_exact"] == len(cases),
        **out,
        "bf16_max_logit_diff": diff,
        "note": "float32 must match the official goldens; bfloat16 is reported, not required",
    }


def check_engine(args, tmp: Path) -> dict:
    from seer import throughput

    dtype = torch.float32 if args.tiny else torch.bfloat16
    lm = seer.load(random_llada(tmp / "engine", args.tiny), dtype=dtype, device=args.device)
    batches = (8, 16) if args.tiny else (64, 256)
    record = throughput.run(
        lm,
        n=max(batches),
        batches=batches,
        gen_length=64,
        tau_pad=0.4,
        seed=0,
        progress=lambda s: print(f"  [engine] {s}", flush=True),
    )
    (args.out / "engine.json").write_text(json.dumps(record))
    throughput.show(record)
    folder, label = random_llada(tmp / "engine", args.tiny), sim_gpu(args.device)[1]
    rows = []
    for r in record["results"]:
        row = {
            k: r[k] for k in ("workload", "batch", "method", "tok_s", "same", "seconds") if k in r
        }
        if "shapes" in r:  # the simulator replays the run's windows and NFE
            cfg = throughput.engine_config(r["method"], r["batch"], 0.4)
            row["predicted_seconds"] = sim_seconds(folder, args.device, r["shapes"], cfg, 64)
            row["predicted_tok_s"] = r["tok_s"] * r["seconds"] / row["predicted_seconds"]
            print(
                f"  [engine] {r['workload']:9s} batch {r['batch']:3d} {r['method']:13s} "
                f"{r['tok_s']:8.1f} tok/s measured, {row['predicted_tok_s']:8.1f} {label}",
                flush=True,
            )
        rows.append(row)
    return {
        "ok": True,
        "model": "random LLaDA " + ("64x2" if args.tiny else "1024x12"),
        "results": rows,
    }


def _bench_module(name: str):
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def check_serving(args, tmp: Path) -> dict:
    import contextlib
    import io

    folder = random_llada(tmp / "engine", args.tiny)  # the engine section's model, if made
    n, rates = ("6", ["2"]) if args.tiny else ("48", ["1", "8"])
    argv = [
        "--models",
        str(folder),
        "--data",
        "builtin-v1",
        "--device",
        args.device,
        "--n",
        n,
        "--rates",
        *rates,
        "--gen-length",
        "64",
        "--steps",
        "64",
        "--max-batch",
        "8" if args.tiny else "64",
        "--budget",
        "0",
        "--plot",
        str(args.out / "serving.png"),
    ]
    if not args.tiny:
        argv += ["--dtype", "bfloat16"]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        _bench_module("bench_serving").main(argv)
    lines = buf.getvalue().splitlines()
    print("\n".join(lines[:-1]), flush=True)  # the table; the last line is the JSON record
    rec = json.loads(lines[-1])
    (args.out / "serving.json").write_text(json.dumps(rec))
    return {"ok": True, "verdicts": rec["verdicts"]}


def check_compare(args, tmp: Path) -> dict:
    mod = _bench_module("bench_compare")
    n, rep = ("3", "1") if args.tiny else ("48", "3")
    argv = [
        "--model",
        "builtin",
        "--budgets",
        "4",
        "--n",
        n,
        "--repeats",
        rep,
        "--device",
        args.device,
        "--raw",
        str(args.out / "compare_raw.jsonl"),
        "--plot",
        str(args.out / "compare.png"),
        "--no-daedal",
    ]
    if args.tiny:
        argv.append("--quick")  # its set has no factor configs to skip
    else:
        argv += ["--skip", "factor,seer+factor,dual+factor,seer+dual+factor"]
    rec = mod.main(argv)
    (args.out / "compare.json").write_text(json.dumps(rec))
    keep = ("accuracy", "nfe", "loop_ms", "b32_ms", "loop_speedup_vs_ref")
    results = {k: {f: r.get(f) for f in keep} for k, r in rec["results"].items()}
    predicted = compare_predictions(args, args.out / "compare_raw.jsonl", rec["gen_length"])
    for name, ms in predicted.items():
        if name in results:
            results[name]["predicted_loop_ms"] = ms
            print(
                f"  [compare] {name:32s} {results[name]['loop_ms'] or 0:9.2f} ms measured, "
                f"{ms:9.2f} ms {sim_gpu(args.device)[1]}",
                flush=True,
            )
    return {"ok": True, "results": results}


def compare_predictions(args, raw: Path, g: int) -> dict[str, float]:
    """The simulator's batch-1 ms per request of every cache-free config of a comparison's raw
    rows (each request's measured window and NFE, the built-in model's shape)."""
    from seer.engine.config import EngineConfig
    from seer.sim import load_shape, report
    from seer.sim.engine import SimEngine
    from seer.sim.trace import Decoding, SimRequest
    from seerbench import records

    rows = [json.loads(x) for x in records.read_text(raw).splitlines() if x.strip()]
    rows = [r for r in rows if "results" in r]
    shape = load_shape(str(Path(seer.__file__).parent / "assets" / "builtin"))
    hw, eff = sim_gpu(args.device)[0], report.efficiency()
    out = {}
    for name in rows[0]["results"] if rows else ():
        if any(c in name for c in ("dual", "prefix", "dpad", "daedal")):
            continue  # cache layouts and growing windows: not priced per request here
        reqs = []
        for r in rows:
            x = r["results"].get(name)
            if x is not None and "nfe" in x:
                m = {"run": (int(x["window"]), int(x["nfe"]))}
                reqs.append(
                    SimRequest(int(x.get("prompt_tokens") or 0), int(x["tokens"]), measured=m)
                )
        if reqs:
            sim = SimEngine(shape, hw, eff, EngineConfig(max_batch=1), Decoding(gen_length=g))
            out[name] = 1000 * sim.run(reqs, "run").seconds / len(reqs)
    return out


def check_project(args, tmp: Path) -> dict:
    """The roofline projection against real forwards: a random LLaDA (bf16 on a GPU, the
    engine section's 1024 x 12) timed at the shapes the projection uses. Reports measured /
    projected per shape (1: the roofline reached; the projection is a bound, so a ratio
    under 1 is an error in it)."""
    import json as _json

    from seerbench import costmodel

    tiny = args.tiny
    dtype = torch.float32 if tiny else torch.bfloat16
    folder = random_llada(tmp / "engine", tiny)
    lm = seer.load(folder, dtype=dtype, device=args.device)
    from seer.roofline import cost
    from seer.sim import load_shape, report

    shape = costmodel.shape_of(_json.loads((folder / "config.json").read_text()), "random LLaDA")
    hw = costmodel.H200
    sim_shape, (sim_hw, label) = load_shape(str(folder)), sim_gpu(args.device)
    rows = []
    for batch in (1, 4) if tiny else (1, 64):
        for length in (128, 384):
            x = torch.randint(3, min(200, shape.vocab), (batch, length), device=args.device)
            with torch.inference_mode():
                for _ in range(2):  # warm-up
                    lm.model(x)
                sync(args.device)
                t0, n = time.perf_counter(), 3 if tiny else 10
                for _ in range(n):
                    lm.model(x)
                sync(args.device)
            measured = (time.perf_counter() - t0) / n
            projected = costmodel.forward_seconds(shape, batch, length, length, hw)
            ms, pms = 1000 * measured, 1000 * projected
            w = cost.Work(batch * length, batch * length * length, batch * length, batch * length)
            sim_ms = 1000 * cost.seconds(sim_shape, sim_hw, report.efficiency(), w, "eager")
            rows.append(
                {
                    "batch": batch,
                    "positions": length,
                    "ratio": measured / projected,
                    "measured_ms": ms,
                    "projected_ms": pms,
                    "predicted_ms": sim_ms,
                }
            )
            print(
                f"  [project] batch {batch}, {length} positions: {1000 * measured:.2f} ms "
                f"measured, {1000 * projected:.2f} ms projected (H200 roofline), "
                f"{sim_ms:.2f} ms {label}",
                flush=True,
            )
    return {
        "ok": True,
        "model": shape.name,
        "params": shape.params,
        "results": rows,
        "note": "ratio = measured / projected (>= 1: the projection is a bound)",
    }


def check_train(args, tmp: Path) -> dict:
    """The text model v2's trainer on the device (a GPU session can train there): one batch's
    loss equals the CPU's (fp32; the masks are drawn on the CPU either way), then optimiser
    steps per second at batch 16 and 256 from the shipped weights."""
    import copy
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the lab's `training`
    from training import builtin_v2, trainer

    lm = seer.load("builtin")
    enc = builtin_v2.ChatEncoder(lm.tokenizer)
    sizes = (4,) if args.tiny else (16, 256)
    out = {"ok": True, "steps_per_s": {}, "tokens_per_s": {}}
    for b in sizes:
        c = builtin_v2.TrainConfig(batch_size=b, device=args.device)
        batch = next(builtin_v2.batches(enc, c, random.Random(0), lambda: 10**6))
        model = copy.deepcopy(lm.model).float().to(args.device).train()
        if b == sizes[0]:  # parity with the CPU on the same batch and masks
            cpu = copy.deepcopy(lm.model).float().train()
            ref = trainer.loss_fn(cpu, *batch, enc.mask, torch.Generator().manual_seed(0))
            got = trainer.loss_fn(
                model,
                *trainer.to_device(batch, args.device),
                enc.mask,
                torch.Generator().manual_seed(0),
            )
            out["loss_cpu"], out["loss_device"] = ref.item(), got.item()
            out["ok"] = abs(ref.item() - got.item()) <= 1e-3 * max(1.0, abs(ref.item()))
        opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
        gen, n = torch.Generator().manual_seed(0), 2 if args.tiny else 20
        on_device = trainer.to_device(batch, args.device)  # once: the steps time training only
        for i in range(n + 2):  # two warm-up steps
            if i == 2:
                sync(args.device)
                t0 = time.perf_counter()
            loss = trainer.loss_fn(model, *on_device, enc.mask, gen)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        sync(args.device)
        dt = time.perf_counter() - t0
        out["steps_per_s"][b] = round(n / dt, 2)
        out["tokens_per_s"][b] = round(n * batch[0].numel() / dt)
    return out


MERGE_NOISE = 0.05  # merge: auto's forward seconds may be this share above off's and pass
MERGE_WALL_NOISE = 0.10  # merge: its serving wall (host time included, noisier) this share


class ForwardClock:
    """Every model forward of `lm` while installed: its shape (`bench_trace_ticks.Forward`:
    rows, columns, logit positions) and its span on the device's clock (CUDA events on a GPU,
    `time.perf_counter` off it). A CUDA-graph replay is one forward (its shape taken at the
    graph cache); the model calls inside a capture are not counted."""

    def __init__(self, lm, device: str) -> None:
        from seer.diffusion.graphs import GraphCache

        self.cuda = torch.device(device).type == "cuda"
        self.fwd: list[tuple[int, int, int]] = []  # each forward's (rows, columns, logits)
        self.spans: list[tuple] = []  # each forward's (start, end) stamps
        self._open, self._capturing = None, False
        self._hooks = [
            lm.model.register_forward_pre_hook(self._pre, with_kwargs=True),
            lm.model.register_forward_hook(self._post, with_kwargs=True),
        ]
        self._cls, self._original = GraphCache, GraphCache.__call__
        self._call = self._original  # what a replay runs (the cache's own call)

        def replay(graphs, x, mask, pos, cols):  # a function: the cache comes as `graphs`
            return self._replay(graphs, x, mask, pos, cols)

        GraphCache.__call__ = replay  # type: ignore[method-assign]

    def close(self) -> None:
        for h in self._hooks:
            h.remove()
        self._cls.__call__ = self._original  # type: ignore[method-assign]

    def stamp(self):
        if not self.cuda:
            return time.perf_counter()
        e = torch.cuda.Event(enable_timing=True)
        e.record()
        return e

    def seconds(self) -> float:
        """The forwards' summed spans."""
        if not self.cuda:
            return sum(b - a for a, b in self.spans)
        torch.cuda.synchronize()
        return sum(a.elapsed_time(b) for a, b in self.spans) / 1000

    def _pre(self, module, a, k) -> None:
        if self._capturing:
            return
        x = a[0] if a and a[0] is not None else k["inputs_embeds"]
        at = k.get("logits_positions")  # eager: the answer columns; packed: the slots
        logits = at.stop - at.start if isinstance(at, slice) else x.shape[1]
        self.fwd.append((int(x.shape[0]), int(x.shape[1]), int(logits)))
        self._open = self.stamp()

    def _post(self, module, a, k, out) -> None:
        if not self._capturing:
            self.spans.append((self._open, self.stamp()))

    def _replay(self, graphs, x, mask, pos, cols):
        self.fwd.append((int(x.shape[0]), int(x.shape[1]), cols.stop - cols.start))
        start, self._capturing = self.stamp(), True
        try:
            out = self._call(graphs, x, mask, pos, cols)
        finally:
            self._capturing = False
        self.spans.append((start, self.stamp()))
        return out


def check_merge(args, tmp: Path) -> dict:
    """merge_on off against auto, measured: the built-in text model on the device serves the
    uniform and the mixed trace of `bench_trace_ticks.py` (`bench_serving.py --trace`'s
    traffic, its functions reused) by closed-loop clients under each setting, in one process,
    each case twice (the first a warm-up: graph captures); every forward of the second pass is
    timed on the device's clock and priced by the simulator's roofline on the GPU found as the
    served model (in bf16; float32 with --tiny), so the measured seconds stand beside the
    predicted ones of the same forwards; each case's serving wall (the host's planning
    included) is part of the rule too, and the two settings run off, on, on, off (`_merge_case`).
    Where auto is off (a CPU, an unknown GPU) the profile the prediction uses is named instead,
    and the run says so. The model is small (d_model 128): on a GPU its forwards are
    launch-bound, so this checks the rule in that regime, not an 8B model's."""
    from seer.data import load_examples
    from seer.engine import Engine, EngineConfig

    ticks = _bench_module("bench_trace_ticks")
    dtype = torch.float32 if args.tiny else torch.bfloat16  # auto prices 16-bit forwards
    lm = seer.load("builtin", dtype=dtype, device=args.device)
    n, concurrency = (8, (8,)) if args.tiny else (24, (8, 32))
    examples = load_examples("builtin", n=n, part="eval", seed=0)[:n]
    traces = {
        k: ticks.requests(lm, examples, k, lm.name or "builtin", 0) for k in ("uniform", "mixed")
    }
    key, label = sim_profile(args.device)
    auto = Engine(lm, EngineConfig(merge_on="auto")).scheduler.price
    on = "auto" if auto is not None else key
    note = None if auto is not None else f"auto is off on {args.device}: {key} named instead"
    rule = (
        f"merge_on {on} is confirmed on this device if, in every case, its measured forward "
        f"seconds are <= {1 + MERGE_NOISE:.2f}x off's and its serving wall (the host's planning "
        f"included) <= {1 + MERGE_WALL_NOISE:.2f}x off's, each the mean of two timed passes "
        f"run off, {on}, {on}, off (predicted: {label}, as the served model)"
    )
    print(f"  [merge] stated before the first request: {rule}{'; ' + note if note else ''}")
    price, clock, rows = ticks.pricer(str(lm.path), key), ForwardClock(lm, args.device), []
    last = 0.0  # seconds the last case took: a case starts only if one more fits the budget
    try:
        for kind, reqs in traces.items():
            for c in concurrency:
                if time.time() + last > args.deadline:
                    print(f"  [merge] {kind} c={c} skipped: over the budget", flush=True)
                    continue
                t0 = time.time()
                serve = functools.partial(ticks.serve, lm, reqs, c, fwd=clock.fwd, price=price)
                rows += _merge_case(args, serve, f"{kind}/c={c}", ("none", on), clock, key)
                last = time.time() - t0
    finally:
        clock.close()
    checks = [
        r["measured_over_off"] <= 1 + MERGE_NOISE and r["wall_over_off"] <= 1 + MERGE_WALL_NOISE
        for r in rows
        if "measured_over_off" in r
    ]
    confirmed = None if auto is None or not checks else all(checks)  # None: not measured
    return {
        "ok": confirmed is not False,  # a measured regression of the GPU default fails the check
        "rule": rule,
        "merge_on": on,
        "profile": key,
        "confirmed": confirmed,
        "note": note,
        "results": rows,
    }


def _merge_case(args, serve, case: str, values, clock: ForwardClock, key: str) -> list[dict]:
    """One (traffic, concurrency) served (`serve`: `bench_trace_ticks.serve` of its requests
    and clients) under the two merge_on `values` (off first): a warm-up of each (not with
    --tiny: no graphs on a CPU), then timed passes in the order A, B, B, A, so that neither
    setting always runs first; each setting's measured forward seconds and serving wall are
    the mean of its two passes, the second value's set against the first's."""
    from seer.engine import EngineConfig

    cfgs = {v: EngineConfig(merge_on=v) for v in values}
    if not args.tiny:
        for cfg in cfgs.values():
            serve(cfg=cfg)  # warm-up: graphs captured
    passes: dict[str, list[tuple[float, float, dict]]] = {v: [] for v in values}
    for v in (*values, *reversed(values)):
        clock.spans.clear()
        sync(args.device)
        t0 = time.perf_counter()
        r = serve(cfg=cfgs[v])
        sync(args.device)
        wall, measured = time.perf_counter() - t0, clock.seconds()
        assert len(clock.spans) == len(clock.fwd) == r["forwards"]
        passes[v].append((measured, wall, r))
    out = []
    for v, got in passes.items():
        r = got[0][2]  # counts and predictions are the same in both passes
        measured, wall = (statistics.fmean(x[i] for x in got) for i in (0, 1))
        out.append(
            {
                "case": case,
                "merge_on": v,
                "forwards": r["forwards"],
                "rows_per_forward": r["rows_per_forward"],
                "measured_seconds": measured,
                "predicted_seconds": r["predicted_seconds"],
                "measured_over_predicted": measured / r["predicted_seconds"],
                "serve_seconds": wall,
                "passes": [{"measured_seconds": x[0], "serve_seconds": x[1]} for x in got],
            }
        )
    off, on = out
    on["measured_over_off"] = on["measured_seconds"] / off["measured_seconds"]
    on["wall_over_off"] = on["serve_seconds"] / off["serve_seconds"]
    on["predicted_over_off"] = on["predicted_seconds"] / off["predicted_seconds"]
    for row in out:
        print(
            f"  [merge] {case:<12} merge_on {row['merge_on']:<5} forwards {row['forwards']:>5} "
            f"rows/fwd {row['rows_per_forward']:5.2f}: {row['measured_seconds']:.4f} s measured "
            f"({_clock(args)}), {row['predicted_seconds']:.4f} s predicted ({key}), serve "
            f"{row['serve_seconds']:.2f} s wall"
            + (
                f"; over off: measured {row['measured_over_off']:.3f}, wall "
                f"{row['wall_over_off']:.3f}, predicted {row['predicted_over_off']:.3f}"
                if row is on
                else ""
            ),
            flush=True,
        )
    return out


def _clock(args) -> str:
    return "GPU clock" if torch.device(args.device).type == "cuda" else "CPU clock"


SECTIONS = {
    "train": check_train,
    "graphs": check_graphs,
    "triton": check_triton,
    "bf16": check_bf16,
    "engine": check_engine,
    "serving": check_serving,
    "project": check_project,
    "compare": check_compare,
    "merge": check_merge,
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="CPU-sized: proves every step runs")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "gpu")
    ap.add_argument("--only", nargs="+", choices=list(SECTIONS), default=list(SECTIONS))
    ap.add_argument("--budget", type=float, default=450, help="seconds; later sections skip")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    if torch.device(args.device).type == "cpu":
        torch.set_num_threads(1)
    t0 = time.time()
    args.deadline = t0 + args.budget  # sections that run cases stop starting them past it
    results = {}
    with tempfile.TemporaryDirectory() as d:
        for name in args.only:
            if time.time() - t0 > args.budget:
                results[name] = {"ok": None, "skipped": f"over the {args.budget:.0f} s budget"}
                print(f"[gpu_check] {name}: skipped, over the {args.budget:.0f} s budget")
                continue
            print(f"[gpu_check] {name} ...", flush=True)
            ts = time.time()
            try:
                r = SECTIONS[name](args, Path(d))
            except (Exception, SystemExit) as e:  # a failed section (an argparse error of a
                # benchmark it runs included) is a result, not the end of the check
                r = {
                    "ok": False,
                    "error": f"{type(e).__name__}: {e}",
                    "trace": traceback.format_exc(limit=4),
                }
            r["seconds"] = round(time.time() - ts, 1)
            results[name] = r
            print(
                f"[gpu_check] {name}: ok={r['ok']} ({r['seconds']} s) "
                f"{json.dumps({k: v for k, v in r.items() if k not in ('results', 'trace')})}",
                flush=True,
            )
    record = {
        "bench": "gpu_check",
        "device": args.device,
        "device_name": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
        "tiny": args.tiny,
        "torch": torch.__version__,
        "machine": machine_info(),
        "seconds": round(time.time() - t0, 1),
        "sections": results,
    }
    (args.out / "gpu_check.json").write_text(json.dumps(record, indent=1))
    for name, r in results.items():
        print(
            f"  {name:8s} {'PASS' if r['ok'] else ('SKIP' if r['ok'] is None else 'FAIL')}"
            f"  {r.get('skipped') or r.get('error') or r.get('note') or ''}"
        )
    print(json.dumps(record))
    return 0 if all(r["ok"] is not False for r in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
