"""Device code for the as-of search, as plain Python (no numba import).

Each module exposes ``build(jit, ...)``: it wraps plain functions with the ``jit`` it is given
(``numba.njit``, ``numba.cuda.jit(device=True)`` or the identity) so that the logic for one
left row exists once: ``probe.py``, ``search.py``, ``window.py`` and ``calendar.py``'s
reaches run on every backend, ``groups.py`` (the left groups' lookup) on the GPU and in plain
Python, and the other modules' walks, sorts, hashes and gathers on the CPU (``numba.njit``).
Installed as ``asofgpu.kernels``.

Functions call each other through module globals that ``bind`` fills in per build, not through
closures: numba hashes closure contents into its on-disk cache key, and a closure over a jitted
function hashes differently in every process, so the cache would never hit.

Indices: numba gives a signed index Python's meaning (a negative one counts from the end), a
compare and select at every access, which costs far more than it looks in loops of random
reads. In the CPU kernels' hot loops, positions taken from data (gather-map entries, group
codes, row numbers) that are known to be rows index as ``uint64``: the gather of four
columns by 1M map entries took 9.4 ms with signed entries and 5.5 ms with unsigned ones.
A loop over a piece of rows, whose start numba cannot prove non-negative, counts in
``uint64`` where that measured faster (the chunked gather's pieces: 8.1 -> 6.6 ms; the
stream probe's pieces gained nothing). (The per-row search shared with the GPU,
``probe.py``, stays signed.)
"""

import types

#: Elements left unused between two pieces' rows of per-group state (``state[t]``): a cache
#: line's 64 bytes even of 4-byte values. Without them a few groups' state of neighbouring
#: pieces shares a line that each thread writes at every row: the merge scan's nearest
#: walk of one group took 32 ms on two threads against 14 ms padded, and 14 on one (that
#: walk now keeps no per-group state: ``scan.one_group_pass``), and 2M quotes in 2 groups
#: were sorted into groups in 15-17 ms against 8-11 padded.
APART = 16


def bind(fn, **names):
    """A copy of ``fn`` whose global names in ``names`` resolve to the given objects."""
    return types.FunctionType(
        fn.__code__, {**fn.__globals__, **names}, fn.__name__, fn.__defaults__, fn.__closure__
    )
