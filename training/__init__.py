"""How the built-in models were built: a build step, run as `python -m training.<model>`
(`builtin`, `builtin_v2`, `builtin_vqa`, `builtin_vqa2`; `tools/release_builtin*.sh` hold each
model's phases). `trainer` is the loop and recipe they share, `multimodal` what the two image
models share. Nothing in the library imports this package; the tasks it trains on are a data
source (`seer.data.synthetic`)."""
