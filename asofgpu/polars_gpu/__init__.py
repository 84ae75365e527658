"""Run polars' ``join_asof`` on the GPU engine (cudf-polars) through asofgpu.

>>> import polars as pl
>>> import asofgpu.polars_gpu
>>> asofgpu.polars_gpu.install()  # doctest: +SKIP
True
>>> trades.join_asof(quotes, on="time", by="sym").collect(engine="gpu")  # doctest: +SKIP

cudf-polars has no as-of join: a plan holding one runs wholly on the CPU under
``engine="gpu"``. After ``install()`` every as-of join cudf-polars is handed becomes an asofgpu
node (``asofgpu.plc`` on cudf-polars' stream and memory pool); the rest of the plan is
cudf-polars' as before. ``uninstall()`` undoes it; ``with enabled():`` does both around a block.
Importing this module changes nothing.

Safety: ``install()`` does nothing (and warns once) outside the polars and cudf-polars
versions tested, or when a self-check of cudf-polars' private names or of a tiny translated
plan fails. Joins asofgpu cannot run exactly as polars does (other key dtypes, float or
out-of-range tolerances, float or categorical by-keys, ...) are refused while the plan is
translated, so polars runs the query on the CPU with its usual fallback warning: never an
error at execution. Where cudf-polars itself translates an as-of join, it keeps it.
"""

from __future__ import annotations

import inspect
import threading
import warnings
from contextlib import contextmanager

__all__ = ["AsofgpuHookWarning", "enabled", "install", "is_installed", "uninstall"]

# Tested: polars 1.44.2 with cudf-polars 26.10.2. polars >= 1.43.1 shows as-of options to
# cudf-polars at all; cudf-polars 26.10 is the first release allowing such a polars.
POLARS_VERSIONS = ((1, 44), (1, 45))  # [low, high)
CUDF_POLARS_VERSIONS = ((26, 10), (26, 12))
VISITOR_MAJOR = 14  # polars' NodeTraverser IR version; the AsOf tuple arrived in (14, 5)

_lock = threading.Lock()
_handler = None  # our registered Join handler while installed
_warned: set[str] = set()
_streaming_registered = False


class AsofgpuHookWarning(UserWarning):
    """``install()`` left polars' GPU engine as it was; the message says why."""


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(
            f"asofgpu.polars_gpu not installed: {message}", AsofgpuHookWarning, stacklevel=3
        )


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())  # "02", "0rc1" -> 2, 0
        parts.append(int(digits or 0))
    return tuple(parts)


def _outside(version: tuple[int, ...], window) -> bool:
    low, high = window
    return not (low <= version[: len(low)] and version[: len(high)] < high)


def _gate(*, check_versions: bool = True) -> str | None:
    """Why the hook must not be installed here, or None."""
    try:
        import cudf_polars
        import polars as pl
    except ImportError as exc:
        return f"cudf-polars is not importable ({exc}). Hint: pip install 'asofgpu[cudf-polars]'"
    if check_versions:
        if _outside(_version(pl.__version__), POLARS_VERSIONS):
            return (
                f"polars {pl.__version__} is outside the tested versions {_window(POLARS_VERSIONS)}"
            )
        if _outside(_version(cudf_polars.__version__), CUDF_POLARS_VERSIONS):
            return (
                f"cudf-polars {cudf_polars.__version__} is outside the tested versions "
                f"{_window(CUDF_POLARS_VERSIONS)}"
            )
    visitor = pl.LazyFrame()._ldf.visit().version()
    if visitor[0] != VISITOR_MAJOR or visitor < (VISITOR_MAJOR, 5):
        return f"polars' plan visitor version {visitor} is not {VISITOR_MAJOR}.5 or later"
    return canary()


def _window(window) -> str:
    (lo, hi) = (".".join(map(str, v)) for v in window)
    return f">={lo},<{hi}"


def canary() -> str | None:
    """The private cudf-polars names the hook relies on, checked by shape: a problem, or None."""
    try:
        from cudf_polars.dsl import expr, ir, translate
        from cudf_polars.dsl.utils.reshape import broadcast  # noqa: F401
        from polars import polars as plrs
    except ImportError as exc:
        return f"a cudf-polars or polars internal moved ({exc})"
    dispatch = getattr(translate._translate_ir, "dispatch", None)
    if dispatch is None or not hasattr(translate._translate_ir, "register"):
        return "cudf_polars.dsl.translate._translate_ir is no longer a singledispatch function"
    join = getattr(getattr(plrs, "_ir_nodes", None), "Join", None)
    if join is None or dispatch(join) is dispatch(object):
        return "cudf-polars has no translator registered for polars' Join node"
    missing = [
        name
        for module, name in (
            (translate, "set_node"),
            (translate, "translate_named_expr"),
            (translate, "Translator"),
            (expr, "Col"),
            (ir, "IR"),
            (ir, "IRExecutionContext"),
        )
        if not hasattr(module, name)
    ]
    if not hasattr(getattr(ir, "IRExecutionContext", None), "stream_ordered_after"):
        missing.append("IRExecutionContext.stream_ordered_after")
    if "context" not in inspect.signature(getattr(ir.IR, "evaluate", lambda: None)).parameters:
        missing.append("IR.evaluate(..., context=...)")  # it calls do_evaluate(..., context=)
    if missing:
        return f"cudf-polars internals missing: {', '.join(missing)}"
    return None


def is_installed() -> bool:
    """Whether as-of joins are being translated to asofgpu now."""
    return _handler is not None and _current_join_handler() is _handler


def _current_join_handler():
    from cudf_polars.dsl.translate import _translate_ir
    from polars import polars as plrs

    return _translate_ir.dispatch(plrs._ir_nodes.Join)


def _register(handler) -> None:
    from cudf_polars.dsl.translate import _translate_ir
    from polars import polars as plrs

    _translate_ir.register(plrs._ir_nodes.Join, handler)  # replaces, and clears the cache


def install(*, force: bool = False) -> bool:
    """Translate as-of joins of polars' GPU engine to asofgpu from now on.

    Parameters
    ----------
    force : bool
        Skip the version gates (not the self-checks): for trying an untested polars or
        cudf-polars. Results are checked only for the tested versions.

    Returns
    -------
    bool
        True when the hook is active (also when it already was); False when it was not
        installed, with an ``AsofgpuHookWarning`` saying why (once per reason).
    """
    global _handler, _streaming_registered
    with _lock:
        if is_installed():
            return True
        problem = _gate(check_versions=not force)
        if problem:
            _warn_once(problem)
            return False
        original = _current_join_handler()
        try:  # a cudf-polars internal that changed must disable the hook, never break a program
            from . import _translate
            from ._selfcheck import native_strategies, self_check

            handler = _translate.make_handler(original, native_strategies())
            _register(handler)
            problem = self_check()
        except Exception as exc:
            problem = f"{type(exc).__name__}: {exc}"
        if problem:
            _register(original)
            _warn_once(f"its self-check failed: {problem}")
            return False
        _handler = handler
        if not _streaming_registered:
            try:  # optional: without it the streaming executor runs the join as one partition
                from . import _streaming
            except ImportError:
                pass
            else:
                _streaming.register()
                _streaming_registered = True
        return True


def uninstall() -> None:
    """Give as-of joins back to cudf-polars (which runs them on the CPU). Safe to repeat."""
    global _handler
    with _lock:
        if _handler is None:
            return
        if _current_join_handler() is _handler:
            _register(_handler.asofgpu_original)
        else:  # someone registered over us: leave theirs, which may wrap ours
            warnings.warn(
                "asofgpu.polars_gpu.uninstall(): cudf-polars' Join translator was "
                "replaced after install(); leaving it in place",
                AsofgpuHookWarning,
                stacklevel=2,
            )
        _handler = None


@contextmanager
def enabled(*, force: bool = False):
    """``install()`` for the block, then ``uninstall()`` if it was not installed before.

    Yields whether the hook is active.
    """
    before = is_installed()
    active = install(force=force)
    try:
        yield active
    finally:
        if active and not before:
            uninstall()
