"""Gathers on the host, on all cores (``kernels/take.py``): the gather map checked, then
fixed-width columns taken by it, read where they lie (one buffer, or runs of chunks), and
text and binary columns. ``asofgpu.gather`` calls them for large maps.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa

from ..kernels import take as kernel_take
from . import walks
from .base import host_empty, read_only
from .jit import PARALLEL_LAUNCH, cpu_take


def check_map(gmap: np.ndarray, n_rows: int):
    """(valid, missing, bad) of a host gather map over ``n_rows`` right rows, on all cores:
    which entries are rows, how many are NO_MATCH, how many are neither."""
    check = cpu_take().check_map
    valid = host_empty(len(gmap), np.bool_)
    with PARALLEL_LAUNCH:
        missing, bad = check(read_only(gmap), n_rows, valid)
    return valid, int(missing), int(bad)


def take_fixed(columns: list[np.ndarray], gmap: np.ndarray, valid: np.ndarray) -> list:
    """``values[gmap]`` of each of ``columns`` on all cores, 0 where ``valid`` is False, each
    in a ``pyarrow.Buffer``. Columns of one width are taken four at a time, then two, then
    one (their values' bits: it is a copy): each pass reads the map once, and the random
    reads of its columns overlap.

    The memory is ``asofgpu.host_pool``'s (``host_empty``): a service that gathers again and
    again writes into pages it already has (2 ms of an 8 MB column's 6 ms were page faults).
    """
    kernels = cpu_take()
    # read-only, whatever their source: one compiled take (``base.read_only``)
    bits = [read_only(values.view(f"u{values.itemsize}")) for values in columns]
    gmap, valid = read_only(gmap), read_only(valid)
    outs = [host_empty(len(gmap), values.dtype) for values in bits]
    by_width = {}
    for k, values in enumerate(bits):
        by_width.setdefault(values.itemsize, []).append(k)
    with PARALLEL_LAUNCH:
        for ks in by_width.values():
            while len(ks) >= 4:
                a, b, c, d = ks[:4]
                kernels.take_fixed_quad(
                    bits[a],
                    bits[b],
                    bits[c],
                    bits[d],
                    gmap,
                    valid,
                    outs[a],
                    outs[b],
                    outs[c],
                    outs[d],
                )
                ks = ks[4:]
            if len(ks) >= 2:
                kernels.take_fixed_pair(
                    bits[ks[0]], bits[ks[1]], gmap, valid, outs[ks[0]], outs[ks[1]]
                )
                ks = ks[2:]
            if ks:
                kernels.take_fixed(bits[ks[0]], gmap, valid, outs[ks[0]])
    return [pa.py_buffer(out) for out in outs]


# The most columns one launch of kernels/take.py ``take_chunked`` takes.
PASS_COLUMNS = kernel_take.COLUMNS


class ChunkedPass(NamedTuple):
    """One launch of kernels/take.py ``take_chunked``: up to four columns of one width and
    chunk layout, their chunks' ``addresses`` (a row a column), and how their rows are found
    (``starts``; ``blocks``, ``shift`` and ``steps`` of ``chunk_blocks``)."""

    columns: list[int]
    addresses: np.ndarray
    starts: np.ndarray
    blocks: np.ndarray
    shift: np.uint64
    steps: int
    like: np.ndarray


def chunked_passes(columns: list[tuple[int, list[int], list[int]]]) -> list[ChunkedPass]:
    """How ``take_chunked`` takes ``columns``: each is (its values' width in bytes, the
    address of each non-empty chunk's first value, each one's length). Columns of the same
    chunk lengths share one table of blocks (``chunk_blocks``); those of one width among
    them are taken up to ``PASS_COLUMNS`` (four) in a pass, which finds each entry's chunk
    once for all of them.
    It depends on the columns alone: a caller that gathers from the same columns again may
    keep it (while it keeps the chunks alive)."""
    layouts: dict[tuple, list[int]] = {}
    for k, (_, _, lengths) in enumerate(columns):
        layouts.setdefault(tuple(lengths), []).append(k)
    passes = []
    for lengths, ks in layouts.items():
        starts = np.cumsum((0, *lengths), dtype=np.uint64)
        blocks, shift, steps = chunk_blocks(starts)
        by_width: dict[int, list[int]] = {}
        for k in ks:
            by_width.setdefault(columns[k][0], []).append(k)
        for width, same in by_width.items():
            like = np.empty(0, np.dtype(f"u{width}"))
            for at in range(0, len(same), PASS_COLUMNS):
                taken = same[at : at + PASS_COLUMNS]
                addresses = np.array([columns[k][1] for k in taken], dtype=np.uint64)
                passes.append(
                    ChunkedPass(
                        taken,
                        addresses.reshape(len(taken), len(lengths)),
                        starts,
                        blocks,
                        shift,
                        steps,
                        like,
                    )
                )
    return passes


def take_chunked(passes: list[ChunkedPass], gmap: np.ndarray, valid: np.ndarray) -> list:
    """``take_fixed`` of columns given as their chunks (``chunked_passes``), read where they
    lie (kernels/take.py ``take_chunked``): a table read from parquet comes in a chunk per
    row group, and copying them into one would touch as much fresh memory as the columns
    hold. The caller keeps the chunks alive. A buffer a column, in the columns' order."""
    kernels = cpu_take()
    gmap, valid = read_only(gmap), read_only(valid)
    outs = {k: host_empty(len(gmap), one.like.dtype) for one in passes for k in one.columns}
    with PARALLEL_LAUNCH:
        for one in passes:
            targets = [outs[k] for k in one.columns]
            targets += [one.like] * (PASS_COLUMNS - len(targets))  # untouched
            kernels.take_chunked[len(one.columns) - 1](
                one.addresses,
                one.starts,
                one.blocks,
                one.shift,
                one.steps,
                one.like,
                gmap,
                valid,
                *targets,
            )
    return [pa.py_buffer(outs[k]) for k in sorted(outs)]


def take_text(
    offsets: np.ndarray, data: np.ndarray, gmap: np.ndarray, valid: np.ndarray, most: int
):
    """(offsets, data) buffers of the text (or binary) rows ``gmap`` picks, empty where
    ``valid`` is False, on all cores; the offsets of ``offsets``' type (int32 or int64). None
    when the rows' bytes are more than ``most`` (the caller then takes them otherwise).
    ``offsets`` has one entry a row and one more; ``data`` is the bytes they point into."""
    kernels = cpu_take()
    offsets, data, gmap, valid = (read_only(a) for a in (offsets, data, gmap, valid))
    out_offsets = host_empty(len(gmap) + 1, offsets.dtype)
    out_offsets[0] = 0
    with PARALLEL_LAUNCH:
        kernels.text_lengths(offsets, gmap, valid, out_offsets)
    total = int(out_offsets.sum(dtype=np.int64))
    if total > most:
        return None
    np.cumsum(out_offsets, out=out_offsets)
    out_data = host_empty(total, np.uint8)
    with PARALLEL_LAUNCH:
        kernels.take_text(offsets, data, gmap, valid, out_offsets, out_data)
    return pa.py_buffer(out_offsets), pa.py_buffer(out_data)


def take_views(views: np.ndarray, gmap: np.ndarray, valid: np.ndarray) -> pa.Buffer:
    """The views buffer of the view-text rows ``gmap`` picks (``views``: one row of two
    uint64 words each), an empty string's view where ``valid`` is False, on all cores."""
    out = host_empty(2 * len(gmap), np.uint64).reshape(-1, 2)
    with PARALLEL_LAUNCH:
        cpu_take().take_views(read_only(views), read_only(gmap), read_only(valid), out)
    return pa.py_buffer(out)


def chunk_blocks(starts: np.ndarray):
    """(blocks, shift, steps) for kernels/take.py ``take_chunked``, whose chunk ``c`` holds
    rows ``starts[c]`` to ``starts[c + 1]`` (``starts`` ends with the number of rows):
    the chunk holding the first row of each block of ``1 << shift`` rows, and the most chunk
    ends a block crosses, which the kernel steps past without a branch (a row's test is
    not predictable, and a mispredicted branch stops the reads that overlap). Blocks are as
    long as the shortest chunk allows (one step), but there are at most
    ``walks.THRESHOLDS.chunk_blocks``.

    >>> blocks, shift, steps = chunk_blocks(np.array([0, 5, 9, 20], dtype=np.uint64))
    >>> blocks.tolist(), int(shift), steps
    ([0, 0, 1, 2, 2], 2, 1)
    """
    n_rows = int(starts[-1])
    most = walks.THRESHOLDS.chunk_blocks
    shortest = int(np.diff(starts).min(initial=n_rows))
    fewest = (max(n_rows, 1) - 1).bit_length() - (most.bit_length() - 1)
    shift = max(shortest.bit_length() - 1, fewest, 0)
    first_rows = np.arange(0, max(n_rows, 1), 1 << shift, dtype=np.uint64)
    blocks = np.searchsorted(starts, first_rows, side="right").astype(np.int64) - 1
    last_rows = np.minimum(first_rows + np.uint64((1 << shift) - 1), max(n_rows, 1) - 1)
    ends = np.searchsorted(starts, last_rows, side="right").astype(np.int64) - 1
    return blocks, np.uint64(shift), int((ends - blocks).max())
