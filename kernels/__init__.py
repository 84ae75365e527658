"""Device code for the as-of search, as plain Python (no numba import).

Each module exposes ``build(jit, ...)``: it wraps plain functions with the ``jit`` it is given
(``numba.njit``, ``numba.cuda.jit(device=True)`` or the identity) so that the logic for one
left row exists once and runs on every backend. Installed as ``asofgpu.kernels``.

Functions call each other through module globals that ``bind`` fills in per build, not through
closures: numba hashes closure contents into its on-disk cache key, and a closure over a jitted
function hashes differently in every process, so the cache would never hit.
"""

import types


def bind(fn, **names):
    """A copy of ``fn`` whose global names in ``names`` resolve to the given objects."""
    return types.FunctionType(fn.__code__, {**fn.__globals__, **names}, fn.__name__,
                              fn.__defaults__, fn.__closure__)
