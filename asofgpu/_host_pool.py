"""Large host arrays lent from blocks that are kept, and lent again once their result is dropped.

Arrow's default pool (mimalloc) hands pages freed some time before back to the system at its
next allocation, so the first join after an idle spell faults its arrays in again: a prepared
probe + gather of 1M trades took 15 ms back to back and 32 ms after 2 s idle
(``bench/idle.py --pool-mib 0``). This pool keeps the blocks of the most recent large arrays,
up to a limit of bytes, and lends a block again once nothing refers to the array made on it:
its pages stay written, whatever the allocator does. asofgpu's ``host_empty`` lends from it.

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

import weakref

import numpy as np
import pyarrow as pa

from ._fork_safe import ForkSafeLock

#: Arrays smaller than this come straight from Arrow's pool, whose small pages stay put.
MIN_BYTES = 1 << 20
#: The pool's limit unless ``set_limit`` says otherwise: a few probes' outputs at 1M rows.
DEFAULT_LIMIT = 256 << 20
#: A free block is lent for an array it exceeds by at most 1/SLACK of the array's bytes.
SLACK = 4


class _Lease:
    """The owner of one array lent from a block: numpy makes it the array's base, so every
    view of the array, and every Arrow buffer made from it, keeps it alive. Its weak reference
    in the pool goes dead exactly when the last of them is dropped."""

    __slots__ = ("_buffer", "__array_interface__", "__weakref__")

    def __init__(self, buffer: pa.Buffer, n: int, dtype: np.dtype):
        self._buffer = buffer  # keeps the memory alive even once the pool lets go of the block
        self.__array_interface__ = {
            "data": (buffer.address, False),
            "shape": (n,),
            "typestr": dtype.str,
            "descr": dtype.descr,
            "version": 3,
        }


class _Block:
    """A buffer the pool keeps, and the weak reference to the lease of the array lent from it
    (None: never lent)."""

    __slots__ = ("buffer", "lease")

    def __init__(self, buffer: pa.Buffer):
        self.buffer = buffer
        self.lease = None

    @property
    def free(self) -> bool:
        return self.lease is None or self.lease() is None


def lent(arr: np.ndarray) -> bool:
    """Whether ``arr`` views memory a pool lent: an array asofgpu made for itself, which no
    caller holds. (A numpy array's flags cannot tell: a read-only view of a caller's array
    changes with it, and so does an Arrow buffer that ``pa.array`` wrapped around it.)

    >>> lent(HostPool().empty(1 << 18, np.float64)[10:]), lent(np.zeros(8))
    (True, False)
    """
    base = arr
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, _Lease)


def _fresh(n: int, dtype: np.dtype) -> np.ndarray:
    return np.frombuffer(pa.allocate_buffer(n * dtype.itemsize), dtype=dtype)


class HostPool:
    """Lends large host arrays from blocks it keeps, at most ``limit`` bytes of them.

    An array is lent from the smallest free block that fits it (a quarter larger than the
    array at most), else from a new block. To make room for a new one the pool lets go of free
    blocks, oldest first, then of lent ones, which become ordinary memory freed with their
    array. An array larger than the limit is not pooled. Thread-safe. A call made from inside
    the pool's own code (by a finalizer that a garbage collection runs there) never waits for
    the lock: ``empty`` lends without the pool, the counts read without the lock, and
    ``set_limit`` and ``free_all_blocks`` raise.
    """

    def __init__(self, limit: int = DEFAULT_LIMIT):
        self._limit = _checked_limit(limit, "HostPool: limit")
        self._blocks: list[_Block] = []  # oldest first
        self._lock = ForkSafeLock()  # held by the thread inside the pool's code, if any

    # ---- lending
    def empty(self, n: int, dtype) -> np.ndarray:
        """An uninitialised array of ``n`` values of ``dtype``, like ``numpy.empty``."""
        dtype = np.dtype(dtype)
        if dtype.hasobject:
            msg = f"HostPool.empty: dtype must hold no Python objects, got {dtype}"
            raise TypeError(msg)
        n = int(n)
        nbytes = n * dtype.itemsize
        if nbytes < MIN_BYTES or not self._enter():
            return _fresh(n, dtype)
        try:
            if nbytes > self._limit:
                return _fresh(n, dtype)
            block = self._free_fit(nbytes) or self._new_block(nbytes)
            lease = _Lease(block.buffer, n, dtype)
            block.lease = weakref.ref(lease)
        finally:
            self._exit()
        return np.asarray(lease)

    def _free_fit(self, nbytes: int) -> _Block | None:
        fits = [
            b
            for b in self._blocks
            if b.free and nbytes <= b.buffer.size <= nbytes + nbytes // SLACK
        ]
        if not fits:
            return None
        block = min(fits, key=lambda b: b.buffer.size)
        self._blocks.remove(block)
        self._blocks.append(block)  # the most recently lent go last, and are let go of last
        return block

    def _new_block(self, nbytes: int) -> _Block:
        self._shrink_to(self._limit - nbytes)
        block = _Block(pa.allocate_buffer(nbytes))
        self._blocks.append(block)
        return block

    def _shrink_to(self, nbytes: int) -> None:
        """Let go of blocks, free ones first and oldest first, until at most ``nbytes`` are
        held. A lent block let go of stays with its array, and is freed with it."""
        held = self._held()
        for block in sorted(self._blocks, key=lambda b: not b.free):  # stable: by age
            if held <= nbytes:
                break
            self._blocks.remove(block)
            held -= block.buffer.size

    def _held(self) -> int:
        return sum(b.buffer.size for b in list(self._blocks))

    # ---- the lock, which a finalizer run inside the pool's code would wait on for ever
    def _enter(self) -> bool:
        """Take the lock; False (and no lock) where this thread holds it already: a call
        from inside the pool's code, which must neither wait nor lend a block meanwhile."""
        if self._lock.held_here():
            return False
        self._lock.acquire()
        return True

    def _exit(self) -> None:
        self._lock.release()

    def _locked(self, name: str) -> None:
        if not self._enter():
            msg = (
                f"HostPool.{name} was called from inside the pool (a finalizer run by a "
                "garbage collection there); call it outside"
            )
            raise RuntimeError(msg)

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
        size = _checked_limit(size, "set_limit: size")
        self._locked("set_limit")
        try:
            self._limit = size
            self._shrink_to(size)
        finally:
            self._exit()

    def total_bytes(self) -> int:
        """Bytes of all blocks the pool holds, lent or free."""
        return self._held()  # a copy of the list, read without the lock

    def free_bytes(self) -> int:
        """Bytes of the blocks no array refers to any more: memory kept for the next join."""
        return sum(b.buffer.size for b in list(self._blocks) if b.free)

    def used_bytes(self) -> int:
        """Bytes of the blocks lent to arrays still referred to."""
        return sum(b.buffer.size for b in list(self._blocks) if not b.free)

    def free_all_blocks(self) -> None:
        """Hand the free blocks back to Arrow's pool now (lent ones stay with their arrays)."""
        self._locked("free_all_blocks")
        try:
            self._blocks = [b for b in self._blocks if not b.free]
        finally:
            self._exit()


def _checked_limit(size, name: str) -> int:
    msg = f"{name} must be a whole number of bytes >= 0, got {size!r}"
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise TypeError(msg)
    if size < 0:
        raise ValueError(msg)
    return int(size)


#: The pool asofgpu takes its large host arrays from; ``asofgpu.host_pool``.
HOST_POOL = HostPool()
