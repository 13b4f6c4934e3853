"""SamplingParams refuses values that would run and answer garbage or nothing: a temperature
whose Gumbel noise overflows, more steps than answer tokens. (The CLI, the server and the
harness all reach these checks.)"""

from __future__ import annotations

import math

import pytest

from seer.errors import SeerError
from seer.sampling import MAX_TEMPERATURE, SamplingParams


@pytest.mark.parametrize("t", [1e308, 11.0, MAX_TEMPERATURE + 1e-9, math.inf, math.nan])
def test_a_temperature_out_of_range_is_refused(t):
    with pytest.raises(SeerError, match="temperature") as e:
        SamplingParams(temperature=t)
    assert "\n" not in str(e.value)


def test_the_highest_temperature_is_accepted():
    assert SamplingParams(temperature=MAX_TEMPERATURE).temperature == MAX_TEMPERATURE


def test_more_steps_than_answer_tokens_is_refused():
    with pytest.raises(SeerError, match="steps 1000 exceeds gen_length 8"):
        SamplingParams(gen_length=8, steps=1000)
    assert SamplingParams(gen_length=8, steps=8).total_steps == 8
    # DAEDAL sets its own step count: steps does not apply there
    assert SamplingParams(gen_length=64, steps=128, daedal=True, daedal_initial=32).daedal
