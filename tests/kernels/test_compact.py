"""The compaction kernel: the reference's contract; Triton (interpreted on CPU) equals it."""

from __future__ import annotations

import importlib.util
import os

# Triton decides interpreted vs compiled when it is first imported: switch the interpreter on
# here, at collection, before anything imports it (engine tests pin their kernel backend).
os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seer.kernels import dispatch
from seer.kernels.compact_ref import compact_reference

PAD, EOS = 0, 1
HAS_TRITON = importlib.util.find_spec("triton") is not None


def case(plens: list[int], windows: list[int], rows: list[int], capacity: int, seed: int = 0):
    """A step-0 canvas (left-padded prompts, full windows) and the arguments of one group."""
    b, p_in, w_in = len(plens), max(plens), max(windows)
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(2, 100, (b, p_in + w_in), generator=g)
    for r, q in enumerate(plens):
        x[r, : p_in - q] = PAD
    plen, window = torch.tensor(plens), torch.tensor(windows)
    width = max([windows[r] for r in rows], default=1)
    p_out = max([plens[r] for r in rows], default=1) + 1  # one extra column of left padding
    offsets, n_packs = None, 0
    if capacity:
        lengths = [plens[r] + windows[r] for r in rows]
        capacity = max([capacity, *lengths])
        offs, pack, used = [], 0, 0
        for n in lengths:  # next-fit, as the scheduler packs
            if used + n > capacity:
                pack, used = pack + 1, 0
            offs.append(pack * capacity + used)
            used += n
        offsets, n_packs = torch.tensor(offs, dtype=torch.long), pack + 1
    kw = dict(p_in=p_in, p_out=p_out, width=width, capacity=capacity, n_packs=n_packs, shift=1)
    return (x, plen, window, torch.tensor(rows, dtype=torch.long), offsets), kw


def test_reference_trims_repacks_and_positions():
    args, kw = case([3, 1], [4, 2], [1, 0], capacity=16)
    x, plen, window = args[:3]
    out = compact_reference(*args, **kw, pad_id=PAD, eos_id=EOS)
    # row layout: row 1 (prompt 1, window 2) left-padded to p_out = 4, window padded to 4
    assert out.x[0].tolist() == [PAD] * 3 + x[1, 2:5].tolist() + [EOS, EOS]
    assert out.attention_mask[0].tolist() == [0, 0, 0, 1, 1, 1, 0, 0]
    assert out.x[1].tolist() == [PAD] + x[0, :7].tolist()
    # packed: segment 0 = row 1 (3 slots), segment 1 = row 0 (7 slots), then free slots
    assert out.seg.tolist() == [0] * 3 + [1] * 7 + [-1] * 6
    assert out.pos.tolist() == [0, 1, 2, *range(7), 0, 0, 0, 0, 0, 0]
    flat = out.x.flatten()
    assert flat[out.src[:10]].tolist() == x[1, 2:5].tolist() + x[0, :7].tolist()
    # window position j of segment 0 is predicted by slot 1 + j - 1 (Dream's shift of 1)
    assert out.cols.tolist() == [[0, 1, -1, -1], [5, 6, 7, 8]]
    assert out.cu_seqlens.tolist() == [0, 3, 10]
    assert out.record.tolist() == [2, 6, 4, 10]


def test_dispatch_override_and_default():
    with dispatch.use_backend("reference"):
        assert dispatch.backend("cpu") == "reference"
    if not dispatch.triton_available():
        assert dispatch.backend("cuda") == "reference"
    with pytest.raises(Exception, match="unknown kernel backend"), dispatch.use_backend("cuda"):
        pass


@pytest.fixture
def interpreter():
    if not HAS_TRITON:
        pytest.skip("triton is not installed (pip install -e '.[kernels]')")
    import triton

    if not triton.knobs.runtime.interpret and not torch.cuda.is_available():
        pytest.skip("triton was imported before TRITON_INTERPRET=1 could be set")
    from seer.kernels.compact_triton import compact_triton

    assert dispatch.backend("cpu") == "triton"
    return compact_triton


def assert_same(a, b):
    for name in ("x", "attention_mask", "src", "pos", "seg", "cols", "cu_seqlens", "record"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name


@pytest.mark.parametrize(
    ("plens", "windows", "rows", "capacity"),
    [
        ([4], [1], [0], 0),  # batch 1, L* = 1, static
        ([4], [1], [0], 8),  # batch 1, L* = 1, packed
        ([2, 5, 3], [16, 16, 16], [0, 1, 2], 0),  # L* = gen_length everywhere
        ([2, 5, 3], [16, 8, 1], [2, 0], 24),  # a subset, two packs
        ([2, 5], [3, 4], [], 16),  # empty group
    ],
)
def test_kernel_equals_reference_on_edge_cases(interpreter, plens, windows, rows, capacity):
    args, kw = case(plens, windows, rows, capacity)
    ref = compact_reference(*args, **kw, pad_id=PAD, eos_id=EOS)
    assert_same(interpreter(*args, **kw, pad_id=PAD, eos_id=EOS), ref)


@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    lens=st.lists(st.tuples(st.integers(1, 9), st.integers(1, 70)), min_size=1, max_size=6),
    pick=st.integers(0, 2**6 - 1),
    capacity=st.sampled_from([0, 32, 128]),
)
def test_kernel_equals_reference_on_random_shapes(interpreter, lens, pick, capacity):
    rows = [r for r in range(len(lens)) if pick >> r & 1] or [0]
    args, kw = case([p for p, _ in lens], [w for _, w in lens], rows, capacity)
    ref = compact_reference(*args, **kw, pad_id=PAD, eos_id=EOS)
    assert_same(interpreter(*args, **kw, pad_id=PAD, eos_id=EOS), ref)


def test_a_forced_backend_stays_in_its_own_thread():
    import threading

    from seer.kernels import dispatch

    seen = []
    with dispatch.use_backend("reference"):
        t = threading.Thread(target=lambda: seen.append(dispatch._forced.get()))
        t.start()
        t.join()
        assert dispatch._forced.get() == "reference" == dispatch.backend("cpu")
    assert seen == [None]  # the other thread was not forced: it chooses automatically
    assert dispatch._forced.get() is None
