"""asofgpu._pandas_semantics: the interface the pandas, cuDF and Dask front ends share.

The front ends' own tests compare whole merges with pandas. These check what they cannot: that
no front end reaches into another's private names, and the parts of ``AsofMerge`` that
``asofgpu.cudf`` reads from zero-row copies of its frames (run here on pandas frames, so
without a GPU).
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pandas.errors import MergeError

from asofgpu._pandas_semantics import (
    AsofMerge,
    check_join_options,
    float_arithmetic_matters,
    kernel_tolerance,
    pandas_float_pick,
)

PACKAGE = Path(__file__).resolve().parents[1] / "asofgpu"
FRONT_ENDS = ("pandas", "cudf", "dask")


def _merge(left, right, **kwargs) -> AsofMerge:
    args = dict(
        on=None,
        left_on=None,
        right_on=None,
        left_index=False,
        right_index=False,
        by=None,
        left_by=None,
        right_by=None,
        suffixes=("_x", "_y"),
        tolerance=None,
    )
    args.update(kwargs)
    return AsofMerge(left, right, *args.values())


def _front_end_of(module: str | None, level: int) -> str | None:
    """The front end a ``from ... import`` names, if it names one (``.pandas``,
    ``asofgpu.cudf``)."""
    if module is None:
        return None
    parts = module.split(".")
    if level == 1 and len(parts) == 1 and parts[0] in FRONT_ENDS:
        return parts[0]
    if level == 0 and len(parts) == 2 and parts[0] == "asofgpu" and parts[1] in FRONT_ENDS:
        return parts[1]
    return None


def _reaches_into(own: str, tree: ast.Module) -> list[str]:
    """What module ``own`` takes from other front ends: private names imported, private
    attributes of an imported front-end module, and classes subclassed from one."""
    found, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            other = _front_end_of(node.module, node.level)
            if other is not None and other != own:
                found += [
                    f"from {other} import {a.name}" for a in node.names if a.name.startswith("_")
                ]
            if (node.level, node.module) in ((1, None), (0, "asofgpu")):
                aliases.update(
                    (a.asname or a.name, a.name)
                    for a in node.names
                    if a.name in FRONT_ENDS and a.name != own
                )
        elif isinstance(node, ast.Import):
            aliases.update(
                (a.asname, a.name.split(".")[1])
                for a in node.names
                if a.asname and _front_end_of(a.name, 0) not in (None, own)
            )
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
        ):
            found.append(f"{aliases[node.value.id]}.{node.attr}")
        if isinstance(node, ast.ClassDef):
            found += [
                f"class {node.name}({aliases[b.value.id]}.{b.attr})"
                for b in node.bases
                if isinstance(b, ast.Attribute)
                and isinstance(b.value, ast.Name)
                and b.value.id in aliases
            ]
    return found


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_no_front_end_reaches_into_another(front_end):
    tree = ast.parse((PACKAGE / f"{front_end}.py").read_text())
    assert _reaches_into(front_end, tree) == []


def test_the_check_itself_sees_private_imports_and_subclasses():
    source = (
        "from .pandas import _AsofMerge, merge_asof\n"
        "from . import pandas as _pandas\n"
        "class Shared(_pandas.AsofMerge):\n"
        "    x = _pandas._values\n"
    )
    assert sorted(_reaches_into("dask", ast.parse(source))) == [
        "class Shared(pandas.AsofMerge)",
        "from pandas import _AsofMerge",
        "pandas._values",
    ]


# --------------------------------------------------------------------------- first checks


@pytest.mark.parametrize(("direction", "exact"), [("sideways", True), ("nearest", "yes")])
def test_option_errors_are_pandas(direction, exact):
    frame = pd.DataFrame({"t": [1]})
    with pytest.raises(MergeError) as theirs:
        pd.merge_asof(frame, frame, on="t", direction=direction, allow_exact_matches=exact)
    with pytest.raises(MergeError, match=f"^{theirs.value}$"):
        check_join_options(direction, exact)


def test_options_come_back_as_the_join_takes_them():
    assert check_join_options("forward", np.True_) == ("forward", True)


# --------------------------------------------------------------------------- zero-row copies


def _frames():
    left = pd.DataFrame(
        {
            "t": pd.to_datetime([1, 2, 3], unit="ms").as_unit("ms"),
            "sym": ["a", "b", "a"],
            "qty": [1, 2, 3],
        }
    )
    right = pd.DataFrame(
        {"t": pd.to_datetime([1, 2], unit="ms").as_unit("ms"), "sym": ["a", "b"], "bid": [1.0, 2.0]}
    )
    return left, right


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(on="t", by="sym", tolerance=pd.Timedelta("3ms")),
        dict(on="t", suffixes=("_l", "_r")),
        dict(left_on="t", right_on="t", left_by="sym", right_by="sym"),
    ],
)
def test_zero_row_copies_give_the_rules_the_frames_give(kwargs):
    """asofgpu.cudf builds its AsofMerge on ``frame.head(0)``: every rule it reads must come
    out as on the frames themselves."""
    left, right = _frames()
    full, empty = _merge(left, right, **kwargs), _merge(left.head(0), right.head(0), **kwargs)
    assert empty.temporal_tolerance() == full.temporal_tolerance()
    assert empty.kernel_keys()[0].dtype == full.kernel_keys()[0].dtype
    assert empty.by_labels() == full.by_labels()
    assert [list(x) for x in empty.result_labels()] == [list(x) for x in full.result_labels()]
    assert list(empty.join_keys()) == list(full.join_keys())


def test_a_temporal_tolerance_is_in_ticks_of_the_key_unit():
    left, right = _frames()
    op = _merge(left.head(0), right.head(0), on="t", tolerance=pd.Timedelta("3ms"))
    assert op.temporal_tolerance() == 3  # the keys are in milliseconds


def test_by_labels_are_all_keys_when_both_are_the_index():
    left, right = _frames()
    left, right = left.set_index("t"), right.set_index("t")
    op = _merge(left, right, left_index=True, right_index=True, by="sym")
    assert op.by_labels() == (["sym"], ["sym"])
    assert _merge(left, right, left_index=True, right_index=True).by_labels() == ((), ())


@pytest.mark.parametrize(
    ("kwargs", "n_left", "side"),
    [
        (dict(on="t"), 3, None),
        (dict(left_index=True, right_on="t"), 3, "left"),
        (dict(left_on="t", right_index=True), 3, "left"),
        (dict(left_on="t", right_index=True), 0, "right"),
    ],
)
def test_index_from_follows_pandas(kwargs, n_left, side):
    left, right = _frames()
    if kwargs.get("left_index"):
        left = left.set_index("t")
    if kwargs.get("right_index"):
        right = right.set_index("t")
    left = left.head(n_left)
    op = _merge(left, right, **kwargs)
    assert op.index_from(len(left)) == side
    expected = pd.merge_asof(left, right, **kwargs).index
    got = op.result(op.right_indexer("backward", True, "cpu")).index
    pd.testing.assert_index_equal(got, expected)


def test_keys_named_differently_are_not_join_keys():
    left, right = _frames()
    op = _merge(left, right.rename(columns={"t": "u"}), left_on="t", right_on="u", by="sym")
    assert list(op.join_keys()) == [(0, "sym", "sym")]


# --------------------------------------------------------------------------- pandas' kernel


def test_kernel_tolerance_overflows_as_pandas():
    with pytest.raises(OverflowError, match="Python int too large to convert to C long"):
        kernel_tolerance(2**63, np.dtype(np.int64))
    assert kernel_tolerance(2**63, np.dtype(np.uint64)) == 2**63


@pytest.mark.parametrize(
    ("dtype", "direction", "tolerance", "matters"),
    [
        (np.float64, "backward", 1.0, False),
        (np.float64, "nearest", None, False),
        (np.float32, "backward", None, False),
        (np.float32, "backward", 1.0, True),
        (np.float32, "nearest", None, True),
    ],
)
def test_float_arithmetic_matters(dtype, direction, tolerance, matters):
    keys = np.array([1.0, 2.0], dtype=dtype)
    assert float_arithmetic_matters(keys, direction, tolerance) is matters


def test_infinite_keys_matter_to_a_nearest_pick():
    assert float_arithmetic_matters(np.array([1.0, np.inf]), "nearest", None)


def test_float_pick_without_right_rows_matches_nothing():
    def probe(strategy, tol):
        raise AssertionError("no right rows: nothing to probe")

    got = pandas_float_pick(
        np.array([1.0, 2.0]), np.array([]), probe, "nearest", None, no_match=-7, dtype=np.int32
    )
    assert got.tolist() == [-7, -7] and got.dtype == np.int32
