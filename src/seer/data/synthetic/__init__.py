"""The built-in models' synthetic tasks, generated on the fly (one data source among the others of
`seer.data`, as ``builtin``, ``builtin-vqa``, ``builtin-v2`` and ``builtin-vqa2``): `tasks` (the
text model's), `lines` (+ `lines_templates`, `names` and their name lists in `data/`: the text
model v2's), `vqa` / `scenes` and `vqa2` / `scenes2` (image questions and their pictures), and
the tokenizers trained on them (`tokenizer`; the pinned vocabularies `vocab2` and `vocab_vqa2`).
"""
