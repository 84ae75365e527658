"""Loading a CPU kernel from numba's on-disk cache without setting up numba's compiler.

numba's ``Cache.load_overload`` refreshes the target context before it loads anything: it
imports and installs every typing and lowering registry (numpy's functions, typed
containers, random, linear algebra, third-party extensions), which only compiling needs.
That is most of the time to a process's first kernel after numba's import, about 0.2 s on a
2-core VM (numba's import, the target made ready and a first kernel: 0.62 -> 0.37 s), where
each load itself takes a few milliseconds; every ``asofgpu enrich`` and every first join
waits on it. Machine code loaded from the cache needs only the symbols it links
against:

- numba's C helpers, Python's exceptions and ``None`` (added when the target context is made)
  and the C math functions (added by its ``init``);
- the NRT, numba's reference-counted memory (``rtsys.initialize``, the only thing the
  registries' refresh adds that the kernels call);
- the hash secret (added when ``numba.cpython.hashing`` is imported: no kernel calls Python's
  ``hash``, but it costs nothing to have);
- for parallel kernels, the threading layer, which numba's loader starts itself (the cached
  parfor's ``reload_init``).

``light`` gives a dispatcher's cache a load that sets up those alone. A kernel that is not in
the cache compiles as before: numba's compiler refreshes the registries itself.

>>> from asofgpu._backend.jit import cpu_take  # njit_cached makes every CPU kernel light
>>> type(cpu_take().check_map._cache).__name__
'LightLoadCache'
"""

from __future__ import annotations

from numba.core.caching import FunctionCache


def ready_to_run(context) -> None:
    """What machine code loaded from numba's cache needs of the process, for the CPU target
    ``context`` (numba's compiler lock held: ``rtsys.initialize`` compiles the NRT's own
    functions the first time).

    >>> from numba.core.registry import cpu_target
    >>> ready_to_run(cpu_target.target_context)
    """
    import numba.cpython.hashing  # noqa: F401 - its import adds the hash secret's symbols
    from numba.core.runtime import rtsys

    rtsys.initialize(context)


class LightLoadCache(FunctionCache):
    """numba's cache of one function, loading an overload after ``ready_to_run`` where
    numba refreshes every registry first."""

    def load_overload(self, sig, target_context):
        ready_to_run(target_context)
        # numba's own body but for the refresh (the guard: Windows' sharing errors read as a
        # miss, and the kernel compiles)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)


def light(dispatcher):
    """``dispatcher`` (``numba.njit(cache=True)``'s), its cache loading overloads without
    the registries (``LightLoadCache``); returned. One without numba's usual cache (caching
    off, a numba whose internals moved: tests/test_cache_load.py checks the installed one)
    is returned as it is."""
    cache = getattr(dispatcher, "_cache", None)
    if type(cache) is FunctionCache and _has_numbas_load(cache):
        cache.__class__ = LightLoadCache  # the instance keeps its files and its locks
    return dispatcher


def _has_numbas_load(cache) -> bool:
    """Whether ``cache`` loads as ``LightLoadCache`` expects: numba 0.61 to 0.68 do."""
    return callable(getattr(cache, "_load_overload", None)) and callable(
        getattr(cache, "_guard_against_spurious_io_errors", None)
    )
