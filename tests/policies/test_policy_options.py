"""Each decoding policy declares its own options (`seer.policies`): `SamplingParams` holds the
core options and the policies that are on, the flat keywords of the front ends still build it,
and compatibility is checked once, from the traits."""

from __future__ import annotations

import pickle
from dataclasses import fields, replace

import pytest

from seer.errors import SeerError
from seer.policies import REGISTRY, Daedal, DPad, Parallel, RhoEos, Stop, Traits
from seer.sampling import SamplingOptions, SamplingParams
from seer.spec import defaults, specs


def test_the_flat_keywords_and_the_policies_build_the_same_params():
    flat = SamplingParams(gen_length=64, daedal=True, daedal_initial=32)
    new = SamplingParams(gen_length=64, policies=(Daedal(daedal_initial=32),))
    assert flat == new and hash(flat) == hash(new)
    assert flat.policies == (Daedal(daedal_initial=32),)
    assert flat.daedal and flat.daedal_initial == 32 and flat.daedal_block == 32
    assert pickle.loads(pickle.dumps(flat)) == flat  # the engine's workers and Ray copy it
    two = SamplingParams(threshold=0.9, stop=[[5, 6]])  # kept in the registry's order
    assert two.policies == (Parallel(threshold=0.9), Stop(stop=((5, 6),)))
    assert two == SamplingParams(policies=(Stop(stop=((5, 6),)), Parallel(threshold=0.9)))


def test_a_policy_that_is_off_reads_its_declared_defaults():
    p = SamplingParams()
    assert p.policies == ()
    assert not p.daedal and not p.rho_eos and not p.early_stop and p.stop == ()
    assert p.threshold is None and p.dpad_window == 16 and p.rho_scheduler == "exp"
    # options of a policy left off are checked, then dropped (the front ends refuse them:
    # `seer.spec.implied`)
    assert SamplingParams(daedal_initial=32).policies == ()
    with pytest.raises(SeerError, match="daedal_low must be <= 1"):
        SamplingParams(daedal_low=1.5)
    with pytest.raises(SeerError, match="bad generation option: daedal must be True or False"):
        SamplingParams(daedal="yes")
    with pytest.raises(AttributeError):
        p.no_such_option  # noqa: B018


def test_replace_takes_the_flat_names():
    p = SamplingParams(gen_length=64, rho_eos=True)
    assert replace(p, rho_low=0.3).rho_low == 0.3
    assert replace(p, rho_eos=False).policies == ()
    assert replace(p, seed=3).policies == p.policies
    q = SamplingParams(threshold=0.9)
    assert replace(q, threshold=None).policies == ()
    assert replace(q, factor=1.0, threshold=None).policies == (Parallel(factor=1.0),)


def test_dpad_is_on_with_its_cache():
    assert SamplingParams(cache="dpad").policies == (DPad(),)
    assert SamplingParams(cache="dpad", dpad_window=4).dpad_window == 4
    assert SamplingParams(policies=(DPad(dpad_window=4),)).cache == "dpad"
    assert replace(SamplingParams(cache="dpad"), cache="prefix").policies == ()
    # the cache decides (as `dpad_window` beside another cache does nothing)
    assert SamplingParams(cache="prefix", policies=(DPad(),)).policies == ()


def test_policies_takes_declared_options_once():
    with pytest.raises(SeerError, match="policies takes the options of decoding policies"):
        SamplingParams(policies=("daedal",))
    with pytest.raises(SeerError, match="each policy once"):
        SamplingParams(policies=(Parallel(threshold=0.5), Parallel(factor=1.0)))


def test_sets_length_comes_from_the_traits():
    for d in REGISTRY:
        opts = d.options()
        if d.name == "dpad":
            p = SamplingParams(cache="dpad")
        elif d.name == "parallel":
            p = SamplingParams(threshold=0.5)
        elif d.name == "stop":
            p = SamplingParams(stop=((1,),))
        else:
            p = SamplingParams(gen_length=64, policies=(opts,))
        assert p.sets_length == d.traits.sets_length, d.name
    assert SamplingParams(gen_length=64, policies=(RhoEos(),)).length_setters == ["rho_eos"]


def test_the_traits_decide_what_composes():
    with pytest.raises(SeerError, match="daedal and rho_eos both set the answer length"):
        SamplingParams(gen_length=64, policies=(Daedal(), RhoEos()))
    with pytest.raises(SeerError, match="daedal does not combine with stop"):
        SamplingParams(gen_length=64, daedal=True, stop=((3,),))
    with pytest.raises(SeerError, match="rho_eos does not combine with factor"):
        SamplingParams(gen_length=64, rho_eos=True, factor=1.0)
    with pytest.raises(SeerError, match="daedal does not combine with suffix"):
        SamplingParams(gen_length=64, daedal=True, suffix=(4,))
    SamplingParams(gen_length=64, threshold=0.9, early_stop=True, stop=((3,),))  # they compose


def test_the_flat_view_is_generated_from_the_declarations():
    """The front ends see every policy option under the name and default its module declares."""
    view = {f.name for f in fields(SamplingOptions)}
    assert {f.name for f, _ in specs(SamplingParams)} == view
    for d in REGISTRY:
        assert set(d.names()) <= view
        for f in fields(d.options):
            assert defaults(SamplingParams)[f.name] == f.default
    assert defaults(SamplingParams)["daedal"] is False
    assert Traits().sets_length is False
