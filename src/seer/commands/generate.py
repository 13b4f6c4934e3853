"""`seer generate`: answer one prompt (optionally with an image, optionally with Seer)."""

from __future__ import annotations

import json
import sys

from seer.commands import options


def add_parser(sub) -> None:
    p = sub.add_parser("generate", help="answer one prompt")
    options.add_model(p, default=None)
    p.add_argument("--prompt", required=True, type=options.prompt)
    p.add_argument("--image", default=None, help=options.IMAGE_HELP)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--stream",
        action="store_true",
        help="print the answer block by block as each becomes final",
    )
    p.add_argument("--no-chat", action="store_true", help="do not apply the chat template")
    p.add_argument(
        "--stop",
        action="append",
        default=None,
        type=options.nonempty,
        help="stop string (repeatable; LLaDA-V style)",
    )
    options.add_sampling(p)
    options.add_seer(p)
    p.set_defaults(func=main)


def main(args) -> int:
    from seer.errors import SeerError

    if args.stream and args.json:
        raise SeerError("--stream prints text as it comes, --json one object at the end: pick one")
    lm = options.load(args)
    seer_arg = options.seer(args)
    p = options.params(lm, args)
    if args.stop:  # stop strings -> ids, encoded as the official samplers do (no specials)
        if lm.tokenizer is None:
            raise SeerError("--stop needs the model's tokenizer")
        from dataclasses import replace

        from seer.models.tokens import stop_ids

        p = replace(p, stop=stop_ids(lm.tokenizer, args.stop))
    if args.no_chat and lm.defaults.seer.chat_only:
        options.log.warning(
            f"seer: warning: {lm.name} answers only inside its chat template "
            "(seer.json: chat_only); --no-chat gets an empty answer"
        )
    answer = lm.stream if args.stream else lm.generate
    g = answer(args.prompt, p, seer=seer_arg, image=args.image, chat=not args.no_chat)
    if args.stream:
        g = _printed(g)
    s = g.stats
    from seer.boundary.detector import summary

    if (missed := summary([g.boundary])) is not None:
        options.log.warning(f"seer: {missed}")
    if (shape := changed_shape(s)) is not None:
        options.log.warning(shape)
    if args.json:
        record = {
            "answer": g.text,
            "token_ids": g.token_ids,
            "nfe": s.nfe,
            "seconds": round(s.seconds, 4),
            "tokens": s.tokens,
            "tokens_per_second": round(s.tokens_per_second, 2),
            "window": s.window,
            "gen_length": s.gen_length,
            "guard_grew": s.grown,
            "hit_window": s.hit_window,
        }
        if g.boundary is not None:
            record["boundary"] = g.boundary.as_dict()
        print(json.dumps(record))
    else:
        if not args.stream:
            print(g.text)
        extra = f", window {s.window}/{s.gen_length}" if seer_arg else ""
        print(
            f"[{s.nfe} NFE, {s.seconds:.2f} s, {s.tokens} tokens, "
            f"{s.tokens_per_second:.1f} tok/s{extra}]",
            file=sys.stderr,
        )
    return 0


def changed_shape(s) -> str | None:
    """One line when the answer reached the end of its window or the guard grew Seer's window
    (`--json` carries both as `hit_window` and `guard_grew`); None otherwise."""
    grew = f"the guard grew Seer's window {s.grown} time(s), to {s.window} positions"
    grew = grew if s.grown else ""
    if s.hit_window:
        whose = "Seer's window" if s.window < s.gen_length else "the window"
        end = (
            f"the answer reached the end of {whose} ({s.window} positions) without an end "
            "token; it may go on past it: raise --gen-length"
        )
        return "seer: note: " + (f"{grew}; {end}" if grew else end)
    return f"seer: note: {grew}" if grew else None


def _printed(chunks):
    """Print each chunk's text as it comes; returns the last chunk's result."""
    for chunk in chunks:
        print(chunk.text, end="", flush=True)
    print()
    return chunk.result
