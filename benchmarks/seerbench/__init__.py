"""Benchmarks' bodies and their figures. The harness every script of `benchmarks/` runs on:
`harness` (shared arguments, timer, warm-up, the one record schema and results folder), `stats`
(bootstrap intervals over requests and repeats, the paired test, Pareto fronts), `draws`
(held-out draws and seeded samples, never a first-N subset). `compare` and `compare_report`
(Seer against the alternatives, `benchmarks/bench_compare.py`), `throughput` (the engine
benchmark behind `seer bench` and `benchmarks/bench_engine.py`), `marginals` (a perfect model
of ParallelBench's list tasks against its closed forms), `machine` (what machine a figure was
measured on), `plots` and `profile` (the step-0 sparsity figures of `seer profile`, `seer demo`
and `seer calibrate`). Evaluation on datasets lives in `seer.harness` and `seer.data`."""
