"""Large host arrays lent from blocks that are kept, and lent again once their result is dropped.

Arrow's default pool (mimalloc) hands pages freed some time before back to the system at its
next allocation, so the first join after an idle spell faults its arrays in again: a prepared
probe + gather of 1M trades took 16 ms back to back and 26-28 ms after 2 s idle
(``bench/idle.py``). This pool keeps the blocks of the most recent large arrays, up to a limit
of bytes, and lends a block again once nothing refers to the array made on it: its pages stay
written, whatever the allocator does. It is the ``cpu`` backend's ``host_empty``.

>>> import numpy as np
>>> pool = HostPool(limit=64 << 20)
>>> a = pool.empty(1 << 18, np.float64)          # 2 MiB: lent from a new block
>>> pool.total_bytes(), pool.free_bytes()
(2097152, 0)
>>> del a                                         # the block is free, and kept
>>> pool.free_bytes()
2097152
>>> b = pool.empty(1 << 19, np.int32)             # the same 2 MiB block, lent again
>>> pool.total_bytes()
2097152
"""

from __future__ import annotations

import os
import threading
import weakref

import numpy as np
import pyarrow as pa

#: Arrays smaller than this come straight from Arrow's pool, whose small pages stay put.
MIN_BYTES = 1 << 20
#: The pool's limit unless ``set_limit`` says otherwise: a few probes' outputs at 1M rows.
DEFAULT_LIMIT = 256 << 20
#: A free block is lent for an array it fits with at most this share of it left unused.
SLACK = 4


class _Lease:
    """The owner of one array lent from a block: numpy makes it the array's base, so every
    view of the array, and every Arrow buffer made from it, keeps it alive. Its weak reference
    in the pool goes dead exactly when the last of them is dropped."""

    __slots__ = ("block", "__array_interface__", "__weakref__")

    def __init__(self, block: pa.Buffer, n: int, dtype: np.dtype):
        self.block = block  # keeps the memory alive even once the pool lets go of the block
        self.__array_interface__ = {
            "data": (block.address, False), "shape": (n,), "typestr": dtype.str, "version": 3,
        }


def _fresh(n: int, dtype: np.dtype) -> np.ndarray:
    return np.frombuffer(pa.allocate_buffer(n * dtype.itemsize), dtype=dtype)


class HostPool:
    """Lends large host arrays from blocks it keeps, at most ``limit`` bytes of them.

    An array is lent from the smallest free block that fits it (with at most a quarter
    unused), else from a new block. To make room for a new one the pool lets go of free blocks,
    oldest first, then of lent ones, which become ordinary memory freed with their array. An
    array larger than the limit is not pooled. Thread-safe.
    """

    def __init__(self, limit: int = DEFAULT_LIMIT):
        self._blocks: list[list] = []  # [block, weak reference to its lease], oldest first
        self._limit = _checked_limit(limit)
        self._lock = threading.Lock()

    # ---- lending
    def empty(self, n: int, dtype) -> np.ndarray:
        """An uninitialised array of ``n`` values of ``dtype``, like ``numpy.empty``."""
        dtype = np.dtype(dtype)
        n = int(n)
        nbytes = n * dtype.itemsize
        if nbytes < MIN_BYTES or nbytes > self._limit:
            return _fresh(n, dtype)
        with self._lock:
            entry = self._free_fit(nbytes) or self._new_block(nbytes)
            lease = _Lease(entry[0], n, dtype)
            entry[1] = weakref.ref(lease)
        return np.asarray(lease)

    def _free_fit(self, nbytes: int) -> list | None:
        fits = [e for e in self._blocks
                if _is_free(e) and nbytes <= e[0].size <= nbytes + nbytes // SLACK]
        if not fits:
            return None
        entry = min(fits, key=lambda e: e[0].size)
        self._blocks.remove(entry)
        self._blocks.append(entry)  # the most recently lent go last, and are let go of last
        return entry

    def _new_block(self, nbytes: int) -> list:
        self._shrink_to(self._limit - nbytes)
        entry = [pa.allocate_buffer(nbytes), None]
        self._blocks.append(entry)
        return entry

    def _shrink_to(self, nbytes: int) -> None:
        """Let go of blocks, free ones first and oldest first, until at most ``nbytes`` are
        held. A lent block let go of stays with its array, and is freed with it."""
        held = self._held()
        for entry in sorted(self._blocks, key=lambda e: not _is_free(e)):  # stable: by age
            if held <= nbytes:
                break
            self._blocks.remove(entry)
            held -= entry[0].size

    def _held(self) -> int:
        return sum(e[0].size for e in self._blocks)

    # ---- the limit and the counts, named as cupy's memory pools name them
    def get_limit(self) -> int:
        """The most bytes of blocks the pool keeps."""
        return self._limit

    def set_limit(self, size: int) -> None:
        """Keep at most ``size`` bytes of blocks; 0 turns pooling off. Blocks over the new
        limit are let go of at once, free ones first.

        >>> HostPool().set_limit(-1)
        Traceback (most recent call last):
        ...
        ValueError: set_limit: size must be a whole number of bytes >= 0, got -1
        """
        size = _checked_limit(size)
        with self._lock:
            self._limit = size
            self._shrink_to(size)

    def total_bytes(self) -> int:
        """Bytes of all blocks the pool holds, lent or free."""
        with self._lock:
            return self._held()

    def free_bytes(self) -> int:
        """Bytes of the blocks no array refers to any more: memory kept for the next join."""
        with self._lock:
            return sum(e[0].size for e in self._blocks if _is_free(e))

    def free_all_blocks(self) -> None:
        """Hand the free blocks back to Arrow's pool now (lent ones stay with their arrays)."""
        with self._lock:
            self._blocks = [e for e in self._blocks if not _is_free(e)]

    def _after_fork(self) -> None:
        self._lock = threading.Lock()  # a lock another thread held at the fork stays held


def _is_free(entry: list) -> bool:
    return entry[1] is None or entry[1]() is None


def _checked_limit(size) -> int:
    msg = f"set_limit: size must be a whole number of bytes >= 0, got {size!r}"
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise TypeError(msg)
    if size < 0:
        raise ValueError(msg)
    return int(size)


#: The pool the ``cpu`` backend takes its large arrays from; ``asofgpu.host_pool``.
HOST_POOL = HostPool()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=HOST_POOL._after_fork)
