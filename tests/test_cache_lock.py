"""numba's on-disk cache under several writers at once (asofgpu/_backend/cache_lock.py)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
import threading

import pytest

pytest.importorskip("numba")

from asofgpu._backend import cache_lock  # noqa: E402
from asofgpu._backend.jit import cpu_take  # noqa: E402

needs_flock = pytest.mark.skipif(cache_lock.fcntl is None, reason="no fcntl.flock here")


def _cache_file(directory, cls=cache_lock.LockedCacheFile):
    """One function's index and data files in ``directory``, as numba's Cache makes them."""
    return cls(cache_path=str(directory), filename_base="kernel-1.py311", source_stamp=(1.0, 2))


@needs_flock
def test_two_writers_of_one_function_keep_both_signatures(tmp_path):
    # numba's save reads the index, takes the first free data number and writes the index
    # back. Here the second writer reads the index while the first is about to write it (as
    # two processes compiling two signatures can): unlocked, both take number 1, one entry is
    # lost and the index can name a file holding the other signature's code. Locked, the
    # second waits for the first (whose wait below then times out), and takes number 2.
    first, second = _cache_file(tmp_path), _cache_file(tmp_path)
    first_saving, second_read = threading.Event(), threading.Event()
    save_index, load_index = first._save_index, second._load_index

    def first_save_index(overloads):
        first_saving.set()
        second_read.wait(timeout=0.5)
        save_index(overloads)

    def second_load_index():
        overloads = load_index()
        second_read.set()
        return overloads

    first._save_index, second._load_index = first_save_index, second_load_index

    def second_saves():
        first_saving.wait(timeout=5)
        second.save("signature b", "code for b")

    writer = threading.Thread(target=second_saves)
    writer.start()
    first.save("signature a", "code for a")
    writer.join(timeout=5)
    assert not writer.is_alive()

    reader = _cache_file(tmp_path)
    assert reader.load("signature a") == "code for a"
    assert reader.load("signature b") == "code for b"
    assert sorted(reader._load_index().values()) == ["kernel-1.py311.1.nbc", "kernel-1.py311.2.nbc"]


@needs_flock
def test_a_load_waits_for_a_save_in_progress(tmp_path):
    _cache_file(tmp_path).save("signature", "old code")
    done = threading.Event()

    def load():
        assert _cache_file(tmp_path).load("signature") == "new code"
        done.set()

    with cache_lock.locked(str(tmp_path)):  # a writer between its index and its data
        reader = threading.Thread(target=load)
        reader.start()
        assert not done.wait(timeout=0.2)
        _cache_file(tmp_path, cls=cache_lock.IndexDataCacheFile).save("signature", "new code")
    reader.join(timeout=5)
    assert done.is_set()
    assert os.path.exists(tmp_path / cache_lock.LOCK_NAME)


@needs_flock
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_while_another_thread_holds_the_lock_does_not_keep_it(tmp_path):
    """A child forked while a thread held the lock inherited its descriptor, and a flock is
    released only when every descriptor of its file is closed: every other process then
    waited for the child to exit before its next kernel load or save."""
    import fcntl
    import signal

    inside, leave = threading.Event(), threading.Event()

    def hold():
        with cache_lock.locked(str(tmp_path)):
            inside.set()
            leave.wait(30)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert inside.wait(10)
    done_reading, done_writing = os.pipe()
    ready_reading, ready_writing = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child lives on, as a worker would, until the parent has looked
        signal.alarm(20)
        os.write(ready_writing, b"x")  # (its fork handlers have run by now)
        os.read(done_reading, 1)
        os._exit(0)
    try:
        os.read(ready_reading, 1)
        leave.set()
        holder.join(10)
        probe = os.open(tmp_path / cache_lock.LOCK_NAME, os.O_RDONLY)
        try:  # the holder released it: free now, with the child still alive
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(probe)
    finally:
        os.write(done_writing, b"x")
        os.waitpid(pid, 0)


@needs_flock
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_inside_the_lock_leaves_it_as_the_parent_does(tmp_path):
    """The thread that forked goes on in the child: its descriptor is its own to close as
    it leaves the block (closed at the fork instead, the block's exit closed it again, or
    whatever the child had opened on its number since)."""
    import signal

    with cache_lock.locked(str(tmp_path)):
        pid = os.fork()
        if pid == 0:
            signal.alarm(20)
            code = 1
            try:
                reading, writing = os.pipe()  # would take the number of a closed descriptor
            except BaseException:
                os._exit(code)
    if pid == 0:
        try:
            os.write(writing, b"x")  # still open: the block closed only its own
            code = 0 if os.read(reading, 1) == b"x" else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


# Each process compiles one signature of one cached function, all at the same moment.
_COMPILE_ONE = textwrap.dedent("""
    import sys, time
    import numpy as np
    from asofgpu._backend.jit import njit_cached
    sys.path.insert(0, sys.argv[1])
    import summing

    total = njit_cached(summing.total)
    start = float(sys.argv[3])
    while time.time() < start:
        pass
    assert total(np.arange(5, dtype=sys.argv[2])) == 10
""")

_LOAD_ALL = textwrap.dedent("""
    import sys
    import numpy as np
    from asofgpu._backend.jit import njit_cached
    sys.path.insert(0, sys.argv[1])
    import summing

    total = njit_cached(summing.total)
    for dtype in sys.argv[2:]:
        assert total(np.arange(5, dtype=dtype)) == 10, dtype
    print(len(total.stats.cache_hits), len(total.stats.cache_misses))
""")


@pytest.mark.slow
@needs_flock
def test_processes_compiling_at_once_leave_every_signature_loadable(tmp_path):
    # Measured without the lock: of four rounds like this one, all four lost entries (5 to 9
    # of 10 loadable) and one loaded another signature's code (a wrong sum).
    import time

    (tmp_path / "summing.py").write_text(
        "def total(a):\n    s = a[0] - a[0]\n    for x in a:\n        s += x\n    return s\n"
    )
    dtypes = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
    dtypes += ["float32", "float64"]
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    start = str(time.time() + 5)  # after every process has imported numba
    compiling = [
        subprocess.Popen([sys.executable, "-c", _COMPILE_ONE, str(tmp_path), dtype, start], env=env)
        for dtype in dtypes
    ]
    assert [p.wait(timeout=120) for p in compiling] == [0] * len(dtypes)
    loaded = subprocess.run(
        [sys.executable, "-c", _LOAD_ALL, str(tmp_path), *dtypes],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert loaded.stdout.split() == [str(len(dtypes)), "0"]


def test_the_kernels_caches_are_locked():
    # guard returns a dispatcher unchanged when numba's internals are not what it expects:
    # this fails when an upgrade of numba moves them.
    cache = cpu_take().check_map._cache
    assert type(cache._cache_file) is cache_lock.LockedCacheFile


def _kernel_files(folder, digest: str, written: float) -> list[str]:
    """A cached kernel's index and data files under ``digest``, last written at ``written``."""
    names = [f"probe.walk_{digest}_int_parallel1-12.py311.nbi"]
    names.append(names[0].replace(".nbi", ".1.nbc"))
    for name in names:
        (folder / name).write_bytes(b"old")
        os.utime(folder / name, (written, written))
    return names


def test_the_first_save_of_a_process_removes_kernels_of_earlier_sources(tmp_path):
    """A save under digest c removes a's files and keeps b's, the last written before it
    (an upgrade and back), its own, and whatever is not a kernel's; later saves of the
    process into the folder leave what comes after alone."""
    _kernel_files(tmp_path, "aaaaaaaaaaaa", 1000.0)
    b = _kernel_files(tmp_path, "bbbbbbbbbbbb", 3000.0)
    d = _kernel_files(tmp_path, "dddddddddddd", 2000.0)
    others = ["probe.cpython-311.pyc", cache_lock.LOCK_NAME, "mine.f-3.py311.nbi"]
    for name in others:
        (tmp_path / name).write_bytes(b"")
    base = "probe.walk_cccccccccccc_int_parallel1-12.py311"
    saver = cache_lock.LockedCacheFile(str(tmp_path), base, (1.0, 2))
    saver.save("signature", "code")
    saved = [f"{base}.nbi", f"{base}.1.nbc"]
    assert sorted(os.listdir(tmp_path)) == sorted(b + saved + others)
    assert saver.load("signature") == "code"
    again = _kernel_files(tmp_path, "aaaaaaaaaaaa", 1000.0)
    cache_lock.LockedCacheFile(str(tmp_path), base, (1.0, 2)).save("signature 2", "code 2")
    assert sorted(os.listdir(tmp_path)) == sorted(b + saved + others + again + [f"{base}.2.nbc"])
    assert d[0] not in os.listdir(tmp_path)


def test_kernels_of_one_earlier_source_are_kept(tmp_path):
    kept = _kernel_files(tmp_path, "aaaaaaaaaaaa", 1000.0)
    base = "probe.walk_cccccccccccc_int_parallel1-12.py311"
    cache_lock.LockedCacheFile(str(tmp_path), base, (1.0, 2)).save("signature", "code")
    assert set(kept) <= set(os.listdir(tmp_path))


def test_no_lock_where_none_can_be_taken(tmp_path):
    missing = tmp_path / "not made yet"
    with cache_lock.locked(str(missing)):  # a load before the directory exists
        pass
    assert not missing.exists()
    assert _cache_file(missing).load("signature") is None


def test_a_dispatcher_without_a_cache_is_returned_as_it_is():
    import numba

    def plus_one(x):
        return x + 1

    dispatcher = numba.njit(plus_one)
    assert cache_lock.guard(dispatcher) is dispatcher
    assert dispatcher(1) == 2


# ---- numba-cuda's copy of the cache (the GPU's kernels, cached since the first GPU runs)


def _cuda_kernels():
    """The real (not simulated) CUDA kernels as the backend makes them: built without a GPU;
    compiled only at a launch."""
    if importlib.util.find_spec("numba_cuda") is None:
        pytest.skip("needs numba-cuda")
    from asofgpu._backend import cuda

    if cuda.cudasim_enabled():
        pytest.skip("the simulator's kernels have no cache")
    return {
        "probe_int": cuda.probe_kernel(False, False),
        "probe_float": cuda.probe_kernel(True, False),
        **{f"window_{k}_int": v for k, v in cuda.window_kernels(False, False)._asdict().items()},
        **{f"window_{k}_float": v for k, v in cuda.window_kernels(True, False)._asdict().items()},
        "calendar": cuda.calendar_kernel(False),
    }


def test_the_gpus_kernels_are_cached_locked_and_named_apart():
    # A kernel's cache is named by its qualified name: each build (float or integer
    # comparisons) needs its own, and the kernel sources' digest retires a stale one.
    from asofgpu._backend.jit import _source_digest

    kernels = _cuda_kernels()
    names = {name: k.py_func.__qualname__ for name, k in kernels.items()}
    assert len(set(names.values())) == len(names)
    for name, qualname in names.items():
        assert _source_digest() in qualname, name
        assert qualname.endswith(("_int", "_float") if "_" in name else _source_digest()), name
        cache_file = kernels[name]._cache._cache_file
        assert type(cache_file).__name__ == "LockedCudaCacheFile", name


@needs_flock
def test_a_load_from_the_gpus_cache_waits_for_a_save_in_progress(tmp_path):
    locked_type = type(_cuda_kernels()["probe_int"]._cache._cache_file)  # (or skips)
    from numba.cuda.core.caching import IndexDataCacheFile

    _cache_file(tmp_path, cls=locked_type).save("signature", "old code")
    done = threading.Event()

    def load():
        assert _cache_file(tmp_path, cls=locked_type).load("signature") == "new code"
        done.set()

    with cache_lock.locked(str(tmp_path)):
        reader = threading.Thread(target=load)
        reader.start()
        assert not done.wait(timeout=0.2)
        _cache_file(tmp_path, cls=IndexDataCacheFile).save("signature", "new code")
    reader.join(timeout=5)
    assert done.is_set()
