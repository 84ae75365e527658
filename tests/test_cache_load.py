"""Kernels loaded from numba's cache without numba's compiler registries
(``asofgpu/_backend/cache_load.py``): joins right, serial and parallel, in a process that never
refreshes them; a kernel not in the cache still compiles; other dispatchers are left as they
are."""

from __future__ import annotations

import subprocess
import sys

import numba
from numba.core.caching import FunctionCache, NullCache

from asofgpu._backend import cache_load

# A process's joins: 100,000 rows run the parallel kernels, strings and floats their own.
JOINS = """\
import sys
import numpy as np
import pyarrow as pa
from numba.core import base

refreshed = []
refresh = base.BaseContext.refresh
base.BaseContext.refresh = lambda self: refreshed.append(type(self).__name__) or refresh(self)

import asofgpu as ag
from asofgpu._backend.jit import ready_cpu_target

ready_cpu_target()
n = 100_000
rng = np.random.default_rng(0)
right = pa.table({"t": np.sort(rng.integers(0, 10**9, n)), "g": rng.integers(0, 50, n).astype(str),
                  "v": rng.random(n)})
left = pa.table({"t": np.sort(rng.integers(0, 10**9, n)), "g": rng.integers(0, 60, n).astype(str)})
got = ag.join_asof(left, right, on="t", by="g", strategy="nearest", device="cpu")
floats = ag.AsofJoin(np.arange(n) * 2.0, device="cpu").join(np.arange(n) * 2.0 + 1)
assert (np.asarray(floats) == np.arange(n)).all()
# Row by row for a sample: the latest or nearest key of the same group.
t, g, v = (right.column(c).to_numpy(zero_copy_only=False) for c in ("t", "g", "v"))
for i in rng.integers(0, n, 200):
    lt, lg = left["t"][int(i)].as_py(), left["g"][int(i)].as_py()
    keys = t[g == lg]
    best = keys[np.argmin(np.abs(keys - lt))] if keys.size else None
    found = got["v"][int(i)].as_py()
    if best is None:
        assert found is None
    else:
        assert abs(lt - best) == min(abs(lt - k) for k in t[(g == lg) & (v == found)])
print(sys.argv[1], len(refreshed))
"""


def _joins(tag: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", JOINS, tag], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_cached_kernels_load_and_join_without_the_registries():
    """The first process may compile what the cache lacks (numba's compiler refreshes the
    registries then); the second loads every kernel, never refreshes them, and joins right."""
    _joins("first")
    assert _joins("second") == ["second", "0"]


def test_a_kernel_not_in_the_cache_still_compiles(tmp_path, monkeypatch):
    """A light cache's miss compiles as numba's does, and saves: the next dispatcher of the
    same function loads what it saved."""
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))

    def add_one(x):
        return x + 1

    add_one.__qualname__ = f"add_one_{tmp_path.name}"  # a name no earlier run cached
    first = cache_load.light(numba.njit(cache=True)(add_one))
    assert type(first._cache) is cache_load.LightLoadCache
    assert first(41) == 42 and first.stats.cache_misses and not first.stats.cache_hits
    again = cache_load.light(numba.njit(cache=True)(add_one))
    assert again(1) == 2 and again.stats.cache_hits and not again.stats.cache_misses


def test_other_caches_are_left_as_they_are():
    uncached = cache_load.light(numba.njit(cache=False)(lambda x: x))
    assert type(uncached._cache) is NullCache

    class Moved(FunctionCache):  # a numba whose cache loads otherwise
        _load_overload = None

    dispatcher = numba.njit(cache=True)(lambda x: x)
    dispatcher._cache.__class__ = Moved
    assert type(cache_load.light(dispatcher)._cache) is Moved
