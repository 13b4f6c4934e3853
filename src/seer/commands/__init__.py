"""The `seer` subcommands: one module each, with `add_parser(sub)` and `main(args) -> int`.

A module imports only the standard library and `seer.commands.options` at the top; torch,
transformers and the library come inside `main`, so `seer --help` and option errors stay fast.
`seer.cli` registers the modules listed in `COMMANDS`, in this order.
"""

COMMANDS = (
    "generate",
    "demo",
    "profile",
    "calibrate",
    "bench",
    "batch",
    "serve",
    "ui",
    "make_checkpoint",
    "simulate",
)
