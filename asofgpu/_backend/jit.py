"""numba on the CPU: building the kernels of ``kernels/``, their on-disk cache, and launching
on numba's thread pool.

Each ``cpu_*`` function builds (once a process: ``functools.cache``) one kernels module for
``numba.njit``; ``cached_njit`` keys numba's cache on the kernel sources, ``njit_cached`` finds
a writable place for it, locks it against other processes (``cache_lock``) and loads from it
without numba's compiler registries (``cache_load``). Launches on
the thread pool hold ``PARALLEL_LAUNCH``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import stat
import sys
import tempfile
import warnings
from pathlib import Path


from .._fork_safe import ForkSafeLock
from ..kernels import (
    bind,
    calendar,
    cursor,
    fixed_width,
    probe,
    radix,
    scan,
    splice,
    stream,
    strings,
    take,
    views,
    window,
)


# numba's workqueue threading layer (the one without TBB or OpenMP) aborts the process on
# concurrent parallel launches: launches from several threads take turns on this lock.
PARALLEL_LAUNCH = ForkSafeLock()


def launching(parallel: bool):
    """``PARALLEL_LAUNCH`` for a launch on the thread pool, nothing for one on one thread."""
    return PARALLEL_LAUNCH if parallel else contextlib.nullcontext()


def threads(parallel: bool) -> int:
    """The threads a launch runs on: numba's pool's, or one."""
    return pool_threads() if parallel else 1


# The OpenMP runtime's own settings of how its idle threads wait (GNU's, and Intel's), and
# how long GNU's spin before they sleep unless one is set (``start_pool``).
_WAIT_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")
SPIN_TURNS = 10_000
_POOL_START = ForkSafeLock()
_pool_started = False


def pool_threads() -> int:
    """``numba.get_num_threads()``, numba's pool started as ``start_pool`` starts it: what
    asofgpu calls rather than numba's own, which would start the pool otherwise."""
    import numba

    start_pool()
    return numba.get_num_threads()


def ready_cpu_target() -> None:
    """Import numba and set up its CPU target for kernels loaded from the cache
    (``cache_load.ready_to_run``): what the process's first compiled launch does before it
    loads a kernel (0.2 s on a 2-core VM, most of it numba's import). ``asofgpu enrich``
    calls it on a thread of its own while its main thread reads statistics and starts the
    readers.

    >>> ready_cpu_target()
    """
    import numba  # noqa: F401 - the import is most of what is made ready
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target

    from .cache_load import ready_to_run

    # A dispatcher loads and compiles under this lock: a launch on another thread meanwhile
    # waits here rather than setting the runtime up twice.
    with global_compiler_lock:
        ready_to_run(cpu_target.target_context)


def start_pool() -> None:
    """Start numba's thread pool (once a process) with GNU OpenMP's idle threads spinning for
    ``SPIN_TURNS`` turns before they sleep, unless the user chose how they wait.

    GNU OpenMP's default, 300,000 turns (milliseconds), keeps the pool's threads spinning
    after each parallel loop: where other processes also used the cores (two joining at
    once, a Dask worker beside another), they took the cores from the threads that go on,
    and a 1M-row join took 0.09 s where, at 10,000 turns, it took 0.03 s; on idle cores the
    shorter spin costs up to 15%, where sleeping at once (``OMP_WAIT_POLICY=PASSIVE``) cost
    up to a third of a 15 ms join. The runtime reads its
    settings once, as it loads, which numba's first start of the pool does; the setting is
    then taken out of the environment, so that child processes and other libraries see the
    user's own. (A pool started earlier, by the user's own numba code, keeps its settings,
    as does a GNU OpenMP another library loaded first.) The setting is made on the thread
    that first needs the pool, which may run beside others, as any ``os.environ`` change
    does: setting it at import instead would start the pool there, and a process that
    imported asofgpu could no longer fork (see the README on ``fork``)."""
    global _pool_started
    import numba

    with _POOL_START:
        if _pool_started:
            return
        chosen = any(name in os.environ for name in _WAIT_SETTINGS)
        if not chosen:
            os.environ["GOMP_SPINCOUNT"] = str(SPIN_TURNS)
        try:
            numba.get_num_threads()  # starts the pool, and loads its threading layer
        finally:
            if not chosen:
                del os.environ["GOMP_SPINCOUNT"]
        _pool_started = True


def identity_jit(fn):
    """The python backend's jit: the plain function."""
    return fn


def py_unsigned(x):
    """For the python backend and the simulator: Python ints make every gap exact."""
    return int(x)


def py_options(how, is_float: bool):
    """``how`` (``kernels.probe.Options``) for the python backend and the simulator: integer
    tolerances as Python ints, like the gaps ``py_unsigned`` gives, since numpy 1.x compares
    a Python int past 2**63 with a uint64 as two float64s (a gap of 2**63 - 1 then passes a
    tolerance of 2**63 - 2)."""
    if is_float:
        return how
    return how._replace(
        tol=int(how.tol), back_tols=how.back_tols.tolist(), forward_tols=how.forward_tols.tolist()
    )


@functools.cache
def cpu_strings():
    import numba

    from .._intrinsics import load_word

    # The variant keeps text's kernels apart from fixed width's in numba's cache: both are
    # kernels/hashing.py's functions, under the same names.
    return strings.build(
        cached_njit("text", inline="always"),
        cached_njit("text"),
        cached_njit("text", parallel=True),
        numba.prange,
        load_word,
    )


@functools.cache
def cpu_fixed_width():
    import numba

    return fixed_width.build(
        cached_njit("fixed", inline="always"),
        cached_njit("fixed"),
        cached_njit("fixed", parallel=True),
        numba.prange,
    )


@functools.cache
def cpu_views():
    import numba

    return views.build(
        cached_njit("views", inline="always"),
        cached_njit("views"),
        cached_njit("views", parallel=True),
        numba.prange,
    )


@functools.cache
def cpu_take():
    import numba

    from .._intrinsics import load_at

    return take.build(
        cached_njit, functools.partial(cached_njit, parallel=True), numba.prange, load_at
    )


@functools.cache
def cpu_radix(parallel: bool):
    import numba

    return radix.build(
        cached_njit(), cached_njit(parallel=parallel), numba.prange if parallel else range
    )


def _build_walk(kernels, is_float: bool, parallel: bool, *extra, **helper_options):
    """A kernels module's ``build`` for the cpu: helpers serial, its walks ``parallel``;
    ``extra``: the module's own further arguments."""
    import numba

    kind = "_float" if is_float else "_int"
    return kernels.build(
        cached_njit(kind, **helper_options),
        cached_njit(kind, parallel=parallel),
        is_float,
        numba.uint64,
        numba.prange if parallel else range,
        *extra,
    )


@functools.cache
def cpu_scan(is_float: bool, parallel: bool):
    """kernels/scan.py's ``Scan`` for the cpu."""
    from .._intrinsics import load_at

    kind = "_float" if is_float else "_int"
    return _build_walk(scan, is_float, parallel, cached_njit(kind, inline="always"), load_at)


@functools.cache
def cpu_calendar(parallel: bool):
    """kernels/calendar.py's ``reaches`` for the cpu (the python backend's is the plain
    function: ``calendar.build(identity_jit, identity_jit, identity_jit, range, int)``)."""
    import numba

    return calendar.build(
        cached_njit("calendar", inline="always"),
        cached_njit("calendar"),
        cached_njit("calendar", parallel=parallel),
        numba.prange if parallel else range,
        numba.uint64,
    )


@functools.cache
def cpu_splice(is_float: bool, parallel: bool):
    return _build_walk(splice, is_float, parallel)


@functools.cache
def cpu_window(is_float: bool, parallel: bool):
    """kernels/window.py for the cpu: ``is_float`` chooses the key comparisons of the
    windows (the reductions take either). The row functions are inlined into the pieces'
    loops (see the module's ``build``)."""
    kind = "_float" if is_float else "_int"
    return _build_walk(window, is_float, parallel, cached_njit(kind), inline="always")


def _probe_all(left_keys, left_groups, right, how, out):
    """The cpu kernel: probe_row over left rows, in parallel (prange, probe_row: bound)."""
    for i in prange(out.size):  # noqa: F821 - bound by cpu_probe_all
        probe_row(i, left_keys, left_groups, right, how, out)  # noqa: F821


@functools.cache
def _source_digest() -> str:
    """A digest of the kernel sources, of this module (whose kernels inline them) and of
    the intrinsics they call."""
    digest = hashlib.sha256()
    here = Path(__file__)
    for path in sorted(Path(probe.__file__).parent.glob("*.py")) + [
        here,
        here.parent.parent / "_intrinsics.py",
    ]:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def cached_njit(variant: str = "", **options):
    """``numba.njit(cache=True)`` keyed on the kernel sources: numba checks only the calling
    function's own file, so a cached probe would outlive an edit of the kernels it inlines.
    The digest in the qualified name (which names the cache file) retires it."""
    # numba's cache key ignores the options too (parallel or not): they go in the name.
    # So does the variant (which globals a build binds, e.g. float or integer comparisons).
    tag = variant + "".join(
        f"_{k}{v if isinstance(v, str) else int(v)}" for k, v in sorted(options.items())
    )

    def jit(fn):
        fn = bind(fn)  # a copy: the module's function keeps its name
        fn.__qualname__ = f"{fn.__qualname__}_{_source_digest()}{tag}"
        return njit_cached(fn, **options)

    return jit


def njit_cached(fn, **options):
    """``numba.njit(cache=True, **options)(fn)``, wherever the cache can be written.

    numba caches beside the source when its ``__pycache__`` is writable, else in the user's
    cache directory (``~/.cache/numba``), and refuses to compile at all when neither is (a
    read-only installation run by a user without a home, as containers do). Then the cache
    goes to ``FALLBACK_CACHE`` in the temporary directory (through ``NUMBA_CACHE_DIR``'s
    setting, which is the whole process's: other cached functions go there too), or, if even
    that cannot be written, nowhere: each process compiles again, and says so once. Its
    saves and loads are locked against other processes' (``cache_lock``)."""
    import numba

    if numba.config.DISABLE_JIT:
        # numba would hand back the kernel as plain Python, which cannot run the intrinsics
        # the kernels call: joins failed in numba's words, or ran for minutes.
        raise JitDisabled(
            "asofgpu's CPU kernels need numba's compiler, and NUMBA_DISABLE_JIT is set: unset "
            "it for the process that runs asofgpu (numba reads it once, at import)"
        )
    if options.get("parallel"):
        start_pool()  # before any kernel of the pool's can start it
    return _cached(lambda cache: numba.njit(cache=cache, **options)(fn))


class JitDisabled(RuntimeError):
    """A CPU kernel was needed in a process where numba compiles nothing."""


def cuda_jit_cached(fn, variant: str = ""):
    """``numba.cuda.jit(cache=True)(fn)`` for a kernel bound to its device functions (a
    copy from ``bind``, whose name it changes): cached on disk as ``njit_cached`` caches,
    keyed on the kernel sources as ``cached_njit`` keys (numba-cuda checks only the kernel's
    own file, and the index names the compute capability), with ``variant`` in the name for
    each build of one kernel (float or integer comparisons). A new process then loads the
    GPU's machine code instead of compiling it (about a second a kernel).

    >>> from asofgpu._backend.cuda import cuda_probe_source
    >>> cuda_jit_cached(cuda_probe_source(False), "_int").py_func.__qualname__.endswith("_int")
    True
    """
    from numba import cuda

    fn.__qualname__ = f"{fn.__qualname__}_{_source_digest()}{variant}"
    return _cached(lambda cache: cuda.jit(cache=cache)(fn))


# 0.59 and 0.60 fingerprint a namedtuple argument longer than 40 bytes (a kernels' ``Walk``,
# ``Options``) from stale memory: a kernel compiled for one argument type could then run on
# another (the merge scan compiled for uint64 keys, run on int64 ones: wrong rows).
OLDEST_NUMBA = (0, 61)


class NumbaTooOld(ImportError):
    """The installed numba is older than ``OLDEST_NUMBA``."""


@functools.cache
def check_numba_version() -> None:
    """Raise NumbaTooOld where numba is older than ``OLDEST_NUMBA`` (pyproject.toml asks for
    it; an environment installed without pip's resolver may hold an older one)."""
    import numba

    found = tuple(int(part) for part in re.findall(r"\d+", numba.__version__)[:2])
    if found < OLDEST_NUMBA:
        raise NumbaTooOld(
            f"asofgpu needs numba {OLDEST_NUMBA[0]}.{OLDEST_NUMBA[1]} or later, found "
            f"{numba.__version__}, which can run a kernel compiled for other argument types "
            f"(wrong rows): pip install 'numba>={OLDEST_NUMBA[0]}.{OLDEST_NUMBA[1]}'"
        )


def _cached(make):
    """``make(cache=True)``'s dispatcher, its cache locked, wherever the cache can be
    written (``njit_cached`` says where); ``make(cache=False)``'s, with one warning a
    process, where it cannot."""
    global UNCACHED_BECAUSE
    import numba

    check_numba_version()

    from .cache_load import light
    from .cache_lock import guard

    try:
        return light(guard(make(True)))
    except RuntimeError as exc:  # numba: "cannot cache function ...: no locator available"
        if "no locator available" not in str(exc):
            raise
    chosen = numba.config.CACHE_DIR  # NUMBA_CACHE_DIR, or the fallback set below
    why = f"in NUMBA_CACHE_DIR ({chosen})"
    if not chosen:
        why = f"beside the kernels, in the user's cache directory or in {FALLBACK_CACHE}"
        refused = _not_private(FALLBACK_CACHE)
        if refused:
            why = (
                f"beside the kernels or in the user's cache directory, and {FALLBACK_CACHE} "
                f"{refused}"
            )
        else:
            numba.config.CACHE_DIR = FALLBACK_CACHE
            try:
                return light(guard(make(True)))
            except RuntimeError:
                pass
    first = UNCACHED_BECAUSE is None  # one warning a process
    UNCACHED_BECAUSE = f"numba cannot write its cache {why}"
    if first:
        warnings.warn(
            f"asofgpu: {UNCACHED_BECAUSE}: each process compiles the kernels again (set "
            f"NUMBA_CACHE_DIR to a writable directory)",
            RuntimeWarning,
            stacklevel=_callers_level(),
        )
    return make(False)


def _not_private(path: str) -> str | None:
    """Why ``path`` cannot hold this process's cache, or None once it is this user's own
    directory, which no one else can write (made here, mode 0700, if it was not there):
    numba unpickles the index files its cache holds, so a folder in the shared temporary
    directory that another user made, or can write in, would run their code in this
    process."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        found = os.lstat(path)
    except OSError as exc:
        return f"cannot be made ({exc.strerror})"
    if not stat.S_ISDIR(found.st_mode):
        return "is not a directory (a link or a file)"
    if not hasattr(os, "getuid"):  # Windows: the temporary directory is the user's own,
        return None  # and the mode bits say nothing of who else may write
    if found.st_uid != os.getuid():
        return "belongs to another user"
    if found.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "can be written by other users (an earlier asofgpu may have made it so: remove it)"
    return None


def _callers_level() -> int:
    """The ``stacklevel`` of the innermost frame outside asofgpu, counted from the frame that
    calls this function's caller's ``warnings.warn``: a warning that belongs to the line of
    the user's that made asofgpu build its kernels."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame, level = sys._getframe(2), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level


UNCACHED_BECAUSE: str | None = None  # why the last kernel built had no cache, if one had none
# The cache's last resort, one per user (a shared one could hold another user's files).
FALLBACK_CACHE = os.path.join(
    tempfile.gettempdir(),
    f"asofgpu-numba-cache-{os.getuid()}" if hasattr(os, "getuid") else "asofgpu-numba-cache",
)


def cache_dir() -> str | None:
    """Where numba keeps the CPU kernels' machine code, as it chose for one of them
    (``kernels/take.py``'s): NUMBA_CACHE_DIR when set, else the kernels' own ``__pycache__``,
    else numba's user-wide directory, else ``njit_cached``'s fallback; None when nothing can
    be cached."""
    return getattr(cpu_take().check_map._cache, "_cache_path", None)


@functools.cache
def cpu_probe_all(is_float: bool, parallel: bool):
    import numba

    # Inlined: a call per row that passes the Right's arrays counts references to each (2,000
    # shuffled rows: 0.26 ms called, 0.21 inlined).
    probe_row = probe.build(cached_njit(inline="always"), is_float, numba.uint64)
    return cached_njit(parallel=parallel)(
        bind(_probe_all, prange=numba.prange if parallel else range, probe_row=probe_row)
    )


@functools.cache
def cpu_cursor_probe(is_float: bool, parallel: bool):
    # Inlined helpers: numba counts references to each array argument of a call between
    # compiled functions, which made a 1M-row prepared probe 0.12 s instead of 0.08 s.
    # (The scan gains nothing from it, and inlining costs compile time.)
    from .._intrinsics import prefetch

    return _build_walk(cursor, is_float, parallel, prefetch, inline="always")


@functools.cache
def cpu_stream_probe(is_float: bool, parallel: bool):
    return _build_walk(stream, is_float, parallel, inline="always")
