"""An iterator run ahead on a thread of its own: RIGHT's windows read while one is joined,
LEFT's next files while one is joined (``_job``, ``_left``)."""

from __future__ import annotations

import queue
import threading


class Prefetch:
    """An iterator run ``depth`` items ahead on a thread of its own (a context manager: on
    the way out it stops the thread)."""

    DEPTH = 2

    def __init__(self, iterator, depth: int = DEPTH):
        self._queue: queue.Queue = queue.Queue(depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(iterator,), daemon=True, name="asofgpu-prefetch"
        )
        self._thread.start()

    def _run(self, iterator) -> None:
        try:
            for item in iterator:
                if not self._put((True, item)):
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            self._put((False, exc))
            return
        self._put((False, None))

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self):
        while True:
            ok, item = self._queue.get()
            if ok:
                yield item
            elif item is None:
                return
            else:
                raise item

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()
        return False
