"""Install-time probes: does cudf-polars translate as-of joins itself, and does ours work?

Both translate tiny plans on the host (no device work, no GPU needed), exactly as a query
collected with ``engine="gpu"`` is translated.
"""

from __future__ import annotations

import warnings

import polars as pl

_LEFT = pl.LazyFrame({"t": [1, 5, 9], "g": ["a", "b", "a"], "x": [1, 2, 3]})
_RIGHT = pl.LazyFrame({"t": [0, 4, 8], "g": ["a", "a", "b"], "x": [7, 8, 9], "y": [1.0, 2.0, 3.0]})

# (query, what our node must hold): one per strategy, with and without by, tolerance, coalesce.
PROBES = [
    (
        lambda: _LEFT.join_asof(_RIGHT, on="t", by="g", check_sortedness=False),
        dict(
            strategy="backward",
            tolerance=None,
            left_by=("g",),
            right_columns=(("x", "x_right"), ("y", "y")),
        ),
    ),
    (
        lambda: _LEFT.join_asof(_RIGHT, on="t", strategy="forward", tolerance=2, coalesce=False),
        dict(
            strategy="forward",
            tolerance=2,
            left_by=(),
            check_sortedness=True,
            right_columns=(("t", "t_right"), ("g", "g_right"), ("x", "x_right"), ("y", "y")),
        ),
    ),
    (
        lambda: _LEFT.join_asof(
            _RIGHT.rename({"t": "u"}),
            left_on="t",
            right_on="u",
            strategy="nearest",
            allow_exact_matches=False,
        ),
        dict(
            strategy="nearest",
            allow_exact_matches=False,
            right_columns=(("u", "u"), ("g", "g_right"), ("x", "x_right"), ("y", "y")),
        ),
    ),
]


def translate(query: pl.LazyFrame):
    """(cudf-polars' plan of ``query``, the translation errors), as engine="gpu" makes them."""
    from cudf_polars import Translator

    translator = Translator(query._ldf.visit(), pl.GPUEngine(executor="in-memory"))
    return translator.translate_ir(), translator.errors


def nodes_of(root, cls) -> list:
    from cudf_polars.dsl.traversal import traversal

    return [node for node in traversal([root]) if isinstance(node, cls)]


def _probe_plans():
    with warnings.catch_warnings():  # polars' by-warning and such: not the user's business
        warnings.simplefilter("ignore")
        return [(make(), expected) for make, expected in PROBES]


def native_strategies() -> frozenset[str]:
    """Strategies cudf-polars' own (currently registered) handler translates without error."""
    return frozenset(
        expected["strategy"] for query, expected in _probe_plans() if not translate(query)[1]
    )


def self_check() -> str | None:
    """Translate the probes with the hook registered: each must give exactly one AsofJoin
    node (unless cudf-polars translated it natively) with the options and schema polars
    plans. A problem, or None."""
    from cudf_polars.dsl.ir import ErrorNode

    from ._node import AsofJoin

    for query, expected in _probe_plans():
        try:
            root, errors = translate(query)
        except Exception as exc:  # a broken internal must disable the hook, not the query
            return f"translating a probe raised {type(exc).__name__}: {exc}"
        if errors:
            return f"translating a probe recorded {errors[0]!r}"
        if nodes_of(root, ErrorNode):
            return "a probe translated to an error node"
        ours = nodes_of(root, AsofJoin)
        if not ours:
            continue  # cudf-polars translated it natively: its node, its business
        (node,) = ours
        if list(node.schema) != list(query.collect_schema()):
            return f"probe schema {list(node.schema)} is not polars' {query.collect_schema()}"
        for field, value in expected.items():
            if getattr(node.options, field) != value:
                return f"probe option {field}={getattr(node.options, field)!r}, expected {value!r}"
    return None
