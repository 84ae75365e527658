"""RIGHT sorted (by its key, a tape, or by its by columns and then its key, grouped), LEFT in
another order (a tape of trades beside quote files sorted by symbol, as vendors ship them, or
trade files per symbol beside a quote tape): LEFT's keys are put in RIGHT's order, spilled in
ranges when they do not fit, and RIGHT, the large side, is streamed once and never written.

- **Ranges.** For a grouped RIGHT, a first pass over LEFT's first by column counts its rows
  per value (``value_counts``), and the values, in Arrow's order, are cut into ranges of about
  equal LEFT rows (``ByRanges``; a value with more rows than a range is cut further by the
  other by columns and the key); for a tape, LEFT's keys are cut at evenly spaced keys of a
  sample (``on_ranges``). The rows of a key busier than a range are spread over the ranges
  it spans (``_spread``). Each range is a spill partition of LEFT's keys and positions.
- **A partition in stream order.** Each partition, read back whole, is sorted in the stream's
  order (``stream_order``: a stable sort by the key, then for a grouped stream by each by
  column's rank among the partition's values, last column first). Partition after partition,
  the ranges ascending, this is LEFT in RIGHT's order: the stream of ``_stream`` joins it as
  it joins two files sorted alike, and its order check verifies the sort.
- **Back in LEFT's order.** A partition's results (LEFT position, attached columns) are put
  back in its row order (``restore``: the partition holds rows in increasing position), and
  the LEFT pass reads every partition's results in position order as a spill's are.

Rows with a null key (or, grouped, a null by value) never match: they stay out of the stream
and get nulls.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _arrow_numpy as arrow_numpy
from .._gather import gather
from ._stream import as_comparable, compare, key_numbers, sorted_sample


def value_counts(batches, name: str) -> tuple[pa.Array, np.ndarray]:
    """The distinct non-null values of column ``name`` through ``batches``, in Arrow's order
    (text in its large form), and each one's row count.

    >>> import pyarrow as pa
    >>> values, counts = value_counts([pa.record_batch({"s": ["b", "a", None, "b"]})], "s")
    >>> values.to_pylist(), counts.tolist()
    (['a', 'b'], [1, 2])
    """
    values, counts = [], []
    for batch in batches:
        column = batch.column(name)
        if isinstance(column, pa.ChunkedArray):
            column = arrow_numpy.combined(column)
        if pa.types.is_dictionary(column.type):
            indices = column.indices
            codes = arrow_numpy.filled(indices, 0)
            if indices.null_count:
                codes = codes[arrow_numpy.valid(indices)]
            values.append(as_comparable(column.dictionary))
            counts.append(np.bincount(codes, minlength=len(column.dictionary)))
        else:
            found = pc.value_counts(column)
            values.append(as_comparable(found.field(0)))
            counts.append(arrow_numpy.values(found.field(1)))
    if not values:
        return pa.nulls(0), np.zeros(0, np.int64)
    table = pa.table(
        {
            "value": pa.concat_arrays(values),
            "rows": arrow_numpy.array(np.concatenate(counts).astype(np.int64)),
        }
    )
    table = table.filter(pc.is_valid(table.column("value")))
    table = table.group_by("value").aggregate([("rows", "sum")])
    order = pc.sort_indices(table.column("value"))
    return (
        arrow_numpy.combined(table.column("value").take(order)),
        arrow_numpy.values(arrow_numpy.combined(table.column("rows_sum").take(order))),
    )


class ByRanges:
    """``part_of`` for ``SpillFolder.partition``: each row's range of by column ``name``'s
    values (ranges of about equal rows, ascending, from a first pass over ``batches``); a
    null, which never matches, goes to the first.

    With ``on`` (the stream is ordered by ``name``, then the by columns ``rest``, then
    ``on``: a grouped RIGHT), a value with more rows than a range should hold (Zipf's
    busiest symbol, a day of ``--by date,symbol``) spans as many ranges as its rows fill,
    cut at (``rest``..., ``on``) tuples of an evenly spaced sample of about ``sample`` of
    the ``rows`` rows; ``cut`` counts such values. The rows of a tuple that is several cuts
    (one key holding more rows than a range) are spread over the ranges those cuts bound
    (``_spread``). Call it on every batch of one pass, in order.
    """

    def __init__(
        self,
        batches,
        name: str,
        parts: int,
        on: str | None = None,
        rows: int = 0,
        sample: int = 1 << 20,
        rest: list[str] | tuple = (),
    ):
        self.name, self.on, self.rest = name, on, list(rest)
        self._seen = 0  # rows partitioned so far: each row's number in the pass
        picked = []  # (by values, the other by values, keys) of every ``step``-th row
        step, at = max(1, rows // sample), 0

        def sampling(batches):
            nonlocal at
            for batch in batches:
                if on is not None:
                    taken = arrow_numpy.array(np.arange((-at) % step, batch.num_rows, step))
                    picked.append(
                        (
                            batch.column(name).take(taken),
                            [as_comparable(batch.column(c).take(taken)) for c in self.rest],
                            batch.column(on).take(taken),
                        )
                    )
                    at += batch.num_rows
                yield batch

        self.values, counts = value_counts(sampling(batches), name)
        self.first = partitions_of(counts, parts)
        self.cuts: dict[int, tuple[list, np.ndarray]] = {}  # a value's rank: its cut tuples
        if on is None or not len(counts):
            return
        total = int(counts.sum())
        spans = -(-counts * parts // total)  # the ranges a value's rows fill
        last = np.minimum(self.first + np.where(counts * parts > total, spans, 1) - 1, parts - 1)
        busy = np.flatnonzero(last > self.first)
        if not len(busy):
            return
        rank = np.concatenate([ranks(v, self.values) for v, _, _ in picked])
        keys, valid = key_numbers(pa.chunked_array([k for _, _, k in picked]))
        others = [pa.concat_arrays([o[i] for _, o, _ in picked]) for i in range(len(self.rest))]
        keyed = rank >= 0 if valid is None else valid & (rank >= 0)
        for other in others:  # a null by value never matches: it cuts nothing
            keyed &= arrow_numpy.valid(other) if other.null_count else True
        for v in busy:
            mine = np.flatnonzero(keyed & (rank == v))
            n = int(last[v] - self.first[v]) + 1
            if not len(mine):
                continue
            theirs = [other.take(arrow_numpy.array(mine)) for other in others]
            # In stream order: each other by column by its rank among these values.
            ranked = [ranks(o, distinct(o)) for o in theirs]
            sorted_keys = keys[mine]
            order = np.lexsort((sorted_keys, *reversed(ranked)))
            sorted_keys = sorted_keys[order]
            bounds = (np.arange(1, n) * len(order)) // n  # the cuts' places in that order
            taken = arrow_numpy.array(order[bounds])
            same = sorted_keys[1:] == sorted_keys[:-1]  # a tuple equal to the one before
            for r in ranked:
                same &= r[order[1:]] == r[order[:-1]]
            self.cuts[int(v)] = (
                [o.take(taken) for o in theirs],
                sorted_keys[bounds],
                Runs.around(bounds, same),
            )

    @property
    def cut(self) -> int:
        return len(self.cuts)

    def __call__(self, batch) -> np.ndarray:
        rank = ranks(batch.column(self.name), self.values)
        part = np.where(rank >= 0, self.first[rank] if len(self.first) else 0, 0).astype(np.int64)
        if self.cuts:
            keys, _ = key_numbers(batch.column(self.on))  # a null key's slot: any range
            for v, (by_cuts, on_cuts, runs) in self.cuts.items():
                mine = np.flatnonzero(rank == v)
                if not len(mine):
                    continue
                taken = arrow_numpy.array(mine)
                by = [as_comparable(batch.column(c).take(taken)) for c in self.rest]
                above = np.zeros(len(mine), np.int64)  # the cuts at or below each row
                ties = np.zeros(len(mine), np.int64)  # of them, those equal to it
                for i, on_cut in enumerate(on_cuts):
                    less, equal = compare(by, keys[mine], [c[i] for c in by_cuts], on_cut)
                    above += ~less
                    ties += equal
                part[mine] += _spread(above, ties, self._seen + mine, runs)
        self._seen += batch.num_rows
        return part.astype(np.uint16)


def on_ranges(batches, on: str, parts: int, rows: int, sample: int = 1 << 20):
    """``part_of`` for ``SpillFolder.partition``: each row's range of key ``on`` (cut at
    evenly spaced keys of a sample of about ``sample`` from a first pass over ``batches``,
    ``rows`` rows; the rows of a key that is several cuts are spread over the ranges those
    cuts bound, ``_spread``); a null key, which never matches, goes to the first. Call it on
    every batch of one pass, in order."""
    keys = sorted_sample(batches, on, max(1, rows // sample))
    bounds = (np.arange(1, parts) * len(keys)) // parts if len(keys) else keys
    cuts = keys[bounds]
    runs = Runs.around(bounds, keys[1:] == keys[:-1])
    seen = 0

    def part_of(batch) -> np.ndarray:
        nonlocal seen
        keys, valid = key_numbers(batch.column(on))
        above = np.searchsorted(cuts, keys, side="right")
        ties = above - np.searchsorted(cuts, keys, side="left")
        part = _spread(above, ties, seen + np.arange(len(keys)), runs).astype(np.uint16)
        seen += len(keys)
        if valid is not None:
            part[~valid] = 0
        return part

    return part_of


class Runs(NamedTuple):
    """Of each cut of a sorted sample (at its places ``bounds``), the run of sample rows equal
    to it: ``[starts, ends)``."""

    bounds: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    @classmethod
    def around(cls, bounds: np.ndarray, same: np.ndarray) -> Runs:
        """The runs of the cuts at ``bounds`` in a sorted sample whose rows are each equal
        to the one before them where ``same`` says so.

        >>> Runs.around(np.array([1, 3]), np.array([True, False, True, True]))
        Runs(bounds=array([1, 3]), starts=array([0, 2]), ends=array([2, 5]))
        """
        starts = np.flatnonzero(np.concatenate([[True], ~same]))
        run = np.searchsorted(starts, bounds, side="right") - 1
        ends = np.append(starts[1:], len(same) + 1)
        return cls(bounds, starts[run], ends[run])


def _spread(above: np.ndarray, ties: np.ndarray, numbers: np.ndarray, runs: Runs) -> np.ndarray:
    """Each row's range offset: the number of cuts at or below it (``above``), but a row equal
    to ``ties`` > 0 cuts (one key, or one tuple, as busy as a range or more) takes the place
    in its run of the sorted sample that a hash of its row number in the pass (``numbers``)
    picks, and the range of that place: its rows fill the ranges their run spans in the
    shares the sample shows. Equal rows never need one range: the stream's order only asks
    that they come after what is below them.

    >>> runs = Runs(np.array([3, 6]), np.array([2, 2]), np.array([9, 9]))  # 7 of 9 rows equal
    >>> np.bincount(_spread(np.full(7000, 2), np.full(7000, 2), np.arange(7000), runs)).tolist()
    [1001, 2998, 3001]
    """
    out = above.copy()
    tied = np.flatnonzero(ties > 0)
    if len(tied):
        first = above[tied] - ties[tied]  # the first cut equal to the row
        starts, ends = runs.starts[first], runs.ends[first]
        mixed = (numbers[tied].astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)
        place = starts + (mixed.astype(np.float64) / (1 << 24) * (ends - starts)).astype(np.int64)
        out[tied] = np.searchsorted(runs.bounds, place, side="right")
    return out


def partitions_of(counts: np.ndarray, parts: int) -> np.ndarray:
    """Each value's partition (values in order, ``counts`` rows each): ranges of values with
    about equal rows, ascending, never splitting a value.

    >>> partitions_of(np.array([5, 1, 1, 1, 1, 1]), 2).tolist()
    [0, 1, 1, 1, 1, 1]
    """
    total = int(counts.sum())
    before = np.cumsum(counts) - counts
    return np.minimum(before * parts // max(total, 1), parts - 1).astype(np.uint16)


def ranks(column, values: pa.Array) -> np.ndarray:
    """Each row's index among ``values`` (distinct, in order, in ``as_comparable`` form), -1 for
    a null or a value not among them.

    >>> import pyarrow as pa
    >>> ranks(pa.array(["b", None, "a", "c"]), pa.array(["a", "b"], pa.large_string())).tolist()
    [1, -1, 0, -1]
    """
    if isinstance(column, pa.ChunkedArray):  # chunk by chunk: each its own dictionary
        return np.concatenate(
            [np.zeros(0, np.int64), *(ranks(chunk, values) for chunk in column.chunks)]
        )
    if pa.types.is_dictionary(column.type):
        per_code = _index_in(column.dictionary, values)
        indices = column.indices
        found = (
            per_code[arrow_numpy.filled(indices, 0)]
            if len(per_code)
            else np.full(len(column), -1, np.int64)
        )
        if indices.null_count:
            found[~arrow_numpy.valid(indices)] = -1
        return found
    return _index_in(column, values)


def distinct(column) -> pa.Array:
    """A column's distinct non-null values in Arrow's order (``as_comparable`` form); of a
    dictionary column, its dictionaries' values."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    if pa.types.is_dictionary(column.type):
        chunks = [chunk.dictionary for chunk in chunks]
    found = [as_comparable(chunk).unique() for chunk in chunks]
    if not found:
        return as_comparable(
            pa.nulls(
                0, column.type.value_type if pa.types.is_dictionary(column.type) else column.type
            )
        )
    found = pc.unique(pa.concat_arrays(found)).drop_null()
    return found.take(pc.sort_indices(found))


def _index_in(column: pa.Array, values: pa.Array) -> np.ndarray:
    found = pc.index_in(as_comparable(column), value_set=values)
    return arrow_numpy.filled(found, -1).astype(np.int64, copy=False)


def stream_order(table: pa.Table, on: str, by: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``table``'s keyed rows (a key and every by value) in (by..., on) order, by values in
    Arrow's order, ties in row order; and its other rows. Without ``by``, a tape's order:
    rows with a key in key order.

    >>> import pyarrow as pa
    >>> t = pa.table({"t": [3, 1, 2, None], "s": ["b", "b", "a", "a"]})
    >>> keyed, others = stream_order(t, "t", ["s"])
    >>> keyed.tolist(), others.tolist()
    ([2, 1, 0], [3])
    """
    keys, keyed = key_numbers(table.column(on))
    keyed = np.ones(table.num_rows, bool) if keyed is None else keyed.copy()
    order = np.arange(table.num_rows)
    if len(keys) > 1 and bool((keys[1:] < keys[:-1]).any()):
        order = np.argsort(keys, kind="stable")
    for name in reversed(by):  # least significant first: each sort keeps the ones before
        column = table.column(name)
        values = distinct(column)
        rank = ranks(column, values)
        keyed &= rank >= 0
        rank = rank.astype(np.int16 if len(values) < (1 << 15) else np.int64)
        order = order[np.argsort(rank[order], kind="stable")]  # int16: a radix sort
    return order[keyed[order]], np.flatnonzero(~keyed)


def restore(taken: pa.Table, rows: np.ndarray) -> pa.Table:
    """``taken``, whose row ``i`` belongs to the partition's row ``rows[i]`` (a permutation),
    in the partition's row order."""
    inverse = np.empty(len(rows), np.int64)
    inverse[rows] = np.arange(len(rows))
    # One chunk first: the pieces are many (a window's or a chunk's each), and a gather
    # that looks each row's piece up costs more than the copy.
    return gather(taken.combine_chunks(), inverse)
