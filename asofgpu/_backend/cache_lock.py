"""numba's on-disk cache, made safe for several processes compiling at once.

numba keeps one index file per function (signature -> data file) beside numbered data files.
Its ``IndexDataCacheFile.save`` reads the index, takes the first number the index does not
use, writes the index back and then the data, all without a lock. Two processes that compile
two signatures of one function at once (``asofgpu warm``'s workers, pytest-xdist, Dask's
process workers on a new cache) can both take number 1: the index then names one signature's
file holding the other's machine code, and every later process that loads it fails ("can't
unbox array from PyObject") or worse. ``guard`` makes a dispatcher's cache take an exclusive
``fcntl.flock`` on one lock file in the cache's directory around each save and each load
(a load reads the index, then the file it names; a save in between could replace that file).
The lock is held for the file reads and writes only, never while compiling.

Where no lock can be taken (no ``fcntl``, as on Windows; a directory where the lock file can
be neither created nor opened; a file system without ``flock``), the cache behaves as numba's.

>>> from asofgpu._backend.jit import cpu_take  # njit_cached guards every kernel
>>> type(cpu_take().check_map._cache._cache_file).__name__
'LockedCacheFile'
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading

from numba.core.caching import IndexDataCacheFile

from . import cache_prune

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

# One lock for a whole cache directory: saves and loads take milliseconds.
LOCK_NAME = "asofgpu-cache.lock"


class _Locked:
    """Each save and load of an index-and-data cache file under its directory's lock; the
    first save of a process into a directory also removes kernels of earlier sources
    (``cache_prune``)."""

    def save(self, key, data):
        with locked(self._cache_path):
            super().save(key, data)
            cache_prune.prune(self._cache_path, self._index_name)

    def load(self, key):
        with locked(self._cache_path):
            return super().load(key)


class LockedCacheFile(_Locked, IndexDataCacheFile):
    """numba's index and data files, each save and load under the directory's lock."""


def guard(dispatcher):
    """``dispatcher`` (``numba.njit(cache=True)``'s or ``numba.cuda.jit(cache=True)``'s),
    its cache's files locked; returned.

    A dispatcher without numba's usual cache files (caching off, or a numba whose internals
    moved: tests/test_cache_lock.py checks the installed one) is returned as it is."""
    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    locked_type = _locked_type(type(cache_file))
    if locked_type is not None:
        # The instance keeps its paths and stamp; only its save and load change.
        cache_file.__class__ = locked_type
    return dispatcher


def _locked_type(cache_type: type):
    """The locked subclass of a cache's file class: ``LockedCacheFile`` for numba's,
    ``LockedCudaCacheFile`` for numba-cuda's own copy of it (the same index and data files,
    the same race); None for any other class."""
    if cache_type is IndexDataCacheFile:
        return LockedCacheFile
    if cache_type is type(None):  # no cache: numba-cuda need not be imported to say so
        return None
    cuda_type = _cuda_cache_file_type()
    if cuda_type is not None and cache_type is cuda_type:
        return _locked_cuda_type(cuda_type)
    return None


def _cuda_cache_file_type():
    """numba-cuda's ``IndexDataCacheFile`` (None without numba-cuda, or where it moved)."""
    try:
        from numba.cuda.core.caching import IndexDataCacheFile as cuda_type
    except ImportError:
        return None
    return cuda_type


@functools.cache
def _locked_cuda_type(cuda_type: type) -> type:
    return type("LockedCudaCacheFile", (_Locked, cuda_type), {})


# The descriptors of the locks held now. A child forked meanwhile inherits them, and a flock
# is released only when every descriptor of its open file is closed: the child closes its
# copies at once, or every other process would wait on the lock until the child exited.
# (The thread that forked goes on in the child, and closes its own as it leaves the block.)
_HELD: dict[int, int] = {}  # descriptor -> the thread holding it


@contextlib.contextmanager
def locked(directory: str):
    """Hold the exclusive lock of ``directory``'s cache while the block runs."""
    fd = _open_lock(directory)
    try:
        if fd is not None:
            _HELD[fd] = threading.get_ident()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except OSError:  # e.g. ENOLCK on a network file system
                pass
        yield
    finally:
        if fd is not None:
            _HELD.pop(fd, None)
            os.close(fd)  # releases the lock


def _close_inherited() -> None:
    here = threading.get_ident()
    for fd, holder in list(_HELD.items()):
        if holder != here:  # a thread the child does not have
            with contextlib.suppress(OSError):
                os.close(fd)
            del _HELD[fd]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_inherited)


def _open_lock(directory: str) -> int | None:
    """The lock file's descriptor, or None where there is none to take. flock works on a
    read-only descriptor too: a cache directory another user created stays lockable."""
    if fcntl is None:
        return None
    path = os.path.join(directory, LOCK_NAME)
    for flags in (os.O_RDWR | os.O_CREAT, os.O_RDONLY):
        try:
            return os.open(path, flags, 0o666)
        except OSError:
            continue
    return None
