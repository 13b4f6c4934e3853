"""Benchmarks' bodies and their figures: `throughput` (the engine benchmark behind `seer bench` and
`benchmarks/bench_engine.py`), `marginals` (a perfect model of ParallelBench's list tasks against
its closed forms), `machine` (what machine a figure was measured on), `plots` and `profile` (the
step-0 sparsity figures of `seer profile`, `seer demo` and `seer calibrate`). Evaluation on
datasets lives in `seer.harness` and `seer.data`."""
