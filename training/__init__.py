"""How the built-in models were built, beside the package (it imports `seer`; nothing in `seer`
imports it): a build step, run from the repository root as `python -m training.<model>`
(`builtin`, `builtin_v2`, `builtin_vqa`, `builtin_vqa2`; `tools/release_builtin*.sh` hold each
model's phases). `trainer` is the loop and recipe they share, `multimodal` what the two image
models share, `tokenizer` (with the pinned vocabularies `vocab2` and `vocab_vqa2`) the
tokenizers built for them. The tasks it trains on are a data source of the package
(`synthetic`)."""
