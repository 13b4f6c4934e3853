"""HTML of what the page shows: one side's canvas after a step, its numbers, the comparison.

Pure functions of the engine's `StepView`s and results (no Gradio), so they are tested alone.
A canvas is one chip per answer position, in reading order:

    masked     [MASK], not revealed yet                       grey dot
    new        revealed by this step                          yellow
    token      revealed by an earlier step                    white
    end        an end token ([EOS] / end of turn: padding)   shaded grey
    cut        past the window Seer kept at step 0: [EOS] by definition, never computed
               again (hatched), after a red line: Seer's cut

Each chip carries `data-pos`, the canvas `data-step` / `data-window` / `data-final`, so a test
(or a curious user) can read the state back from the page.
"""

from __future__ import annotations

import html

CSS = """
.seer-canvas {display: flex; flex-wrap: wrap; gap: 3px; align-items: stretch;
  font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 13px; line-height: 1.25}
.seer-canvas .chip {padding: 2px 5px; border-radius: 4px; border: 1px solid #c9ccd3;
  min-width: 14px; text-align: center; background: #ffffff; color: #111}
.seer-canvas .masked {background: #eef0f4; color: #9aa0ab}
.seer-canvas .new {background: #ffe36e; border-color: #d9b400}
.seer-canvas .end {background: #d7dae0; color: #5a606b}
.seer-canvas .cut {color: #9aa0ab; border-style: dashed; background: repeating-linear-gradient(
  45deg, #f3f4f6, #f3f4f6 4px, #e3e5ea 4px, #e3e5ea 8px)}
.seer-canvas .seer-cut {width: 4px; border-radius: 2px; background: #e0301e; margin: 0 3px}
.seer-head {font-size: 13px; margin: 2px 0 6px 0; color: #333}
.seer-head b {color: #111}
.seer-legend {font-size: 12px; color: #444}
.seer-legend .chip {display: inline-block; padding: 0 5px; margin: 0 2px 0 8px;
  border-radius: 3px; border: 1px solid #c9ccd3}
#seer-message {font-size: 14px}
#seer-message .error {color: #b00020; font-weight: 600}
"""

LEGEND = (
    '<div class="seer-legend seer-canvas" style="display:block">'
    '<span class="chip masked">·</span>masked'
    '<span class="chip new">new</span>revealed this step'
    '<span class="chip">tok</span>revealed earlier'
    '<span class="chip end">EOS</span>end token / [EOS] padding'
    '<span class="chip seer-cut" style="padding:0">&nbsp;</span>Seer\'s cut at step 0'
    '<span class="chip cut">&nbsp;</span>never computed after step 0</div>'
)


def canvas(view, before: list[int] | None, labels: dict[int, str], tokens, title: str) -> str:
    """One side's canvas after `view`'s step. `before`: the canvas after the previous step
    (None at step 0: every revealed token is new); `labels`: token id -> its text."""
    ids, w = view.token_ids, view.window
    cut = w < view.gen_length  # a window policy kept fewer positions than asked for
    chips = []
    for i, t in enumerate(ids):
        if cut and i == w:
            chips.append('<span class="seer-cut" title="Seer\'s cut at step 0"></span>')
        if i >= w:
            kind, text = "cut", "·"
        elif t == tokens.mask:
            kind, text = "masked", "·"
        else:
            kind = "end" if t in tokens.enders else "token"
            if before is None or before[i] != t:
                kind += " new"
            text = labels.get(t, str(t))
        chips.append(f'<span class="chip {kind}" data-pos="{i}">{html.escape(text)}</span>')
    masks = sum(t == tokens.mask for t in ids[:w])
    b = view.boundary
    if b is None:
        found = ""
    elif b.length:
        found = f" · Seer: L* = {b.length}, kept {w} of {view.gen_length} positions"
    elif b.fallback:
        found = f" · Seer: no boundary, kept the fallback window of {b.window}"
    else:
        found = " · Seer: no boundary (full window)"
    head = (
        f'<div class="seer-head"><b>{html.escape(title)}</b> · step <b>{view.step}</b>'
        f" · {masks} masked of {w}{found}{' · done' if view.final else ''}</div>"
    )
    return (
        f'<div class="seer-side" data-step="{view.step}" data-window="{w}" '
        f'data-final="{int(view.final)}">{head}<div class="seer-canvas">{"".join(chips)}</div>'
        "</div>"
    )


def stats(result) -> str:
    """The numbers of one finished side (Markdown)."""
    s = result.stats
    return (
        f"**{s.seconds * 1000:.0f} ms** denoising · **{s.nfe}** NFE · {s.tokens} "
        f"token{'s' if s.tokens != 1 else ''} · "
        f"**{s.tokens_per_second:.1f}** tokens/s · window {s.window}/{s.gen_length}"
        + (f" (guard grew it {s.grown}x)" if s.grown else "")
        + f"\n\n**Answer:** {result.text or '(empty)'}"
    )


def compare(base, seer) -> str:
    """Baseline against Seer on the same prompt (Markdown)."""
    same = base.token_ids == seer.token_ids
    verdict = "the same answer" if same else "**different answers**"
    b, f = base.stats, seer.stats
    speed = b.seconds / f.seconds if f.seconds > 0 else float("inf")
    if speed >= 1:
        took = f"in **{speed:.1f}x** less denoising time"
    else:  # slower (a window that was not cut, a busy machine): said the right way round
        took = f"but took **{1 / speed:.1f}x** more denoising time"
    return (
        f"Seer gave {verdict} {took} "
        f"({b.seconds * 1000:.0f} ms → {f.seconds * 1000:.0f} ms) and {b.nfe} → {f.nfe} NFE; "
        f"it computed {f.window} of {b.gen_length} positions after step 0."
    )


def message(text: str) -> str:
    """One clear line for a mistake (shown in the page's message area)."""
    return f'<div class="error">⚠ {html.escape(text)}</div>'
