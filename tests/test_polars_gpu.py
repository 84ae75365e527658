"""asofgpu.polars_gpu: polars' join_asof under the GPU engine (cudf-polars) runs through asofgpu.

Without a GPU (every test not marked ``gpu``): the private cudf-polars names the hook relies
on, the translation of as-of joins into our node (options, schema), the refusals that send a
query to polars' CPU engine, install / uninstall. With a GPU (``gpu``, ``make gpu-check``):
results equal to polars' CPU engine, with ``raise_on_fail=True`` so that nothing silently
falls back, in-memory and streaming.
"""

from __future__ import annotations

import inspect
import pickle
import warnings

import pytest

cudf_polars = pytest.importorskip(
    "cudf_polars", reason="cudf-polars is not installed (pip install 'asofgpu[cudf-polars]')"
)

import polars as pl  # noqa: E402
from polars.testing import assert_frame_equal  # noqa: E402

import asofgpu.polars_gpu as hook  # noqa: E402
from asofgpu.polars_gpu import _options  # noqa: E402
from asofgpu.polars_gpu._node import AsofJoin  # noqa: E402
from asofgpu.polars_gpu._selfcheck import nodes_of, translate  # noqa: E402


@pytest.fixture
def installed():
    with warnings.catch_warnings():
        warnings.simplefilter("error", hook.AsofgpuHookWarning)  # the tested versions: no warning
        assert hook.install()
    yield
    hook.uninstall()


def _quiet(make):
    with warnings.catch_warnings():  # polars' by- and coalesce-warnings are tested elsewhere
        warnings.simplefilter("ignore")
        return make()


def _ours(query):
    """The one AsofJoin node of ``query``'s GPU plan (and no translation errors)."""
    root, errors = _quiet(lambda: translate(query))
    assert errors == []
    (node,) = nodes_of(root, AsofJoin)
    return node


def _refused(query) -> list:
    root, errors = _quiet(lambda: translate(query))
    assert not nodes_of(root, AsofJoin)
    return errors


# --------------------------------------------------------------------------- data

KEY_DTYPES = [
    pl.Int64,
    pl.Int32,
    pl.UInt64,
    pl.UInt8,
    pl.Float64,
    pl.Float32,
    pl.Date,
    pl.Datetime("ns"),
    pl.Datetime("us", "UTC"),
    pl.Duration("ms"),
]
_UNIT = {"ns": 10**9, "us": 10**6, "ms": 10**3}


def _keys(values, dtype) -> pl.Series:
    s = pl.Series("t", values, dtype=pl.Int64)
    if isinstance(dtype, (pl.Datetime, pl.Duration)):
        return (s * _UNIT[dtype.time_unit]).cast(dtype)  # values are seconds
    if dtype == pl.Date:
        return (s + 19_000).cast(pl.Int32).cast(pl.Date)
    return s.cast(dtype)


def _frames(dtype):
    left = pl.LazyFrame(
        {
            "t": _keys([1, 3, 4, 7, 9, 12], dtype),
            "g": ["a", "b", "a", None, "b", "a"],
            "x": [1, 2, 3, 4, 5, 6],
        }
    )
    right = pl.LazyFrame(
        {
            "t": _keys([0, 3, 3, 6, 8, 10], dtype),
            "g": ["a", "a", "b", "b", "a", "b"],
            "x": [9, 8, 7, 6, 5, 4],
            "y": [0.5, 1.5, None, 3.5, 4.5, 5.5],
            "s": list("uvwxyz"),
        }
    )
    return left, right


def _tolerances(dtype) -> list:
    if dtype in (pl.Float64, pl.Float32):
        return [None, 2, 1.5]
    if isinstance(dtype, (pl.Datetime, pl.Duration)):
        return [None, "2s", 2 * _UNIT[dtype.time_unit]]  # a duration, a number in the unit
    if dtype == pl.Date:
        return [None, "2d", 2]
    return [None, 2, -2] if dtype.is_signed_integer() else [None, 2]


def _matrix():
    for dtype in KEY_DTYPES:
        for strategy in ("backward", "forward", "nearest"):
            for tolerance in _tolerances(dtype):
                for by in (None, "g"):
                    for coalesce in (True, False):
                        yield pytest.param(
                            dtype,
                            strategy,
                            tolerance,
                            by,
                            coalesce,
                            id=f"{dtype}-{strategy}-{tolerance}-{by}-{coalesce}",
                        )


MATRIX = list(_matrix())


def _query(dtype, strategy, tolerance, by, coalesce, **options):
    left, right = _frames(dtype)
    return _quiet(
        lambda: left.join_asof(
            right,
            on="t",
            by=by,
            strategy=strategy,
            tolerance=tolerance,
            coalesce=coalesce,
            check_sortedness=by is None,
            **options,
        )
    )


# --------------------------------------------------------------------------- canaries


def test_the_private_cudf_polars_names_the_hook_relies_on():
    from cudf_polars.dsl import ir, translate as tr
    from polars import polars as plrs

    assert hook.canary() is None
    assert plrs._ir_nodes.Join in tr._translate_ir.registry  # a singledispatch function
    handler = tr._translate_ir.dispatch(plrs._ir_nodes.Join)
    assert list(inspect.signature(handler).parameters)[:3] == ["node", "translator", "schema"]
    assert {"n", "schema"} <= set(inspect.signature(tr.translate_named_expr).parameters)
    assert "context" in inspect.signature(ir.IR.evaluate).parameters
    assert {"order", "null_order", "stream"} <= set(
        inspect.signature(cudf_polars.containers.Column.check_sorted).parameters
    )
    from cudf_polars.streaming import dispatch, repartition  # the streaming lowering's names

    assert hasattr(dispatch, "lower_ir_node") and hasattr(repartition, "Repartition")


def test_polars_asof_option_tuple_has_the_tested_layout():
    from cudf_polars.dsl import translate as tr
    from polars import polars as plrs

    seen = []
    original = tr._translate_ir.dispatch(plrs._ir_nodes.Join)

    def spy(node, translator, schema):
        seen.append(node.options)
        return original(node, translator, schema)

    tr._translate_ir.register(plrs._ir_nodes.Join, spy)
    try:
        left, right = _frames(pl.Datetime("ns"))
        _quiet(
            lambda: translate(
                left.join_asof(
                    right,
                    on="t",
                    by="g",
                    strategy="forward",
                    tolerance="2s",
                    allow_exact_matches=False,
                )
            )
        )
    finally:
        tr._translate_ir.register(plrs._ir_nodes.Join, original)
    (options,) = seen
    assert options[0] == ("AsOf", "forward", 2 * 10**9, "2s", ["g"], ["g"], False, True)
    assert options[1:5] == (False, None, "_right", True)  # nulls_equal, slice, suffix, coalesce


def test_the_hook_is_needed_today_cudf_polars_refuses_asof_joins():
    hook.uninstall()
    assert _refused(_query(pl.Int64, "backward", None, "g", True))  # TypeError: unhashable list
    assert _refused(_query(pl.Int64, "backward", None, None, True))


# --------------------------------------------------------------------------- translation matrix


@pytest.mark.parametrize(("dtype", "strategy", "tolerance", "by", "coalesce"), MATRIX)
def test_translation_matrix(installed, dtype, strategy, tolerance, by, coalesce):
    query = _query(dtype, strategy, tolerance, by, coalesce)
    node = _ours(query)
    assert list(node.schema) == list(query.collect_schema())
    assert [d.polars_type for d in node.schema.values()] == list(query.collect_schema().dtypes())
    opts = node.options
    assert opts.strategy == strategy
    assert opts.allow_exact_matches is True
    assert opts.left_by == opts.right_by == ((by,) if by else ())
    assert opts.check_sortedness is (by is None)
    assert opts.zlice is None
    if tolerance is None:
        assert opts.tolerance is None
    elif isinstance(tolerance, str):  # polars converts it into the key's unit
        assert opts.tolerance == (2 if dtype == pl.Date else 2 * _UNIT[dtype.time_unit])
    else:
        assert opts.tolerance == abs(tolerance)
    right_names = ["t", "g", "x", "y", "s"]
    kept = [n for n in right_names if n != by and not (coalesce and n == "t")]
    assert opts.right_columns == tuple(
        (n, f"{n}_right" if n in ("t", "g", "x") else n) for n in kept
    )
    assert pickle.loads(pickle.dumps(node)) == node
    assert hash(node) == hash(pickle.loads(pickle.dumps(node)))


def test_other_translated_shapes(installed):
    left, right = _frames(pl.Int64)
    node = _ours(
        left.join_asof(
            right.rename({"t": "u", "g": "h"}),
            left_on="t",
            right_on="u",
            by_left="g",
            by_right="h",
            suffix="_r",
        )
    )
    assert node.options.right_columns == (("u", "u"), ("x", "x_r"), ("y", "y"), ("s", "s"))
    assert (node.options.left_by, node.options.right_by) == (("g",), ("h",))
    node = _ours(left.join_asof(right, left_on=pl.col("t") * 2, right_on="t"))  # not coalesced
    assert ("t", "t_right") in node.options.right_columns
    node = _ours(left.join_asof(right, on="t", allow_exact_matches=False).head(3))
    assert (node.options.zlice, node.options.allow_exact_matches) == ((0, 3), False)
    node = _ours(left.join_asof(right.with_columns(pl.col("t").cast(pl.Int32)), on="t"))
    assert "t" not in dict(node.options.right_columns)  # polars' supercast: still coalesced
    node = _ours(left.join_asof(right, on="t", check_sortedness=False))
    assert node.options.check_sortedness is False
    plan = (
        left.join_asof(right, on="t", by="g")
        .filter(pl.col("y") > 1)
        .group_by("g")
        .agg(pl.col("y").sum())
    )
    root, errors = _quiet(lambda: translate(plan))  # inside an otherwise normal plan
    assert errors == [] and len(nodes_of(root, AsofJoin)) == 1


# --------------------------------------------------------------------------- refusals


def _l(**columns):
    return pl.LazyFrame({"t": [1, 5, 9], "g": ["a", "b", "a"], **columns})


def _r(**columns):
    return pl.LazyFrame({"t": [0, 4, 8], "g": ["a", "a", "b"], "y": [1.0, 2.0, 3.0], **columns})


REFUSED = [  # (query, what the error names)
    (lambda: _l().join_asof(_r(), on="g", check_sortedness=False), "dtype String"),
    (
        lambda: (
            _l()
            .with_columns(pl.col("t").cast(pl.Boolean))
            .join_asof(_r().with_columns(pl.col("t").cast(pl.Boolean)), on="t")
        ),
        "dtype Boolean",
    ),
    (
        lambda: (
            _l()
            .with_columns(pl.col("t").cast(pl.Decimal(10, 2)))
            .join_asof(_r().with_columns(pl.col("t").cast(pl.Decimal(10, 2))), on="t")
        ),
        "Decimal",
    ),
    (
        lambda: _l().with_columns(pl.col("t").cast(pl.UInt64)).join_asof(_r(), on="t"),
        "Int128",
    ),  # polars supercasts UInt64 vs Int64 to Int128: cudf-polars refuses that
    (
        lambda: (
            _l()
            .with_columns(pl.col("t").cast(pl.Time))
            .join_asof(_r().with_columns(pl.col("t").cast(pl.Time)), on="t")
        ),
        "Time",
    ),  # by cudf-polars
    (
        lambda: _l(f=[1.0, 2.0, 3.0]).join_asof(_r(f=[1.0, 2.0, 3.0]), on="t", by="f"),
        "by-keys of dtype Float64",
    ),
    (
        lambda: (
            _l()
            .with_columns(pl.col("g").cast(pl.Categorical))
            .join_asof(_r().with_columns(pl.col("g").cast(pl.Categorical)), on="t", by="g")
        ),
        "Categorical",
    ),  # refused by cudf-polars itself
    (lambda: _l().join_asof(_r(), on="t", tolerance=2.5), "float tolerance"),
    (
        lambda: (
            _l()
            .with_columns(pl.col("t").cast(pl.UInt64))
            .join_asof(_r().with_columns(pl.col("t").cast(pl.UInt64)), on="t", tolerance=-1)
        ),
        "tolerance of -1",
    ),
    (
        lambda: (
            _l()
            .with_columns(pl.col("t").cast(pl.Int32))
            .join_asof(_r().with_columns(pl.col("t").cast(pl.Int32)), on="t", tolerance=2**40)
        ),
        "tolerance",
    ),
    (
        lambda: (
            _l()
            .with_columns(pl.col("t").cast(pl.Float64))
            .join_asof(
                _r().with_columns(pl.col("t").cast(pl.Float64)), on="t", tolerance=float("nan")
            )
        ),
        "tolerance of nan",
    ),
]


@pytest.mark.parametrize(("make", "names"), REFUSED, ids=[n for _, n in REFUSED])
def test_refusal_matrix(installed, make, names):
    query = _quiet(make)
    errors = _refused(query)
    assert any(isinstance(e, NotImplementedError) and names in str(e) for e in errors), errors
    engine = pl.GPUEngine(executor="in-memory")  # the CPU fallback runs here without a GPU
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            expected = query.collect()
        except pl.exceptions.PolarsError as error:  # polars' own error, from either engine
            with pytest.raises(type(error)):
                query.collect(engine=engine)
            return
        assert_frame_equal(query.collect(engine=engine), expected, check_exact=True)


def test_schema_mismatch_is_refused_not_guessed():
    with pytest.raises(NotImplementedError, match="polars plans"):
        _options.parse(
            ("AsOf", "backward", None, None, None, None, True, True),
            False,
            None,
            "_right",
            True,
            left_schema={"t": pl.Int64},
            right_schema={"t": pl.Int64, "y": pl.Float64},
            left_key="t",
            right_key="t",
            left_key_dtype=pl.Int64,
            right_key_dtype=pl.Int64,
            schema_names=["t", "y_other"],
        )
    with pytest.raises(NotImplementedError, match="tested layout"):
        _options.parse(
            ("AsOf", "backward", None),
            False,
            None,
            "_right",
            True,
            left_schema={},
            right_schema={},
            left_key="t",
            right_key="t",
            left_key_dtype=pl.Int64,
            right_key_dtype=pl.Int64,
            schema_names=[],
        )


@pytest.mark.parametrize(
    ("tolerance", "dtype", "expected"),
    [
        (5, pl.Int8, 5),
        (-5, pl.Int16, 5),
        (2**31 - 1, pl.UInt8, 2**31 - 1),
        (2**63 - 1, pl.Int64, 2**63 - 1),
        (2**64 - 1, pl.UInt64, 2**64 - 1),
        (0, pl.UInt32, 0),
        (-3, pl.Datetime("ns"), 3),
        (7, pl.Date, 7),
        (-1.5, pl.Float32, 1.5),
        (3, pl.Float64, 3.0),
    ],
)
def test_tolerances_polars_reads(tolerance, dtype, expected):
    got = _options.tolerance_value(tolerance, dtype)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(
    ("tolerance", "dtype"),
    [
        (2**31, pl.Int32),
        (2**31, pl.Date),
        (-1, pl.UInt64),
        (-1, pl.UInt32),
        (2**32, pl.UInt32),
        (2**63, pl.Int64),
        (2**64, pl.UInt64),
        (1.5, pl.Int64),
        (True, pl.Int64),
        (float("inf"), pl.Float64),
    ],
)
def test_tolerances_polars_1_cannot_read_are_refused(tolerance, dtype):
    with pytest.raises(NotImplementedError, match="tolerance"):
        _options.tolerance_value(tolerance, dtype)


# --------------------------------------------------------------------------- install


def test_install_uninstall_idempotent_and_plain_joins_untouched():
    from cudf_polars.dsl import translate as tr
    from cudf_polars.dsl.ir import Join
    from polars import polars as plrs

    hook.uninstall()
    original = tr._translate_ir.dispatch(plrs._ir_nodes.Join)
    plain = _l().join(_r(), on="g")
    before = translate(plain)[0]
    assert hook.install() and hook.install() and hook.is_installed()
    assert tr._translate_ir.dispatch(plrs._ir_nodes.Join) is not original
    after, errors = translate(plain)
    assert errors == [] and isinstance(after, Join)  # cudf-polars' own node, as before
    assert (after.schema, after.left_on, after.right_on, after.options) == (
        before.schema,
        before.left_on,
        before.right_on,
        before.options,
    )
    hook.uninstall()
    hook.uninstall()
    assert not hook.is_installed()
    assert tr._translate_ir.dispatch(plrs._ir_nodes.Join) is original


def test_enabled_restores_the_previous_state():
    hook.uninstall()
    with hook.enabled() as active:
        assert active and hook.is_installed()
        _ours(_query(pl.Int64, "backward", None, None, True))
    assert not hook.is_installed()
    assert hook.install()
    with hook.enabled():
        pass
    assert hook.is_installed()  # was installed before the block: stays
    hook.uninstall()


def test_import_does_nothing():
    import subprocess
    import sys

    code = (
        "import asofgpu.polars_gpu, sys; from cudf_polars.dsl import translate as tr;"
        "from polars import polars as plrs;"
        "h = tr._translate_ir.dispatch(plrs._ir_nodes.Join);"
        "print(h.__module__, asofgpu.polars_gpu.is_installed())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["cudf_polars.dsl.translate", "False"]


@pytest.mark.usefixtures("hook_warnings_rearmed")
def test_outside_the_tested_versions_install_warns_once_and_does_nothing(monkeypatch):
    hook.uninstall()
    # an untested polars: the installed one is tested (cudf-polars read its version at import)
    monkeypatch.setattr(pl, "__version__", "9.0.0")
    with pytest.warns(hook.AsofgpuHookWarning, match=r"polars 9\.0\.0 is outside the tested"):
        assert hook.install() is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert hook.install() is False  # once
    assert not hook.is_installed()
    assert hook.install(force=True)  # force skips the version gate, not the self-checks
    hook.uninstall()


@pytest.mark.usefixtures("hook_warnings_rearmed")
def test_a_failing_canary_or_self_check_disables_the_hook(monkeypatch):
    """The installed cudf-polars and polars pass both checks: each check meets here what
    it looks for, changed in them (a name gone from cudf-polars, another schema planned)."""
    from cudf_polars.dsl import translate as tr
    from polars import polars as plrs

    hook.uninstall()
    with monkeypatch.context() as changed:  # a cudf-polars without a name the hook uses
        changed.delattr(tr, "set_node")
        with pytest.warns(
            hook.AsofgpuHookWarning, match="cudf-polars internals missing: set_node$"
        ):
            assert hook.install() is False
    assert not hook.is_installed()
    # a polars that plans another schema than the one our node makes
    planned = pl.LazyFrame.collect_schema
    monkeypatch.setattr(
        pl.LazyFrame,
        "collect_schema",
        lambda self: pl.Schema({**planned(self), "more": pl.Int8}),
    )
    original = tr._translate_ir.dispatch(plrs._ir_nodes.Join)
    with pytest.warns(
        hook.AsofgpuHookWarning, match=r"self-check failed: probe schema \[.*\] is not polars'"
    ):
        assert hook.install() is False
    assert tr._translate_ir.dispatch(plrs._ir_nodes.Join) is original  # put back


def test_defers_to_cudf_polars_where_it_translates_asof_joins_itself():
    from cudf_polars.dsl import translate as tr
    from cudf_polars.dsl.ir import Join
    from polars import polars as plrs

    from asofgpu.polars_gpu import _translate

    original = tr._translate_ir.dispatch(plrs._ir_nodes.Join)
    calls = []

    def native(node, translator, schema):  # a cudf-polars that runs "backward" itself
        calls.append(node.options[0][1])
        if node.options[0][1] != "backward":
            raise NotImplementedError("only backward")
        ours = _translate.translate_asof(node, translator, schema)  # its own node kind:
        return Join(
            schema,
            [ours.left_on],
            [ours.right_on],  # stands in for a native one
            ("Left", False, None, "_right", False, "none"),
            *ours.children,
        )

    handler = _translate.make_handler(native, frozenset({"backward"}))
    tr._translate_ir.register(plrs._ir_nodes.Join, handler)
    try:
        back = _quiet(lambda: translate(_query(pl.Int64, "backward", None, None, True)))
        fwd = _quiet(lambda: translate(_query(pl.Int64, "forward", None, None, True)))
        near = _quiet(lambda: translate(_query(pl.Int64, "nearest", None, None, True)))
    finally:
        tr._translate_ir.register(plrs._ir_nodes.Join, original)
    assert isinstance(back[0], Join) and back[1] == []  # cudf-polars' own node
    assert nodes_of(fwd[0], AsofJoin) and fwd[1] == []  # refused natively: ours, no errors
    assert nodes_of(near[0], AsofJoin) and "nearest" not in calls  # not native: not asked


def test_streaming_lowering_broadcasts_the_right_side(installed):
    from cudf_polars.streaming.explain import explain_query

    left, right = _frames(pl.Int64)
    query = left.join_asof(right, on="t", by="g", check_sortedness=False)
    engine = pl.GPUEngine(
        executor="streaming",
        executor_options={
            "min_device_size": 2**34,
            "max_rows_per_partition": 2,
            "dynamic_planning": None,
            "fallback_mode": "raise",
        },
    )  # collapsing both sides would raise
    plan = explain_query(query, engine, physical=True)
    assert "ASOFJOIN" in plan and "REPARTITION" in plan


def _integer_frames():
    left = pl.LazyFrame({"t": [1, 3, 4, 7, 9], "g": [1, 2, 1, 1, 2], "x": [1, 2, 3, 4, 5]})
    right = pl.LazyFrame({"t": [0, 3, 3, 6, 8, 10], "g": [1, 1, 2, 2, 1, 2], "y": [0.5] * 6})
    return left, right


def test_the_streaming_node_prepares_its_right_side_once_per_right_chunk(
    installed, streaming_asof_calls
):
    """The streaming executor calls the node once per left chunk, each time with the right
    side's one chunk anew (a new DataFrame over new pylibcudf columns, on the same memory and
    stream): it is prepared once. Another right chunk (other memory, or another stream) is
    prepared again; so is the right side at every call of the in-memory executor's node."""
    from cudf_polars.streaming.base import PartitionInfo

    from asofgpu.polars_gpu._streaming import lower_asof_join

    calls = streaming_asof_calls
    left, right = _integer_frames()
    node = _ours(left.join_asof(right, on="t", by="g"))
    lowered, _ = lower_asof_join(node, lambda child: (child, {child: PartitionInfo(count=4)}))
    left_schema, right_schema = (child.schema for child in node.children)

    def right_chunk(address=1 << 30, stream=7):
        return calls.chunk(right_schema, 6, address, stream)

    for i in range(4):  # four left chunks, each on its own memory and stream
        left_chunk = calls.chunk(left_schema, 5, (i + 2) << 30, 10 + i)
        result = calls.evaluate(lowered, left_chunk, right_chunk())
        assert result.column_names == list(node.schema) and result.num_rows == 5
    assert len(calls.prepared) == 1
    (first,) = calls.prepared
    assert first.stream == right_chunk().stream  # prepared on the right side's stream
    assert first.right_on.data().ptr == 1 << 30  # its key column "t"

    calls.evaluate(lowered, left_chunk, right_chunk(address=9 << 30))  # other data
    calls.evaluate(lowered, left_chunk, right_chunk(address=9 << 30))
    assert len(calls.prepared) == 2
    calls.evaluate(lowered, left_chunk, right_chunk(address=9 << 30, stream=8))  # moved
    assert len(calls.prepared) == 3

    again, _ = lower_asof_join(node, lambda child: (child, {child: PartitionInfo(count=4)}))
    calls.evaluate(again, left_chunk, right_chunk(address=9 << 30, stream=8))  # a new query
    assert len(calls.prepared) == 4

    for _ in range(2):  # the in-memory executor: one left side per right side
        calls.evaluate(node, left_chunk, right_chunk())
    assert len(calls.prepared) == 6


def test_one_preparation_when_threads_ask_at_once():
    """The streaming executor calls do_evaluate from a pool of threads: the right side's
    preparation is made once, the other threads wait for it and get it."""
    import threading
    import time

    from asofgpu.polars_gpu._right_side import ReusedRightSide

    reused, made = ReusedRightSide(), []

    def prepare():
        made.append(threading.get_ident())
        time.sleep(0.05)  # long enough for every thread to be asking meanwhile
        return object()

    got = []
    threads = [
        threading.Thread(target=lambda: got.append(reused.get("key", prepare))) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1 and len(got) == 8 and len({id(p) for p in got}) == 1
    assert reused.get("other", prepare) is not got[0] and len(made) == 2


# --------------------------------------------------------------------------- on a GPU

ENGINES = {
    "in-memory": lambda: pl.GPUEngine(executor="in-memory", raise_on_fail=True),
    "streaming": lambda: pl.GPUEngine(
        executor="streaming", raise_on_fail=True, executor_options={"max_rows_per_partition": 2}
    ),
}


@pytest.mark.gpu
@pytest.mark.parametrize("executor", list(ENGINES))
@pytest.mark.parametrize(("dtype", "strategy", "tolerance", "by", "coalesce"), MATRIX)
def test_gpu_results_equal_polars_cpu(
    installed, executor, dtype, strategy, tolerance, by, coalesce
):
    for exact in (True, False):
        query = _query(dtype, strategy, tolerance, by, coalesce, allow_exact_matches=exact)
        expected = _quiet(query.collect)
        got = _quiet(lambda: query.collect(engine=ENGINES[executor]()))
        assert_frame_equal(got, expected, check_exact=True)


@pytest.mark.gpu
@pytest.mark.parametrize("executor", list(ENGINES))
def test_gpu_other_shapes_and_polars_errors(installed, executor):
    engine = ENGINES[executor]()
    left, right = _frames(pl.Int64)
    for query in (
        left.join_asof(right, on="t").head(3),
        left.join_asof(right.rename({"t": "u"}), left_on="t", right_on="u", strategy="nearest"),
        left.join_asof(right, left_on=pl.col("t") * 2, right_on="t"),
        left.join_asof(right, on="t", by="g")
        .filter(pl.col("y") > 1)
        .group_by("g", maintain_order=True)
        .agg(pl.col("y").sum()),
        left.join_asof(right.select("t", "g"), on="t", by="g"),
    ):
        # exact, the sum too: y's values are halves, which add to the same float in any order
        assert_frame_equal(
            _quiet(lambda q=query: q.collect(engine=engine)),
            _quiet(query.collect),
            check_exact=True,
        )
    unsorted = left.reverse().join_asof(right, on="t")
    with pytest.raises(pl.exceptions.InvalidOperationError, match="is not sorted"):
        unsorted.collect()
    with pytest.raises(pl.exceptions.InvalidOperationError, match="is not sorted"):
        unsorted.collect(engine=engine)
    got = (
        left.reverse().join_asof(right, on="t", check_sortedness=False).collect(engine=engine)
    )  # asofgpu needs no sorted input: the right rows, in left's order
    assert_frame_equal(got, left.join_asof(right, on="t").collect().reverse(), check_exact=True)


@pytest.mark.gpu
def test_gpu_streaming_prepares_the_right_side_once_per_query(installed, plc_preparations_noted):
    """Many left chunks against the one right chunk: the right side is prepared once a query
    (issue 24, item 6), and every left chunk is joined with that preparation."""
    import numpy as np

    rng = np.random.default_rng(7)
    n_left, n_right = 20_000, 5_000
    left = pl.LazyFrame(
        {
            "t": np.sort(rng.integers(0, 10**6, n_left)),
            "g": rng.integers(0, 20, n_left),
            "x": np.arange(n_left),
        }
    )
    right = pl.LazyFrame(
        {
            "t": np.sort(rng.integers(0, 10**6, n_right)),
            "g": rng.integers(0, 20, n_right),
            "y": rng.random(n_right),
        }
    )
    query = left.join_asof(right, on="t", by="g", strategy="nearest", tolerance=2_000)
    engine = pl.GPUEngine(
        executor="streaming",
        raise_on_fail=True,
        executor_options={"max_rows_per_partition": 2_000},
    )
    expected = _quiet(query.collect)
    noted = plc_preparations_noted
    for queries in (1, 2):  # a new query prepares anew
        got = _quiet(lambda: query.collect(engine=engine))
        assert_frame_equal(got, expected, check_exact=True)
        assert len(noted.prepared) == queries
    assert len(noted.joined) > 2 * 2  # several left chunks a query
