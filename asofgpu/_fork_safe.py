"""A lock that a forked child does not inherit held by a thread it lacks.

A ``threading.Lock`` another thread held at a ``fork`` stays held in the child for ever: that
thread does not exist there (the child's first parallel join hung on numba's launch lock, and
its first pooled array on the host pool's). ``ForkSafeLock`` knows the thread that holds it,
and every one of them is made free in a forked child, unless the thread that forked holds it:
that thread goes on in the child, inside its ``with`` block, and releases it there.

>>> lock = ForkSafeLock()
>>> with lock:
...     lock.held_here(), lock.locked()
(True, True)
>>> lock.held_here(), lock.locked()
(False, False)
"""

from __future__ import annotations

import os
import threading
import weakref

_LOCKS: weakref.WeakSet = weakref.WeakSet()  # every lock, for the fork handler


class ForkSafeLock:
    """A non-reentrant lock (``with lock:``, or ``acquire`` and ``release``) that a forked
    child gets free unless its forking thread held it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._owner = None  # the thread that holds it
        _LOCKS.add(self)

    def acquire(self) -> None:
        self._lock.acquire()
        self._owner = threading.get_ident()

    def release(self) -> None:
        self._owner = None
        self._lock.release()

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def held_here(self) -> bool:
        """Whether the calling thread holds it (code that must not wait on itself asks)."""
        return self._owner == threading.get_ident()

    def _after_fork(self) -> None:
        """In the child: free, unless the thread that forked holds it (it goes on there)."""
        forked_inside = self.held_here()
        self._lock = threading.Lock()
        if forked_inside:
            self._lock.acquire()
        else:
            self._owner = None


def _after_fork_in_child() -> None:
    for lock in list(_LOCKS):
        lock._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
