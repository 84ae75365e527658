"""numba's thread pool as asofgpu starts it: GNU OpenMP's idle threads spinning for a short
while before they sleep, unless the user chose how they wait (``jit.start_pool``), the setting
kept out of the environment afterwards."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# A join on the pool (100k rows), then what the process's environment says afterwards;
# GNU OpenMP prints the settings it loaded with under OMP_DISPLAY_ENV=VERBOSE.
JOIN = """
import os
import numpy as np
import asofgpu as ag
ag.asof_join(np.arange(100_000), np.arange(100_000), device="cpu")
print("after:", os.environ.get("OMP_WAIT_POLICY"), os.environ.get("GOMP_SPINCOUNT"))
"""

WAIT_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")


def _run_join(**settings: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in WAIT_SETTINGS}
    env.update(OMP_DISPLAY_ENV="VERBOSE", **settings)
    done = subprocess.run(
        [sys.executable, "-c", JOIN], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    if "GOMP_SPINCOUNT" not in done.stderr:  # where OpenMP displays its settings
        pytest.skip("numba's threading layer here is not GNU OpenMP's")
    return done.stdout + done.stderr


def test_the_pools_threads_spin_briefly_and_the_environment_is_left_as_it_was():
    """GNU OpenMP's idle threads spin 300,000 turns by default: on cores other processes
    used, a 1M-row join took 0.09 s instead of 0.03 s."""
    output = _run_join()
    assert "GOMP_SPINCOUNT = '10000'" in output
    assert "after: None None" in output


@pytest.mark.parametrize(
    ("settings", "loaded", "after"),
    [
        ({"OMP_WAIT_POLICY": "ACTIVE"}, "OMP_WAIT_POLICY = 'ACTIVE'", "after: ACTIVE None"),
        ({"GOMP_SPINCOUNT": "1234"}, "GOMP_SPINCOUNT = '1234'", "after: None 1234"),
        ({"OMP_WAIT_POLICY": "PASSIVE"}, "GOMP_SPINCOUNT = '0'", "after: PASSIVE None"),
    ],
)
def test_a_users_own_wait_setting_is_kept(settings, loaded, after):
    output = _run_join(**settings)
    assert loaded in output
    assert after in output


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_while_another_thread_launches_gets_the_launch_locks_free():
    """A thread inside a parallel launch at the fork held ``PARALLEL_LAUNCH`` in the child
    for ever (that thread does not exist there): the child's first parallel join hung."""
    from fakes import exit_of_a_child_forked_while_held

    from asofgpu._backend.jit import _POOL_START, PARALLEL_LAUNCH

    def take_both():  # in the child: it can take both locks
        with PARALLEL_LAUNCH, _POOL_START:
            return True

    assert exit_of_a_child_forked_while_held([PARALLEL_LAUNCH, _POOL_START], take_both) == 0
    assert not PARALLEL_LAUNCH.locked() and not _POOL_START.locked()  # the parent's, released


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_inside_a_launch_leaves_it_as_the_parent_does():
    """The thread that forked goes on in the child, inside its launch: the lock stays its
    own there (made free at the fork, the block's exit released an unlocked lock)."""
    import signal

    from asofgpu._backend.jit import PARALLEL_LAUNCH

    with PARALLEL_LAUNCH:
        pid = os.fork()
        if pid == 0:
            signal.alarm(20)
            held = PARALLEL_LAUNCH.locked()
    if pid == 0:
        try:
            code = 0 if held and not PARALLEL_LAUNCH.locked() else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
