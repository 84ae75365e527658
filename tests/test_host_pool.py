"""The host pool (asofgpu/_host_pool.py): a block is lent again only once nothing refers to
the array made on it (no view, no Arrow buffer, no numpy array over that buffer), free blocks
are reused by the fit rule, the limit holds, and joins through the pool stay right while
earlier results are kept."""

from __future__ import annotations

import gc
import os
import threading
import time

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import asofgpu as ag
from asofgpu import _backend
from asofgpu._host_pool import MIN_BYTES, HostPool

MIB = 1 << 20


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_a_block_is_lent_again_only_once_its_array_is_dropped():
    pool = HostPool(limit=64 * MIB)
    a = pool.empty(MIB // 8, np.float64)
    first = _address(a)
    b = pool.empty(MIB // 8, np.float64)  # a is alive: a new block
    assert _address(b) != first and pool.total_bytes() == 2 * MIB
    del a
    assert pool.free_bytes() == MIB
    c = pool.empty(MIB // 4, np.int32)  # a's block, under another type
    assert _address(c) == first and pool.total_bytes() == 2 * MIB and pool.free_bytes() == 0


@pytest.mark.parametrize(
    "holder", ["view", "arrow array", "numpy over arrow", "table column", "numba view"]
)
def test_whatever_refers_to_the_memory_keeps_the_block_lent(holder):
    pool = HostPool(limit=64 * MIB)
    a = pool.empty(MIB // 8, np.int64)
    a[:] = np.arange(len(a))
    if holder == "view":
        kept = a[10:].view(np.uint8)
    elif holder == "arrow array":
        kept = pa.Array.from_buffers(pa.int64(), len(a), [None, pa.py_buffer(a)])
    elif holder == "numpy over arrow":
        kept = pa.Array.from_buffers(pa.int64(), len(a), [None, pa.py_buffer(a)]).to_numpy()
    elif holder == "table column":
        kept = pa.table({"x": pa.Array.from_buffers(pa.int64(), len(a), [None, pa.py_buffer(a)])})
    else:
        import numba

        kept = numba.njit(lambda x: x[5:])(a)
    del a
    gc.collect()
    assert pool.free_bytes() == 0
    b = pool.empty(MIB // 8, np.int64)  # must not be the kept memory
    b[:] = -1
    values = np.asarray(kept["x"] if holder == "table column" else kept).view(np.int64)
    assert values[0] == {"view": 10, "numba view": 5}.get(holder, 0)
    assert values[-1] == MIB // 8 - 1
    del kept, values
    gc.collect()
    assert pool.free_bytes() == MIB


def test_a_free_block_fits_an_array_of_up_to_a_quarter_less():
    pool = HostPool(limit=64 * MIB)
    blocks = [pool.empty(size, np.uint8) for size in (4 * MIB, 5 * MIB, 8 * MIB)]
    addresses = [_address(b) for b in blocks]
    del blocks
    fitted = pool.empty(4 * MIB, np.uint8)  # fits 4 and 5 MiB: the smaller
    assert _address(fitted) == addresses[0]
    fitted = [fitted, pool.empty(4 * MIB, np.uint8)]  # the 5 MiB block: a fifth unused
    assert _address(fitted[1]) == addresses[1]
    third = pool.empty(4 * MIB, np.uint8)  # 8 MiB would leave half unused: a new block
    assert _address(third) not in addresses and pool.total_bytes() == 21 * MIB
    too_big = pool.empty(9 * MIB, np.uint8)  # no free block is large enough
    assert _address(too_big) not in addresses


def test_small_arrays_and_arrays_over_the_limit_are_not_pooled():
    pool = HostPool(limit=8 * MIB)
    small = pool.empty(MIN_BYTES - 1, np.uint8)
    large = pool.empty(8 * MIB + 1, np.uint8)
    assert pool.total_bytes() == 0
    assert len(small) == MIN_BYTES - 1 and len(large) == 8 * MIB + 1
    assert pool.empty(0, np.float64).shape == (0,)


def test_room_is_made_from_free_blocks_oldest_first_then_from_lent_ones():
    pool = HostPool(limit=4 * MIB)
    lent = pool.empty(MIB, np.uint8)
    lent[:] = 7
    old_free, new_free = pool.empty(MIB, np.uint8), pool.empty(MIB, np.uint8)
    kept = _address(new_free)
    del old_free, new_free
    big = pool.empty(2 * MIB, np.uint8)  # 4 MiB full: the older free block goes
    assert pool.total_bytes() == 4 * MIB and pool.free_bytes() == MIB
    assert _address(pool.empty(MIB, np.uint8)) == kept  # the newer one stayed
    del big
    huge = pool.empty(4 * MIB, np.uint8)  # lets go of every block, the lent one too
    huge[:] = 0
    assert pool.total_bytes() == 4 * MIB
    assert (lent == 7).all()  # a lent block let go of stays with its array
    del lent
    assert pool.free_bytes() == 0  # ... and is no longer the pool's


def test_set_limit_and_free_all_blocks():
    pool = HostPool(limit=8 * MIB)
    lent = pool.empty(2 * MIB, np.uint8)
    free = pool.empty(2 * MIB, np.uint8)
    del free
    assert pool.get_limit() == 8 * MIB and pool.free_bytes() == 2 * MIB
    pool.free_all_blocks()
    assert pool.total_bytes() == 2 * MIB and pool.free_bytes() == 0
    pool.set_limit(MIB)  # below the lent block: let go of
    assert pool.get_limit() == MIB and pool.total_bytes() == 0
    pool.set_limit(0)  # off
    off = pool.empty(2 * MIB, np.uint8)
    assert pool.total_bytes() == 0 and len(off) == 2 * MIB
    del lent


@pytest.mark.parametrize(
    ("size", "error"),
    [
        (-1, ValueError),
        (1.5, TypeError),
        ("1e6", TypeError),
        (None, TypeError),
        (True, TypeError),
    ],
)
def test_set_limit_rejects_what_is_not_a_byte_count(size, error):
    with pytest.raises(
        error,
        match=r"set_limit: size must be a whole number of bytes >= 0, "
        rf"got {size!r}",
    ):
        HostPool().set_limit(size)
    with pytest.raises(error, match=r"HostPool: limit must be a whole number of bytes >= 0"):
        HostPool(limit=size)
    HostPool().set_limit(np.int64(MIB))  # numpy's integers are byte counts too


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["lend", "lend", "drop", "view", "limit", "release"]),
            st.integers(1, 6),
            st.integers(0, 10),
        ),
        max_size=40,
    ),
    st.integers(0, 12),
)
def test_live_arrays_never_share_memory_and_the_limit_holds(steps, limit_mib):
    pool = HostPool(limit=limit_mib * MIB)
    live: list[tuple[np.ndarray, int]] = []  # (array or a view of it, the stamp written)
    for stamp, (action, mib, pick) in enumerate(steps):
        if action == "lend":
            a = pool.empty(mib * MIB // 8, np.int64)
            a[:] = stamp
            live.append((a, stamp))
        elif action == "limit":
            pool.set_limit(pick * MIB)
        elif action == "release":
            pool.free_all_blocks()
            assert pool.free_bytes() == 0
        elif live:
            a, s = live.pop(pick % len(live))
            if action == "view":  # keep a view only: the block must stay lent
                live.append((a[len(a) // 2 :], s))
            del a
        assert pool.total_bytes() <= pool.get_limit()
        assert pool.total_bytes() == pool.free_bytes() + pool.used_bytes()
        for a, s in live:
            assert a[0] == s and a[-1] == s


def test_threads_never_get_the_same_block():
    """Each thread keeps some of its arrays and drops others; every kept array still holds
    its own stamp once all are done."""
    pool = HostPool(limit=32 * MIB)
    kept: list[tuple[np.ndarray, int]] = []

    def work(thread):
        for i in range(60):
            a = pool.empty(MIB // 8, np.int64)
            stamp = thread * 1000 + i
            a[:] = stamp
            if i % 3 == 0:
                kept.append((a, stamp))  # list.append is atomic

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(kept) == 80
    assert all((a == stamp).all() for a, stamp in kept)
    assert pool.total_bytes() <= 32 * MIB


def _backward_by_group(right_time, right_codes, left_time, left_codes) -> np.ndarray:
    """The latest right row of the same group at or before each left row (right times are
    distinct, so there is one)."""
    expected = np.full(len(left_time), ag.NO_MATCH, np.int64)
    for code in np.unique(left_codes):
        rows = np.flatnonzero(right_codes == code)
        if not len(rows):
            continue
        at = np.flatnonzero(left_codes == code)
        pos = np.searchsorted(right_time[rows], left_time[at], side="right") - 1
        expected[at] = np.where(pos >= 0, rows[np.maximum(pos, 0)], ag.NO_MATCH)
    return expected


def test_joins_through_the_pool_keep_earlier_results_and_reuse_freed_blocks():
    rng = np.random.default_rng(7)
    n_right, n_left = 400_000, 300_000  # maps and gathered columns over a MiB: pooled
    right_time = np.sort(rng.choice(10**9, n_right, replace=False))
    right_codes = rng.integers(0, 50, n_right)
    payload = pa.table({"v": rng.random(n_right)})
    prepared = ag.AsofJoin(right_time, pa.array(right_codes.astype(str)), device="cpu")
    batches = [
        (np.sort(rng.integers(0, 10**9, n_left)), rng.integers(0, 60, n_left)) for _ in range(3)
    ]
    maps = [_backward_by_group(right_time, right_codes, t, c) for t, c in batches]
    expected = [
        pa.array(payload["v"].to_numpy()[np.maximum(m, 0)], mask=m < 0).to_pylist() for m in maps
    ]

    def joins():
        return [
            ag.gather(payload, prepared.join(t, pa.array(c.astype(str))))["v"] for t, c in batches
        ]

    results = joins()  # all three held while the later ones ran
    assert [r.to_pylist() for r in results] == expected
    held = ag.host_pool.total_bytes()
    assert 0 < held <= ag.host_pool.get_limit()
    del results
    assert ag.host_pool.free_bytes() > 0
    assert [r.to_pylist() for r in joins()] == expected  # on the freed blocks
    assert ag.host_pool is _backend.base.HOST_POOL


@pytest.mark.parametrize(
    "dtype", ["M8[ns]", "m8[us]", "?", "u1", "i2", ">i8", "f4", "c16", "U4", "S3"]
)
def test_each_plain_dtype_comes_back_as_asked(dtype):
    pool = HostPool(limit=64 * MIB)
    a = pool.empty(MIB, dtype)
    assert a.dtype == np.dtype(dtype) and a.shape == (MIB,) and a.flags.writeable
    assert pool.total_bytes() == MIB * np.dtype(dtype).itemsize


def test_structured_dtypes_keep_their_fields_and_objects_are_refused():
    pool = HostPool(limit=64 * MIB)
    pair = np.dtype([("time", np.int64), ("price", np.float64)])
    a = pool.empty(MIB // 16, pair)
    assert a.dtype == pair and pool.total_bytes() == MIB
    a["price"] = 2.5
    assert a["price"][-1] == 2.5
    with pytest.raises(
        TypeError, match="HostPool.empty: dtype must hold no Python objects, got object"
    ):
        pool.empty(MIB, object)


def test_a_call_from_inside_the_pool_does_without_it_and_never_waits(monkeypatch):
    """A finalizer that a garbage collection runs inside the pool's locked code (here: inside
    its allocation of a block) and that calls the pool again must not wait on the lock."""
    pool = HostPool(limit=64 * MIB)
    inside = {}
    allocate = pa.allocate_buffer

    def allocate_and_reenter(nbytes):
        if not inside:
            inside["entered"] = True
            inside["array"] = pool.empty(MIB, np.uint8)  # lent without the pool
            inside["counts"] = (pool.total_bytes(), pool.free_bytes(), pool.used_bytes())
            for call in (lambda: pool.set_limit(0), pool.free_all_blocks):
                with pytest.raises(RuntimeError, match="was called from inside the pool"):
                    call()
        return allocate(nbytes)

    # the re-entry is injected at pyarrow's allocation, which the pool's blocks come from
    monkeypatch.setattr(pa, "allocate_buffer", allocate_and_reenter)
    done = []
    worker = threading.Thread(
        target=lambda: done.append(pool.empty(2 * MIB, np.uint8)), daemon=True
    )
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "the pool waited on itself"
    assert len(done[0]) == 2 * MIB and len(inside["array"]) == MIB
    assert inside["counts"] == (0, 0, 0) and pool.total_bytes() == 2 * MIB
    pool.set_limit(MIB)  # outside again: allowed
    assert pool.total_bytes() == 0


def test_the_limit_is_read_under_the_lock(monkeypatch):
    """A limit lowered while an array waits for the lock holds for that array."""
    pool = HostPool(limit=64 * MIB)
    pool._lock.acquire()
    lent = []
    worker = threading.Thread(
        target=lambda: lent.append(pool.empty(2 * MIB, np.uint8)), daemon=True
    )
    worker.start()
    time.sleep(0.2)  # the worker waits on the lock by now
    pool._limit = MIB  # what set_limit does once it holds the lock
    pool._lock.release()
    worker.join(timeout=30)
    assert len(lent[0]) == 2 * MIB and pool.total_bytes() == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_while_another_thread_holds_the_lock_can_use_the_pool():
    """That thread does not exist in the child: the lock it held is free there."""
    from fakes import exit_of_a_child_forked_while_held

    pool = HostPool(limit=64 * MIB)

    def lends():  # in the child, with the lock a thread inside the pool held at the fork
        return len(pool.empty(MIB, np.uint8)) == MIB and pool.total_bytes() == MIB

    assert exit_of_a_child_forked_while_held([pool._lock], lends) == 0
    assert not pool._lock.locked()
