"""The re-planning policies of the loop (`LoopState.replan`): a policy that sets each row's
answer length itself, takes every step's logits over the whole window in place of the loop's
reveal, and re-lays each row's remaining blocks (`Plan.replan`).

Contract (what `DenoisingLoop` calls): `start(state, window_policy)` at `begin` (it sizes the
windows, lays the plan, and refuses a window policy: both would decide the length);
`step(state, logits, rows)` after each forward, logits (B, W, V) for the whole answer window.

Which one runs is read off the request's options here, so the loop names none of them."""

from __future__ import annotations

from seer.diffusion.daedal import Daedal
from seer.diffusion.rho_eos import RhoEos
from seer.sampling import SamplingParams


def make_replan(loop, p: SamplingParams) -> Daedal | RhoEos | None:
    """The re-planning policy `p` turns on (DAEDAL, ρ-EOS; at most one: `SamplingParams`
    refuses both), bound to `loop`; None: the loop's own plan and reveal."""
    if p.daedal:
        return Daedal(loop)
    if p.rho_eos:
        return RhoEos(loop)
    return None
