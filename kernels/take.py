"""The CPU gather of payload columns by a gather map (NULLIFY), in parallel.

Arrow's ``take`` runs on one core; payload columns of numbers and times, and of text and
binary, are taken here instead, every row in parallel, and rows whose map entry is not a row
(``NO_MATCH``) become nulls. Text takes two passes: each row's length (then a prefix sum into
the output's offsets, by the caller), then each row's bytes copied to its place. Map entries index as ``uint64`` once checked (see the package's
note on indices): the bench's gather of four columns took 9.4 ms with signed entries, 5.5
with unsigned ones.
"""

from typing import NamedTuple

import numpy as np

prange = load_at = None  # filled in by build()
# How many columns a chunked gather takes in a pass: at most this many (``take_chunked``'s
# outputs ``a_out`` to ``d_out``), and build() binds each count up to it in a compiled copy of
# its own: a constant there, its unused loads and stores are compiled out (a column count read
# at run time cost 0.6 ms of the 1M-row, four-column gather's 4.6, in branches at every row).
COLUMNS = 4


def check_map(gmap, n_rows, valid):
    """Mark the map entries that are rows of the right side; return (missing, bad): how many
    entries are a no-match sentinel (a negative 32- or 64-bit minimum) and how many are
    neither a row nor a sentinel."""
    missing = 0
    bad = 0
    for i in prange(gmap.size):
        m = gmap[i]
        ok = 0 <= m < n_rows
        valid[i] = ok
        if not ok:
            if m == -2147483648 or m == -9223372036854775808:
                missing += 1
            else:
                bad += 1
    return missing, bad


def take_fixed(values, gmap, valid, out):
    for i in prange(gmap.size):
        # Two statements, not a conditional expression: numba would unify uint64 with the
        # literal 0 as float64 and round large values.
        if valid[i]:
            out[i] = values[np.uint64(gmap[i])]
        else:
            out[i] = 0


def take_fixed_pair(values, more, gmap, valid, out, more_out):
    """``take_fixed`` of two columns in one pass: each row's two independent random reads
    overlap, and the map is read once (a quarter less time than two passes, 10M rows)."""
    for i in prange(gmap.size):
        if valid[i]:
            g = np.uint64(gmap[i])
            out[i] = values[g]
            more_out[i] = more[g]
        else:
            out[i] = 0
            more_out[i] = 0


def take_fixed_quad(a, b, c, d, gmap, valid, a_out, b_out, c_out, d_out):
    """``take_fixed`` of four columns in one pass: the map is read once, and each row's four
    random reads overlap. For 1M rows of four float64 columns of 10M (the bench's prepared
    gather, 2 threads), measured with signed entries: 9.3 ms against two pair passes' 11.7."""
    for i in prange(gmap.size):
        if valid[i]:
            g = np.uint64(gmap[i])
            a_out[i] = a[g]
            b_out[i] = b[g]
            c_out[i] = c[g]
            d_out[i] = d[g]
        else:
            a_out[i] = 0
            b_out[i] = 0
            c_out[i] = 0
            d_out[i] = 0


# Rows of a chunked gather taken in one piece, in order: a piece keeps its last row's chunk.
CHUNKED_PIECE = 1 << 14
# The most chunk ends a row steps past without a branch: a block over a run of tiny chunks
# can cross hundreds, and every row would step past all of them.
BRANCH_FREE_STEPS = 4


def take_chunked_piece(
    i0, i1, addresses, starts, blocks, shift, steps, like, gmap, valid, a_out, b_out, c_out, d_out
):
    """``take_chunked`` of the entries [i0, i1). Each row's chunk is the last row's while the
    row lies in it (a batch of time-ordered trades maps to quotes near one another, so it
    mostly does): one predictable test per row, and the chunk's addresses stay in registers.
    Otherwise ``blocks[g >> shift]``
    holds the chunk of the first row of ``g``'s block, and the row steps past the ``steps``
    chunk ends a block crosses at most, without a branch (a row's test is not predictable,
    and a mispredicted branch stops the reads that overlap), or, past
    ``BRANCH_FREE_STEPS``, a step at a time as far as it needs."""
    lo = hi = np.uint64(0)  # no chunk yet: the first valid row finds its own
    a = b = c = d = np.uint64(0)  # the chunk's address in each column
    # Unsigned positions: numba checks a signed index for wrapping below zero at every read
    # and write (a millisecond of the 1M-row gather's 5), and cannot prove i0 >= 0.
    for i in range(np.uint64(i0), np.uint64(i1)):
        if valid[i]:
            g = np.uint64(gmap[i])
            if g < lo or g >= hi:
                k = blocks[g >> shift]
                if steps <= BRANCH_FREE_STEPS:
                    for _ in range(steps):
                        k += starts[k + 1] <= g
                else:  # a block over many small chunks: step only as far as this row needs
                    while starts[k + 1] <= g:
                        k += 1
                lo = starts[k]
                hi = starts[k + 1]
                a = addresses[0, k]
                if COLUMNS > 1:
                    b = addresses[1, k]
                if COLUMNS > 2:
                    c = addresses[2, k]
                if COLUMNS > 3:
                    d = addresses[3, k]
            at = g - lo
            a_out[i] = load_at(a, at, like)
            if COLUMNS > 1:
                b_out[i] = load_at(b, at, like)
            if COLUMNS > 2:
                c_out[i] = load_at(c, at, like)
            if COLUMNS > 3:
                d_out[i] = load_at(d, at, like)
        else:
            a_out[i] = 0
            if COLUMNS > 1:
                b_out[i] = 0
            if COLUMNS > 2:
                c_out[i] = 0
            if COLUMNS > 3:
                d_out[i] = 0


def take_chunked(
    addresses, starts, blocks, shift, steps, like, gmap, valid, a_out, b_out, c_out, d_out
):
    """``take_fixed`` of ``COLUMNS`` (one to four) columns in chunks of the same rows, all of
    one width (``like``'s dtype): column ``k``'s chunk ``c``, holding rows ``starts[c]`` to
    ``starts[c + 1]`` (the last entry of ``starts`` is the number of rows), is at the integer
    address ``addresses[k, c]``, and is written to the k-th of ``a_out``..``d_out`` (those
    past the columns are not touched). ``blocks``, ``shift`` and ``steps`` find a row's
    chunk (``_backend.take.chunk_blocks``; a binary search of 77 starts cost the gather of
    1M rows half as much time again). The entries are taken in pieces, in parallel."""
    n = gmap.size
    for p in prange((n + CHUNKED_PIECE - 1) // CHUNKED_PIECE):
        i0 = p * CHUNKED_PIECE
        take_chunked_piece(
            i0,
            min(i0 + CHUNKED_PIECE, n),
            addresses,
            starts,
            blocks,
            shift,
            steps,
            like,
            gmap,
            valid,
            a_out,
            b_out,
            c_out,
            d_out,
        )


def text_lengths(offsets, gmap, valid, lengths):
    """Each entry's length in bytes (0 where it is not ``valid``) of text whose row ``g``
    spans ``offsets[g]`` to ``offsets[g + 1]`` (int32 or int64, the array's own offset
    already applied)."""
    for i in prange(gmap.size):
        if valid[i]:
            g = np.uint64(gmap[i])
            lengths[i + 1] = offsets[g + 1] - offsets[g]
        else:
            lengths[i + 1] = 0


def take_text(offsets, data, gmap, valid, out_offsets, out_data):
    """Copy each valid entry's bytes from ``data`` to ``out_data`` at ``out_offsets[i]``."""
    for i in prange(gmap.size):
        if valid[i]:
            g = np.uint64(gmap[i])
            start = offsets[g]
            at = out_offsets[i]
            for k in range(offsets[g + 1] - start):
                out_data[at + k] = data[start + k]


def take_views(views, gmap, valid, out):
    """Each valid entry's 16-byte view (two words: length and prefix, buffer and offset) of
    a view-text column; an empty inline view (zeros) elsewhere. The views point into the
    column's own data buffers, which the result shares."""
    for i in prange(gmap.size):
        if valid[i]:
            g = np.uint64(gmap[i])
            out[i, 0] = views[g, 0]
            out[i, 1] = views[g, 1]
        else:
            out[i, 0] = 0
            out[i, 1] = 0


def row_numbers(out):
    """0, 1, 2, ...: the walk order of a side whose every row is walked in place."""
    for i in prange(out.size):
        out[i] = i


class Kernels(NamedTuple):
    check_map: object
    take_fixed: object
    row_numbers: object
    take_fixed_pair: object
    take_fixed_quad: object
    take_chunked: object
    text_lengths: object
    take_text: object
    take_views: object


def build(jit, parallel_jit, parallel_range, load) -> Kernels:
    """Every kernel here, compiled with ``parallel_jit(variant)``, and the piece of the
    chunked one with ``jit(variant)`` (numba's parallel pass mistypes loop-carried values of
    a function inlined into a ``prange`` loop): each returns the decorator for a copy whose
    bound globals ``variant`` names. ``take_chunked`` is a tuple: its k-th kernel takes k + 1
    columns. ``load`` is the ``load_at`` intrinsic."""
    from . import bind

    names = {"prange": parallel_range, "load_at": load}
    kernels = {
        name: parallel_jit("")(bind(globals()[name], **names))
        for name in Kernels._fields
        if name != "take_chunked"
    }
    chunked = []
    for columns in range(1, COLUMNS + 1):
        variant = f"columns{columns}"
        fixed = {**names, "COLUMNS": columns}
        piece = jit(variant)(bind(take_chunked_piece, **fixed))
        chunked.append(parallel_jit(variant)(bind(take_chunked, take_chunked_piece=piece, **fixed)))
    kernels["take_chunked"] = tuple(chunked)
    return Kernels(**kernels)
