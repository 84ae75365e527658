"""The Join translator that cudf-polars dispatches to, with as-of joins taken over.

cudf-polars turns polars' plan into its own through ``cudf_polars.dsl.translate._translate_ir``,
a ``functools.singledispatch`` function with one handler per polars node class. ``make_handler``
wraps the handler cudf-polars registered for ``Join``: as-of joins become our ``AsofJoin`` node,
every other join goes to the original handler untouched.
"""

from __future__ import annotations

from cudf_polars.dsl import expr
from cudf_polars.dsl.translate import set_node, translate_named_expr

from . import _options
from ._node import AsofJoin


def is_asof(node) -> bool:
    how = node.options[0]
    return isinstance(how, tuple) and len(how) > 0 and how[0] == "AsOf"


def _column_name(named) -> str | None:
    """The key's column name when the key is a plain column, else None (an expression).
    A cast around a column is polars' own supercast of ``on`` keys of different integer
    widths: still a column (had the user written the cast, polars would not coalesce)."""
    value = named.value
    while isinstance(value, expr.Cast):
        (value,) = value.children
    return value.name if isinstance(value, expr.Col) else None


def translate_asof(node, translator, schema) -> AsofJoin:
    """polars' as-of Join node -> AsofJoin, or NotImplementedError (CPU fallback)."""
    how, nulls_equal, zlice, suffix, coalesce, *_ = node.options
    if len(node.left_on) != 1 or len(node.right_on) != 1:
        msg = "asofgpu: an as-of join on several keys runs on the CPU"
        raise NotImplementedError(msg)
    # As in cudf-polars' own Join handler: key dtypes depend on the input, so each side is
    # translated with its input node current.
    with set_node(translator.visitor, node.input_left):
        left = translator.translate_ir(n=None)
        (left_on,) = [
            translate_named_expr(translator, n=e, schema=left.schema) for e in node.left_on
        ]
    with set_node(translator.visitor, node.input_right):
        right = translator.translate_ir(n=None)
        (right_on,) = [
            translate_named_expr(translator, n=e, schema=right.schema) for e in node.right_on
        ]
    options = _options.parse(
        how,
        nulls_equal,
        zlice,
        suffix,
        coalesce,
        left_schema={k: v.polars_type for k, v in left.schema.items()},
        right_schema={k: v.polars_type for k, v in right.schema.items()},
        left_key=_column_name(left_on),
        right_key=_column_name(right_on),
        left_key_dtype=left_on.value.dtype.polars_type,
        right_key_dtype=right_on.value.dtype.polars_type,
        schema_names=list(schema),
    )
    return AsofJoin(schema, left_on, right_on, options, left, right)


def make_handler(original, native_strategies: frozenset[str]):
    """The Join handler to register: ours for as-of joins, ``original`` for the rest.

    ``native_strategies``: the strategies the original handler translated by itself when
    probed at install; those go to cudf-polars first, and to us only if it refuses the
    particular join.
    """

    def join_handler(node, translator, schema):
        if not is_asof(node):
            return original(node, translator, schema)
        if node.options[0][1] in native_strategies:
            n_errors = len(translator.errors)
            try:
                return original(node, translator, schema)
            except Exception:  # refused by cudf-polars: forget its partial errors, use ours
                del translator.errors[n_errors:]
        return translate_asof(node, translator, schema)

    join_handler.asofgpu_original = original  # what uninstall() puts back
    return join_handler
