"""One preparation of an as-of join's right side for all the left chunks streamed against it.

cudf-polars' streaming executor runs ``AsofJoin`` through its generic actor
(``cudf_polars/streaming/actor_graph/nodes.py``, ``default_node_multi``): ``do_evaluate``
once per left chunk, each time with the right side's one chunk (``_streaming`` repartitions
the right side into one). Each call gets that chunk as a new ``DataFrame`` over new pylibcudf
columns: before every call the chunk is moved into a new ``TableChunk``, whose
``table_view()`` wraps the same buffers anew. So no Python object of the right data lives
from one call to the next, and there is none to key a weak cache on.

What does live that long is the lowered node, made for one query: ``_streaming`` gives it a
``ReusedRightSide``, which keeps one preparation, made at the first call and reused while the
key is the same (the right data's stream and buffers, and what the preparation reads of
them); another key replaces it. It goes with the lowered plan when the query ends. The
in-memory executor's node has none: it joins one left side with each right side.
"""

from __future__ import annotations

import threading


class ReusedRightSide:
    """The one preparation a lowered node keeps of its right side.

    The streaming executor calls ``do_evaluate`` on a pool of threads, one call of a node
    after another (``default_node_multi`` awaits each): the lock is there should calls
    overlap, so that one thread prepares while another asking for the same key waits.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._key = None
        self._prepared = None

    def get(self, key, prepare):
        """The preparation for ``key``: the one kept, or ``prepare()``'s, kept instead."""
        with self._lock:
            if self._prepared is None or key != self._key:
                self._prepared = None  # the old one's device memory goes before the new is made
                self._prepared = prepare()
                self._key = key
            return self._prepared


def right_data(frame) -> tuple:
    """What tells one right chunk from another: its stream, and each column's buffers (by
    address), offset, length and null count.

    An address can come back for other data once its memory is freed; that cannot mislead
    here. A lowered node has one right chunk for the whole query, and its key is compared only
    with its own: a key that matches is that chunk, one that does not is the same rows moved
    (spilled and made available again), prepared anew.
    """
    return (frame.stream, tuple(_buffers(column.obj) for column in frame.columns))


def _buffers(column) -> tuple:
    data, mask = column.data(), column.null_mask()
    return (
        None if data is None else data.ptr,
        None if mask is None else mask.ptr,
        column.offset(),
        column.size(),
        column.null_count(),
        tuple(_buffers(child) for child in column.children()),
    )
