"""Seer against the alternatives at equal budgets, on a model's held-out requests.

Every method is a policy of the one denoising loop (`seer.diffusion.loop`), set through
`SamplingParams` / a window policy, never a copy of the sampler (`seerbench.compare`):

  baseline         the full window, `steps` = gen_length / k (k tokens per step); also at
                   k = 16, 32 as the fewer-steps references for the equal-NFE comparison
  seer             the model's Seer defaults (seer.json): cut at step 0, steps follow the window
  stop             the library's stop option (`SamplingParams.stop` = the end tokens): once an
                   end token is revealed, only masks before it are denoised (batch 1 only: the
                   engine takes no stop words)
  oracle           cut at the baseline answer's true end (same bucket rounding): the best any
                   window policy could do
  static+guard     one window for every request, read off the calibration split's answer lengths
                   (their 95th percentile + the end token, rounded up to the bucket), with Seer's
                   guard: the cheapest window policy a user could run without a detector
  seer-eos         Seer with the end-probability detector (`seer={'signal': 'eos_prob'}`; left
                   out where that is the model's own signal); also with threshold 0.9
  blocks/bN        baseline with semi-AR blocks of N (the reference of the block methods)
  early-stop/bN    dInfer's early stop (inclusionAI/dInfer `BlockWiseDiffusionLLM`): blocks of N,
                   a row ends once a filled block holds [EOS]
  prefix/bN, dual/bN  Fast-dLLM's prefix / dual KV cache (`generate_with_prefix_cache`,
                   `generate_with_dual_cache`), blocks of N
  dpad/bN          DPad's suffix dropout by name (`cache="dpad"`, a sliding window of 16 suffix
                   positions) with its early termination, blocks of N; batch 1 and the engine
  threshold        Fast-dLLM parallel decoding (`get_transfer_index` with `threshold` 0.9 / 0.7 /
                   0.5), one block; factor: the same with `factor` 1.0
  oracle+threshold the oracle's window under threshold 0.9
  dual+threshold/bN  Fast-dLLM's full recipe: dual cache, blocks of N, threshold 0.9
                   (dual+factor/bN: factor 1.0)

Block sizes: every block method at every size of `--blocks` (8, 16, 32, 64: Fast-dLLM's LLaDA
example uses 32) that fits the window and holds whole steps at the budget; the tables show each
method at its fastest size within the margin, the full table the whole sweep.
  daedal           DAEDAL (Li-Jinsong/DAEDAL, `seer.diffusion.daedal`): the window starts short,
                   grows by end-token confidence and inside at unsure masks, capped at
                   gen_length; `official` = the official script's settings, `i16` / `i8` =
                   scaled to this window (initial 16 / 8, blocks of 8, end confidence over 8
                   positions). Seer does not compose with it (both set the length)
  rho-eos          ρ-EOS (yjyddq/rho-EOS, `seer.diffusion.rho_eos`): the window starts at 64 and
                   grows or shrinks every step by the end-token density, capped at gen_length;
                   `official` / `i16` / `i8` as DAEDAL's. Seer does not compose with it either
  seer+X           Seer composed with X (cut at step 0, then X over the kept window)

Requests (`seerbench.draws.held_out`): a built-in source's evaluation part (unique, disjoint
from the calibration part and from the seer.json tuning draw, asserted); a ParallelBench task
(`--data parallelbench:ROOT/TASK`) whole, in a seeded random order (the model's Seer defaults
were calibrated on its built-in task, never on these rows). Accuracy: `seer.data.score` (the
source's own metric: ParallelBench's, the v2 families' checkers, exact match otherwise); every
request must be scorable. Greedy decoding, gen_length from the model's seer.json.

Batch 1: each request is encoded once (timed), then every config runs on it `--repeats` times,
interleaved (every config once per round), after one untimed warm-up of every config (every
cache, threshold, DAEDAL, DPad and Seer path). Reported per config: accuracy with a bootstrap
95 % interval, the paired difference to its reference (and a paired sign-flip test) and to the
full-window baseline of nearest NFE, answers changed against the reference config (`changed`)
and against the first baseline, answers shorter than the reference's, window cuts, mean NFE,
loop and end-to-end time per request (median over repeats), the loop speedup over the
reference with an interval over requests *and* repeats, and for Seer configs detection's share
of the loop (`detect_share`; the record's `detection`). Batch 32: every engine config over all
the requests (`--engine-n N`: a seeded random sample; `b32_sample` says which) through
`seer.engine.Engine` (max_batch 32), `--engine-repeats` interleaved rounds, the configs' order
rotated by round (`b32_round_orders` in the record); accuracy over those requests with its
interval, answers changed, the speed-up's range over rounds.

Clocks: loop and end-to-end time, wall and CPU, are recorded for every config at both batch
sizes (`seerbench.compare`); `--clock` picks the one every table, speed-up, headline and plot
shows, and names it (default: end to end, CPU time).

The verdict "at the baseline's accuracy" is non-inferiority at `--margin` points: the one-sided
95 % lower bound of the paired difference to the first baseline (bootstrap over requests) must be
>= -margin. Pre-registration: before the first request the run appends its plan to the raw file
(the margin, the primary comparison `--primary`: Seer + the strongest alternative against that
alternative alone, the selection rule; `seerbench.compare.preregister`); a resumed run keeps the
first plan, and a report at another margin is labelled post hoc
(`seerbench.compare_report.preregistration`). The headline names the fastest config that passes
under Holm's correction over the candidate set at every one of 20 bootstrap seeds (a config whose
verdict flips with the seed is "borderline", never the winner; `compare_report.verdicts`), and
how often it is the fastest when the requests are redrawn and the selection (Holm included) done
again (`seerbench.compare_report.select_fastest`); below 50 % it says no config is clearly
fastest. A cost model fitted on the run's own times (`seerbench.costmodel`) predicts every
speed-up, its error beside it; `--project` prints the same table projected to LLaDA-8B and
LaViDa on one H200 (`benchmarks/project_h200.py` does it from a written record).

`--gen-length` runs the whole comparison at another window (256, 512; the prompt plus the
window must fit the model's positions, checked in one line); its files carry the window
(`-g256`).

Raw per-request results go to `--raw` (JSON Lines); a run with the same settings resumes from
it, at any `--n`, at the next batch-32 round, and per config (a config added later runs at batch
1 beside the reference baseline (the 128-step one on the built-in models) re-run, interleaved on
each request, and its batch-1 times are scaled by that baseline's first-pass / later-pass ratio
over the whole pass, so its speed-up over the baseline is its time over the baseline's in the
same pass, never a ratio carried through another config; at batch 32 it is timed in a pass of
its own and kept as measured, with no speed-up over the first pass's configs; `--add NAMES`
takes configs of the full set into a `--quick` run, e.g. a block method's best block size into a
larger run). A batch-32 pass can run as two processes side by side, one per core: the same
command with other `--blocks` or `--skip` (each keeps the baseline), each on its own copy of the
raw file after batch 1, the second's new lines appended to the first's; each process's times
stay on its own clock (`seerbench.compare._mark_processes`): the report prints the second's
batch-32 times as measured (² in the report) and gives no batch-32 speed-up between the two. For
one clock, time every config together.
Outputs: a table, the Pareto plot (`--plot`), the README's tables (`--markdown`), and the
last-line JSON record (`seerbench.runs`); `--out DIR` writes all of them there (raw-,
compare-*.png / .md / .json).

The defaults run every method at every budget and block size, three timing repeats (the full
comparison: hours on a CPU). The published records were made in parts that share raw files, so
each part resumes and extends the others (docs/results.md names the command beside each table):

    # the headline: the shipped settings on 300 held-out requests, batch 1 and 32, with
    # Fast-dLLM's full recipe at its best block size (the sweep's), all in one pass
    python benchmarks/bench_compare.py --model builtin --quick --budgets 1,8 --repeats 1 \
        --engine-repeats 1 --n 300 --out docs/results/compare/shipped --add \
        dual+threshold/b64@t=0.9,seer+dual+threshold/b64@t=0.9,oracle+threshold@t=0.9
    # every method at every block size, one token per step (a block method's best size); its
    # batch-32 pass ran as two processes side by side (--blocks 8,16 / --blocks 32,64 --skip ...)
    python benchmarks/bench_compare.py --model builtin --budgets 1 --repeats 1 \
        --engine-repeats 1 --n 300 --out docs/results/compare/sweep
    # the window: the text model fine-tuned with longer windows (tools/train_builtin_long.sh) at
    # 128, 256 and 512 positions (--n 100 each; --engine-repeats 1 adds batch 32), then side by side
    # (benchmarks/window_gain.py); the same with --data parallelbench:ROOT/waiting_line (--n 50
    # at 512)
    python benchmarks/bench_compare.py --model checkpoints/builtin-v2-long/export --quick \
        --budgets 1 --skip stop --no-daedal --no-static --repeats 1 --no-engine \
        --add dual+threshold/b64@t=0.9,seer+dual+threshold/b64@t=0.9 --n 100 --gen-length 256 \
        --out docs/results/compare/windows
    # the multimodal model and ParallelBench's ten waiting_line tasks (>= 30 items each at 400)
    python benchmarks/bench_compare.py --model builtin-vqa --quick --budgets 1,8 --skip stop \
        --repeats 1 --engine-repeats 1 --out docs/results/compare/shipped
    python benchmarks/bench_compare.py --model builtin --data parallelbench:ROOT/waiting_line \
        --quick --budgets 1 --skip stop --repeats 1 --engine-repeats 1 --n 400 \
        --out docs/results/compare/shipped
    # a config of the full set added to a finished run (run beside the baseline re-run)
    python benchmarks/bench_compare.py ... --add dual+threshold/b32@t=0.9
    # a quick look
    python benchmarks/bench_compare.py --model builtin --n 4 --repeats 1 --budgets 4 --quick

A ParallelBench run's raw file keeps item ids, scores and token hashes only (never the items'
text: `--no-raw-text`, the default for `parallelbench:` data).
"""

from __future__ import annotations

import argparse
import logging
import time
from dataclasses import asdict
from pathlib import Path

import seer
from seer.data.builtin import source_for
from seer.engine.request import seer_config as resolve
from seer.errors import SeerError
from seerbench import costmodel, runs
from seerbench.compare import (  # noqa: F401  (the script's names, as tests and gpu_check use them)
    Config,
    Run,
    anchors_error,
    batch1,
    batch32,
    build_configs,
    correct,
    encode,
    preregister,
    request,
    run_one,
    static_window,
)
from seerbench.compare_report import (  # noqa: F401
    CLOCKS,
    DEFAULT_CLOCK,
    MARGIN,
    SELECTION,
    detection,
    headline,
    mark_frontier,
    markdown,
    plot,
    preregistration,
    primary_of,
    primary_result,
    show,
    summarise,
)
from seerbench.draws import held_out, is_parallelbench, sample
from seerbench.machine import provenance
from seerbench.stats import bootstrap, bootstrap_ratio, pareto  # noqa: F401

N = 100  # the published runs' requests per model
ENGINE_N = None  # ... and their batch-32 part: all of them


def load_model(name: str, device: str = "cpu"):
    """`seer.load(name)`; the built-in names fall back to the package's asset folders (where
    `seer.load` does not know them yet)."""
    folder = Path(seer.__file__).parent / "assets" / name
    if name in ("builtin", "builtin-vqa") and folder.is_dir():
        return seer.load(folder, device=device)
    return seer.load(name, device=device)


def _engine_n(text: str) -> int | None:
    """argparse type of --engine-n: a positive integer, or `all` (None)."""
    if text.strip().lower() == "all":
        return None
    try:
        return runs.positive(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"a positive integer or all, got {text!r}") from None


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="builtin", help="a built-in model's name or a folder")
    runs.add_arguments(ap, n=N, repeats=3, help={"seed": "draw of the held-out requests"})
    ap.add_argument(
        "--engine-repeats",
        type=runs.positive,
        default=None,
        help="batch-32 rounds (default: --repeats)",
    )
    ap.add_argument("--budgets", default="1,2,4,8", help="tokens per step")
    ap.add_argument("--no-engine", action="store_true", help="skip the batch-32 engine runs")
    ap.add_argument(
        "--engine-n",
        type=_engine_n,
        default=ENGINE_N,
        help="batch 32 over a seeded random sample of N, or all (default: all)",
    )
    ap.add_argument(
        "--blocks",
        default="8,16,32,64",
        help="block sizes of the block methods (those that fit the window and the budget run)",
    )
    ap.add_argument(
        "--margin",
        type=float,
        default=MARGIN,
        help="non-inferiority margin, points (stated before the run)",
    )
    ap.add_argument(
        "--primary",
        default="",
        help="the primary comparison, TREATMENT,CONTROL (written into the raw file before the "
        "first request; default: seer+threshold@t=0.9,threshold@t=0.9 where the run has both, "
        "else Seer against the baseline at the first budget)",
    )
    ap.add_argument(
        "--clock",
        choices=list(CLOCKS),
        default=DEFAULT_CLOCK,
        help="the clock the tables, speed-ups and headline show",
    )
    ap.add_argument(
        "--gen-length",
        type=runs.positive,
        default=None,
        help="the answer window (default: the model's, seer.json)",
    )
    ap.add_argument(
        "--static",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="static+guard (its window from the calibration split; default: on)",
    )
    ap.add_argument(
        "--raw-text",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="keep answers' text in the raw file (default: on, off for ParallelBench)",
    )
    ap.add_argument(
        "--project",
        action="store_true",
        help="also print the table projected to LLaDA-8B and LaViDa on one H200",
    )
    ap.add_argument(
        "--anchors",
        default="",
        help="the config re-run at batch 1 beside configs added to a finished run, to scale "
        "their batch-1 times: only the reference baseline (baseline@k=B at the first budget, "
        "the default) is accepted",
    )
    ap.add_argument("--progress", type=Path, default=None, help="also append progress lines here")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="baseline, seer, stop, oracle, static+guard, threshold 0.9",
    )
    ap.add_argument(
        "--dpad",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="DPad and seer+DPad (default: on)",
    )
    ap.add_argument(
        "--daedal",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="DAEDAL (default: on, off with --quick)",
    )
    ap.add_argument(
        "--rho-eos",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="rho-EOS (default: on, off with --quick)",
    )
    ap.add_argument("--skip", default="", help="methods to leave out (comma-separated)")
    ap.add_argument(
        "--add",
        default="",
        help="configs of the full set added to the chosen ones (comma-separated names, e.g. "
        "dual+threshold/b32@t=0.9; to a finished run: run beside its anchors)",
    )
    ap.add_argument("--raw", type=Path, default=None, help="per-request JSON Lines (resumable)")
    ap.add_argument("--plot", type=Path, default=None, help="Pareto PNG")
    ap.add_argument("--markdown", type=Path, default=None, help="the README's tables (Markdown)")
    ap.add_argument("--device", default="cpu")
    return ap


def main(argv=None) -> dict:
    ap = parser()
    args = ap.parse_args(argv)
    session = runs.Session("compare", args)
    # one warning per call that kept its full window would bury the progress lines; the record
    # counts those answers per Seer config (full_window)
    logging.getLogger("seer.boundary.truncation").setLevel(logging.ERROR)
    anchors = tuple(a for a in args.anchors.split(",") if a)
    budgets = _ints(ap, "--budgets", args.budgets)
    blocks = _ints(ap, "--blocks", args.blocks)
    if args.margin < 0:
        ap.error(f"--margin: points, >= 0, got {args.margin}")
    lm = load_model(args.model, args.device)
    source = args.data or source_for(args.model, getattr(lm, "multimodal", False))
    g = args.gen_length or lm.meta.get("seer", {}).get("gen_length") or lm.sampling().gen_length
    if any(k < 1 or g % k for k in budgets):
        ap.error(f"--budgets: each must divide gen_length {g}, got {args.budgets}")
    try:
        examples = held_out(source, args.n, args.seed)
    except SeerError as e:
        ap.error(str(e))
    _check_fits(ap, lm, examples, g)
    seer_cfg = resolve(lm, True)
    daedal = not args.quick if args.daedal is None else args.daedal
    rho_eos = not args.quick if args.rho_eos is None else args.rho_eos
    static = None
    if args.static:
        static = static_window(lm, source, g, seer_cfg.bucket, progress=print)
        at = static["length_at_quantile"]
        held = f": {static['quantile']:.0%} of {static['n']} answers <= {at:.0f}" if at else ""
        print(
            f"[bench_compare] static+guard window {static['window']} ({static['from']}{held})",
            flush=True,
        )
    keep_text = not is_parallelbench(source) if args.raw_text is None else args.raw_text
    configs = build_configs(
        lm,
        g,
        budgets,
        args.quick,
        args.dpad,
        daedal,
        blocks,
        static["window"] if static else None,
        seer_cfg.signal,
        rho_eos,
    )
    skip = {m for m in args.skip.split(",") if m}
    if skip - {c.method for c in configs}:
        ap.error(f"--skip: no method named {', '.join(sorted(skip - {c.method for c in configs}))}")
    configs = [c for c in configs if c.method not in skip]
    configs += _added(
        ap,
        args.add,
        configs,
        lambda: build_configs(
            lm,
            g,
            budgets,
            False,
            args.dpad,
            True,
            blocks,
            static["window"] if static else None,
            seer_cfg.signal,
        ),
    )
    unknown = set(anchors) - {c.name for c in configs}
    if unknown:
        ap.error(f"--anchors: no config named {', '.join(sorted(unknown))}")
    if error := anchors_error(anchors, configs):
        ap.error(error)
    settings = {
        "model": args.model,
        "source": source,
        "n": args.n,
        "seed": args.seed,
        "repeats": args.repeats,
        "budgets": budgets,
        "quick": args.quick,
        "configs": [c.name for c in configs],
        "threads": args.threads,
        "gen_length": g,
        "blocks": blocks,
        "static_window": static["window"] if static else None,
        # a raw file resumes only with the same weights and Seer settings: a new release
        # of a built-in model keeps its name
        "weights_sha256": weights_of(lm),
        "seer": asdict(seer_cfg),
    }
    tag = runs.tag(args.model, args.data)  # a run on other data keeps its own files
    model_g = lm.meta.get("seer", {}).get("gen_length") or lm.sampling().gen_length
    if g != model_g:  # a run at another window keeps its own files
        tag += f"-g{g}"
    out = args.out
    raw = args.raw or (out / f"raw-{tag}.jsonl" if out else Path(f"/tmp/bench_compare_{tag}.jsonl"))
    raw.parent.mkdir(parents=True, exist_ok=True)
    pair = _primary(ap, args.primary, [c.name for c in configs])
    plan = preregister(
        raw,
        settings,
        {
            "margin": args.margin,
            "reference": f"baseline@k={budgets[0]}",
            "primary": list(pair) if pair else None,
            "selection": SELECTION,
            "clock": args.clock,
        },
    )
    how, post_hoc = preregistration({"preregistered": plan, "margin": args.margin})
    print(f"[bench_compare] {how}", flush=True)
    q = encode(lm, examples[0])  # every window shape, then every config once (untimed)
    runs.warm_windows(lm, q, g, seer_cfg.bucket)

    def progress(i, n=None):
        what = f"request {i}/{n}" if n else i
        line = f"[bench_compare] {args.model}: {what} ({time.perf_counter() - session.t0:.0f} s)"
        print(line, flush=True)
        if args.progress:
            with args.progress.open("a") as f:
                f.write(f"{time.strftime('%H:%M:%S')} {line}\n")

    done = _done_ids(raw, settings)  # the raw file is read once, not once per request
    if not all(x in done for x in range(len(examples))):
        from seerbench.compare import warm_batch1

        warm_batch1(lm, q, configs, g, seer_cfg)
    try:
        rows = batch1(
            lm, examples, configs, g, seer_cfg, args.repeats, raw, settings, progress, keep_text
        )
    except SeerError as e:  # a raw file's later pass timed without the baseline re-run
        ap.error(str(e))
    eng, label = {}, None
    if not args.no_engine:
        er = args.engine_repeats or args.repeats
        idx, label = sample(len(rows), args.engine_n, args.seed)
        eng = batch32(
            lm,
            examples,
            idx,
            label,
            configs,
            g,
            seer_cfg,
            er,
            rows,
            raw,
            dict(
                settings,
                engine_repeats=er,
                engine_n=len(idx),
                engine_sample=label,
                engine_clock="wall+cpu",
            ),
            progress,
        )
    results = summarise(rows, eng, configs, g, examples, args.clock, args.margin)
    mark_frontier(results)
    cost = costmodel.annotate(results, rows, eng, configs, g, args.clock)
    first = f"baseline@k={budgets[0]}"
    planned = tuple(plan["primary"]) if plan.get("primary") else None
    record = session.record(
        results,
        model=str(args.model),  # the name or folder given (a v2 folder is named export)
        source=source,
        n=len(rows),
        gen_length=g,
        seer_config=asdict(seer_cfg),
        b32_sample=label,
        b32_repeats=(args.engine_repeats or args.repeats) if eng else None,
        detection=detection(results),
        headline=headline(results, first, args.margin),
        clock=args.clock,
        margin=args.margin,
        preregistered=plan,
        post_hoc=post_hoc,
        primary=primary_result(results, planned, first),
        static=static,
        cost_model=cost,
        provenance=provenance(),
    )
    show(record)
    if args.project:
        print("\n".join(costmodel.projection_lines(record)))
    plot_path = args.plot or (out / f"compare-{tag}.png" if out else None)
    md_path = args.markdown or (out / f"compare-{tag}.md" if out else None)
    if plot_path:
        plot(record, plot_path)
        print(f"[bench_compare] wrote {plot_path}")
    if md_path:
        md_path.parent.mkdir(parents=True, exist_ok=True)
        md_path.write_text(markdown(record))
        print(f"[bench_compare] wrote {md_path}")
    return session.emit(record, tag=tag)


def _primary(ap, text: str, names: list[str]) -> tuple[str, str] | None:
    """--primary TREATMENT,CONTROL (both among the run's configs), or the default
    (`compare_report.primary_of`)."""
    if not text:
        return primary_of(names)
    pair = tuple(x.strip() for x in text.split(","))
    if len(pair) != 2 or not all(pair):
        ap.error(f"--primary: TREATMENT,CONTROL (two config names), got {text!r}")
    unknown = [x for x in pair if x not in names]
    if unknown:
        ap.error(f"--primary: no config named {', '.join(unknown)} in this run")
    return pair  # type: ignore[return-value]


def _ints(ap, flag: str, text: str) -> list[int]:
    """A comma-separated list of positive integers (one line on anything else)."""
    try:
        out = [int(k) for k in text.split(",")]
    except ValueError:
        ap.error(f"{flag}: comma-separated integers, got {text!r}")
    if not out or min(out) < 1:
        ap.error(f"{flag}: positive integers, got {text!r}")
    return out


def _added(ap, names: str, configs: list, full) -> list:
    """The configs `--add` names, out of the full set (`full()`; one line for a name that is not
    in it)."""
    want = [n for n in names.split(",") if n]
    if not want:
        return []
    every = {c.name: c for c in full()}
    unknown = [n for n in want if n not in every]
    if unknown:
        ap.error(
            f"--add: no config named {', '.join(unknown)} at these --budgets and --blocks "
            f"(e.g. {', '.join(list(every)[-3:])})"
        )
    have = {c.name for c in configs}
    return [every[n] for n in dict.fromkeys(want) if n not in have]


def _check_fits(ap, lm, examples, g: int) -> None:
    """The longest prompt plus the window must fit the model's positions (one line if not)."""
    limit = getattr(lm, "max_length", None)
    if not limit:
        return
    longest = max(_positions(encode(lm, ex)) for ex in examples)
    if longest + g > limit:
        name = lm.name or "the model"
        ap.error(
            f"--gen-length {g}: the prompt ({longest} positions) and the window do not fit "
            f"{name}'s {limit} positions; use at most {limit - longest}"
        )


def _positions(q) -> int:
    """A prompt's positions: its embeddings' rows (image positions included), else its ids."""
    embeds = getattr(q, "embeds", None)
    if embeds is not None:
        return int(embeds.shape[0])
    return len(getattr(q, "ids", q))


def weights_of(lm) -> str | None:
    """The SHA-256 of the loaded model's weights files (None for a model without a folder)."""
    from seer.provenance import weights

    folder = getattr(lm, "path", None)
    return None if folder is None else weights(Path(folder))[0]


def _done_ids(raw: Path, settings: dict) -> set[int]:
    """Requests whose every config is already recorded (then the warm-up can be skipped)."""
    from seerbench.compare import recorded

    done = recorded(raw, settings, 10**9, "request")
    return {i for i, r in done.items() if set(settings["configs"]) <= set(r["results"])}


if __name__ == "__main__":
    main()
