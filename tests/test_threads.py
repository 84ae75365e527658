"""A prepared ``AsofJoin`` probed from several threads at once (a service's state table):
each probe gives what it gives alone."""

from __future__ import annotations

import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import asofgpu as ag


def test_ambiguous_raise_raises_in_every_thread_of_a_fresh_join():
    """The table of right keys with several rows is built at the first ``ambiguous="raise"``
    probe; it was kept before it was filled, and a thread arriving meanwhile read "no key is
    ambiguous" and got a map back (as did a pickle taken then, forever). Threads switch as
    often as Python lets them, so that one arrives in the middle of the build; without the
    fix most of these rounds had a thread miss the error."""
    right = np.repeat(np.arange(1_000_000), 2)  # every key twice: every match is ambiguous
    left = np.array([10, 20, 30])
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(6):
            prepared = ag.AsofJoin(right, device="cpu")
            barrier = threading.Barrier(4)

            def raises(_) -> bool:
                barrier.wait()
                try:
                    prepared.join(left, ambiguous="raise")
                except ag.AmbiguousMatchError:
                    return True
                return False

            with ThreadPoolExecutor(4) as pool:
                assert all(pool.map(raises, range(4)))
    finally:
        sys.setswitchinterval(interval)


def test_threads_that_meet_a_deferred_sort_find_it_done_or_do_it():
    """A one-shot join defers its sort to the first probe; the sort was marked done before
    its arrays were set, and a second thread then read arrays that did not exist yet
    (AttributeError: '_offsets'). One-shot calls keep such a join to themselves; this holds
    for any that does not."""
    rng = np.random.default_rng(0)
    right_on, right_by = rng.integers(0, 10**9, 300_000), rng.integers(0, 100, 300_000)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(5):
            join = ag.AsofJoin(right_on, right_by, device="cpu", _defer_sort=True)
            start = threading.Barrier(4)

            def last_rows(_, join=join, start=start):
                start.wait()
                return join.last_rows()

            with ThreadPoolExecutor(4) as pool:
                found = list(pool.map(last_rows, range(4)))
            for rows in found[1:]:
                np.testing.assert_array_equal(rows, found[0])
    finally:
        sys.setswitchinterval(interval)


def test_the_cpu_target_made_ready_beside_a_compile():
    """``ready_cpu_target`` on one thread while another compiles a kernel first: each waits
    for numba's compiler lock, and the process's first join is right (a process of its own,
    where numba is new: ``asofgpu enrich`` makes the target ready so)."""
    script = (
        "import threading\n"
        "import numpy as np\n"
        "import asofgpu as ag\n"
        "from asofgpu._backend.jit import ready_cpu_target\n"
        "ready = threading.Thread(target=ready_cpu_target)\n"
        "ready.start()\n"
        "m = ag.AsofJoin(np.arange(1 << 15) * 1.0, device='cpu').join(np.arange(1 << 15) + 0.5)\n"
        "ready.join()\n"
        "assert (np.asarray(m) == np.arange(1 << 15)).all(), m\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr
