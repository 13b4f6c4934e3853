"""The benchmark library beside the package (it imports `seer`, never the reverse). Every
script of `benchmarks/` runs on it: `runs` (a run's shared arguments, timer, warm-up, the one
record schema and results folder), `stats` (bootstrap intervals over requests and repeats, the
paired test, Pareto fronts), `draws` (held-out draws and seeded samples, never a first-N subset).
`compare` and `compare_report` (Seer against the alternatives, `benchmarks/bench_compare.py`),
`costmodel` (a cost model fitted on a run's own times, and the H200 roofline), `marginals` (a
perfect model of ParallelBench's list tasks against its closed forms), `machine` (what machine a
figure was measured on). What the package's own commands draw and time stays in the package:
`seer.throughput` (`seer bench`, `benchmarks/bench_engine.py`), `seer.plots` and
`seer.calibrate.profile` (the step-0 sparsity figures of `seer profile`, `seer demo` and
`seer calibrate`)."""
