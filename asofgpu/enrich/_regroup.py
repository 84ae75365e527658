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
from .._encode import Groups
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
    held = pending = 0  # the distinct values last summed, and those gathered since
    for batch in batches:
        column = batch.column(name)
        if isinstance(column, pa.ChunkedArray):
            column = arrow_numpy.combined(column)
        if pa.types.is_dictionary(column.type):
            indices = column.indices
            codes = arrow_numpy.filled(indices, 0)
            if indices.null_count:
                codes = codes[arrow_numpy.valid(indices)]
            # Only the values the batch uses: each batch of a row group carries the row
            # group's whole dictionary (a million ids, 220,000 a row group, came six times
            # a row group: 10M values kept and summed for 2M rows, 500 MiB).
            found = np.bincount(codes, minlength=len(column.dictionary))
            used = np.flatnonzero(found)
            dictionary = column.dictionary
            if arrow_numpy.is_view_text(dictionary.type):  # (pyarrow has no take of views)
                dictionary = as_comparable(dictionary)
            values.append(as_comparable(dictionary.take(arrow_numpy.array(used))))
            counts.append(found[used])
        else:
            if arrow_numpy.is_view_text(column.type):  # (pyarrow 26 counts their nulls as "")
                column = as_comparable(column)
            found = pc.value_counts(column)
            values.append(as_comparable(found.field(0)))
            counts.append(arrow_numpy.values(found.field(1)))
        pending += len(values[-1])
        # Summed once those gathered outnumber those held: a value is summed a few times at
        # most, and about twice the distinct values are held.
        if pending > max(_SUMMED_VALUES, held):
            summed, rows = _summed(values, counts)
            values, counts, held, pending = [summed], [rows], len(summed), 0
    if not values:
        return pa.nulls(0), np.zeros(0, np.int64)
    summed, rows = _summed(values, counts)
    order = pc.sort_indices(summed)
    return summed.take(order), rows[arrow_numpy.values(order)]


#: The fewest values ``value_counts`` gathers before it sums them.
_SUMMED_VALUES = 1 << 20


def _summed(values: list[pa.Array], counts: list[np.ndarray]) -> tuple[pa.Array, np.ndarray]:
    """The distinct non-null values among ``values`` and each one's ``counts`` summed. (By
    Arrow's hash, as ``index_in`` looks them up; its ``group_by`` took 1.9 s and 240 MiB for
    2M ids, ``dictionary_encode`` 0.3 s.)"""
    value = pa.concat_arrays(values)
    rows = np.concatenate(counts)
    if value.null_count:
        valid = arrow_numpy.valid(value)
        value, rows = value.filter(arrow_numpy.array(valid)), rows[valid]
    encoded = pc.dictionary_encode(value)
    codes = arrow_numpy.values(encoded.indices)
    summed = np.bincount(codes, weights=rows, minlength=len(encoded.dictionary))
    return encoded.dictionary, summed.astype(np.int64)  # (exact: counts of rows, below 2**53)


def _sample_of(column, taken: pa.Array):
    """The rows ``taken`` of ``column``, a dictionary cut to the values they use: a reader's
    batches each carry their own copy of their row group's dictionary so far, and samples of
    a million ids kept 7M values alive (145 MiB)."""
    return arrow_numpy.trimmed_dictionary(column.take(taken))


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
                            _sample_of(batch.column(name), taken),
                            [as_comparable(batch.column(c).take(taken)) for c in self.rest],
                            batch.column(on).take(taken),
                        )
                    )
                    at += batch.num_rows
                yield batch

        self.values, counts = value_counts(sampling(batches), name)
        self._rank_of = Ranks(self.values)
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
        rank = np.concatenate([self._rank_of(v) for v, _, _ in picked])
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
        rank = self._rank_of(batch.column(self.name))
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


class Ranks:
    """``ranks(column, values)`` with ``values`` hashed once (the join's own ``Groups``),
    for a lookup in every batch of a pass: Arrow's ``index_in`` hashes its value set at each
    call, and a million ids, hashed again for every batch of LEFT, took half of a 16 s
    regroup. Where the join takes two of ``values`` for one (floats: -0.0 and 0.0), by
    ``index_in``. (The join takes -0.0 for 0.0 and every NaN for one, ``index_in`` neither:
    the two differ only on a value not among ``values``, which no pass looks up: its values
    come from the column it ranks.)

    >>> import pyarrow as pa
    >>> rank_of = Ranks(pa.array(["a", "b"], pa.large_string()))
    >>> rank_of(pa.array(["b", None, "a", "c"])).tolist()
    [1, -1, 0, -1]
    """

    def __init__(self, values: pa.Array):
        self.values = values
        self._groups = Groups([pa.chunked_array([values])], ["values"], null_equal=False)
        # Each group's rank, and -1 last, for code -1 (no group); None where the groups are
        # not the values one to one.
        self._rank = None
        if self._groups.n_groups == len(values):
            self._rank = np.full(len(values) + 1, -1, np.int64)
            self._rank[self._groups.right_codes] = np.arange(len(values))

    def __call__(self, column) -> np.ndarray:
        if self._rank is None:
            return ranks(column, self.values)
        if not isinstance(column, pa.ChunkedArray):
            column = pa.chunked_array([column])
        return self._rank[self._groups.lookup([column], ["column"])]


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
        rank = Ranks(values)(column)  # (hashed once: a spilled range is a chunk a batch)
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
