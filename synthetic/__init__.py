"""The built-in models' synthetic tasks, generated on the fly (one data source among the others of
`seer.data`, as ``builtin-v1``, ``builtin``, ``builtin-vqa-v1`` and ``builtin-vqa``): `tasks` (the
first text model's), `lines` (+ `lines_templates`, `names` and their name lists in `data/`: the
text model v2's), `vqa` / `scenes` and `vqa2` / `scenes2` (the first and the second VQA model's
image questions and their pictures). The tokenizers built on them (and their pinned
vocabularies) are part of how the models were trained: `training.tokenizer`, `training.vocab2`,
`training.vocab_vqa2`, beside the package.
"""
