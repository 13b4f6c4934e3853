"""The decoding policies a run's options turn on (`seer.diffusion.policy`): every policy
module's `build`, in the order the loop calls them. A new policy is one module with a `build`,
named here."""

from __future__ import annotations

from seer.diffusion import daedal, rho_eos, schedule, stop
from seer.diffusion.policy import DecodePolicy
from seer.sampling import SamplingParams

# DAEDAL; ρ-EOS; block closing and early stop; stop sequences
MODULES = (daedal, rho_eos, schedule, stop)


def for_rows(loop, rows: list[SamplingParams], device) -> list[DecodePolicy]:
    """The policies the rows' options turn on, in calling order."""
    out = [m.build(loop, rows, device) for m in MODULES]
    return [p for p in out if p is not None]
