"""The backend fixture: every primitive test runs on python, cpu and cuda.

``cuda`` is the real GPU when one is usable, the CUDA simulator under NUMBA_ENABLE_CUDASIM=1
(set in the command, before numba is imported), and skipped otherwise. The simulator runs
every thread in Python: keep its inputs small (the ``small`` fixture says how small).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from asofgpu._backend import cuda_usable, cudasim_enabled

# The fixtures that replace private names, for what is not here (tests/fakes.py).
pytest_plugins = ["fakes"]

HUGE = 1 << 62  # a threshold no input reaches: ``thresholds(name=HUGE)`` forces the other path

BACKENDS = ["python", "cpu", "cuda"]


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "cuda: runs on the cuda backend (the device fixture's "
        "cuda case; marked at collection): make gpu-check selects them",
    )


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "gpu" in item.keywords and not cuda_usable():
            item.add_marker(pytest.mark.skip(reason="needs a real NVIDIA GPU"))
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("device") == "cuda":
            item.add_marker(pytest.mark.cuda)


@pytest.fixture(params=BACKENDS)
def device(request):
    name = request.param
    if name == "cuda" and not (cudasim_enabled() or cuda_usable()):
        pytest.skip(
            "no GPU and NUMBA_ENABLE_CUDASIM is not set (make test runs the simulator pass)"
        )
    if name != "cuda" and cudasim_enabled():
        pytest.skip("the simulator pass runs only the cuda backend")
    return name


@pytest.fixture
def small(device):
    """A size limit for random inputs: the simulator and the python backend are slow."""
    return 40 if device == "python" or (device == "cuda" and cudasim_enabled()) else 400


def to_host(gmap) -> np.ndarray:
    """A gather map from any backend as numpy."""
    if hasattr(gmap, "get"):
        return gmap.get()
    return np.asarray(gmap)


def unhashable_extension_type(storage: pa.DataType, name: str) -> pa.ExtensionType:
    """A Python extension type over ``storage``, named ``name``, that defines no hash (as
    pyarrow's own examples define none): a type that can key no dict or cache. Each call
    makes a class of its own (``type(...)`` to register or check it)."""

    class Unhashable(pa.ExtensionType):
        __hash__ = None

        def __init__(self):
            super().__init__(storage, name)

        def __arrow_ext_serialize__(self):
            return b""

        @classmethod
        def __arrow_ext_deserialize__(cls, storage, serialized):
            return cls()

    return Unhashable()


def key_column(kind, values: list, form: str):
    """A key column of ``kind`` (``.arrow`` type, ``.dtype``) from Python values (None: null)
    as numpy (masked pyarrow when it has nulls), pyarrow, or a two-chunk ChunkedArray."""
    if form == "chunked":
        half = len(values) // 2
        return pa.chunked_array(
            [pa.array(values[:half], type=kind.arrow), pa.array(values[half:], type=kind.arrow)],
            type=kind.arrow,
        )
    if form == "arrow":
        return pa.array(values, type=kind.arrow)
    nulls = [v is None for v in values]
    arr = np.array([0 if v is None else v for v in values], dtype=kind.dtype)
    return pa.array(arr, mask=np.array(nulls, dtype=bool)) if any(nulls) else arr


@pytest.fixture(params=["copied", "encoded"])
def left_columns(request, thresholds):
    """Both ways LEFT's columns reach OUT: copied as they are (``_copy``; here whatever the
    size of its row groups, which tests keep small), or read and encoded again."""
    copied = request.param == "copied"
    thresholds(copy_min_group_rows=1 if copied else HUGE, copy_min_group_bytes=HUGE)
    return request.param


@pytest.fixture
def thresholds():
    """``asofgpu._backend.walks.overridden`` for the rest of a test, the one switch that forces
    a path: ``thresholds(parallel_min_rows=0)``. Each call's changes are undone at the end."""
    import contextlib

    from asofgpu._backend import walks

    with contextlib.ExitStack() as stack:
        yield lambda **changes: stack.enter_context(walks.overridden(**changes))


@pytest.fixture
def heeding_interrupts():
    """Ctrl-C, SIGTERM and SIGHUP acted on in this test's process, as in a run in a
    terminal's foreground: a test process may have started ignoring them (a shell script's
    background job, as CI may run, or ``nohup``), and enrich leaves a signal its process
    ignores ignored."""
    import signal

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    heeded = {
        signal.SIGINT: signal.default_int_handler,
        signal.SIGTERM: signal.SIG_DFL,
        signal.SIGHUP: signal.SIG_DFL,
    }
    for s, handler in before.items():
        if handler is signal.SIG_IGN:
            signal.signal(s, heeded[s])
    yield
    for s, handler in before.items():
        signal.signal(s, handler)
