"""Start-up time of the `seer` command: `--help`, an option error, and one `generate` on the
shipped text model, for this checkout and (optionally) another one, interleaved.

    git archive cbc775e src | tar -x -C /tmp/seer-before
    python benchmarks/bench_startup.py --before /tmp/seer-before/src --rounds 5

Each run is a fresh `python -m seer.cli ...` with the tree on PYTHONPATH; the two trees run in
turn, so machine noise hits both alike. Prints a table (min / median seconds, ratio) and one JSON
record as the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"
CASES = {
    "help": ["--help"],
    "option error": ["generate", "--model", "x", "--prompt", "hi", "--steps", "0"],
    "generate builtin": ["generate", "--model", "{builtin}", "--prompt", "add 4 and 5"],
}


def run(tree: Path, argv: list[str]) -> float:
    builtin = tree / "seer" / "assets" / "builtin"
    argv = [a.format(builtin=builtin) for a in argv]
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "seer.cli", *argv], env=env, capture_output=True)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, default=None, help="src/ of another checkout")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-generate", action="store_true", help="skip the generate case")
    args = ap.parse_args(argv)
    trees = {"after": HERE} | ({"before": args.before} if args.before else {})
    cases = {k: v for k, v in CASES.items() if not (args.no_generate and "generate" in k)}
    times: dict = {(c, t): [] for c in cases for t in trees}
    for _ in range(args.rounds):
        for case, cmd in cases.items():
            for name, tree in trees.items():
                times[case, name].append(run(tree, cmd))
    print(f"{'case':18s} {'tree':7s} {'min s':>7s} {'median s':>9s} {'before/after':>13s}")
    record = {
        "bench": "startup",
        "rounds": args.rounds,
        "machine": platform.platform(),
        "python": platform.python_version(),
        "load": os.getloadavg()[0],
        "cases": {},
    }
    for case in cases:
        for name in trees:
            t = times[case, name]
            ratio = ""
            if name == "before":
                ratio = f"{statistics.median(t) / statistics.median(times[case, 'after']):.1f}x"
            print(f"{case:18s} {name:7s} {min(t):7.2f} {statistics.median(t):9.2f} {ratio:>13s}")
        record["cases"][case] = {n: [round(x, 3) for x in times[case, n]] for n in trees}
    print(json.dumps(record))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
