"""The tests' only replacements of asofgpu's private names, as fixtures (a pytest plugin of
tests/conftest.py). Each stands for what a test cannot have for real: hardware that is not
here (a GPU, pylibcudf's device, the memory for a column's worth of rows), a fault no real
input makes at the point the test needs, or state kept once a process; its docstring says
which, and why. Everything else is seen as it runs: ``walks.recorded()``, public results,
attributes read (docs/architecture.md, "Faking what is not here").

Names are imported inside the fixtures: this module loads with every test file, on every
venv, pylibcudf or not.
"""

from __future__ import annotations

import contextlib
import types
import warnings

import pytest


class Reached(Exception):
    """Raised in place of a device step: every check before it passed."""


# --------------------------------------------------------------------------- a GPU


@pytest.fixture
def low_occupancy_launch(monkeypatch):
    """The cuda backend's probe kernel replaced by one whose launch warns as numba-cuda's
    launch configuration does under 128 blocks (0.30.4: ``_LaunchConfiguration``), and which
    runs nothing; the launches are noted as ``(config, number of arguments)`` in the list
    returned, and the warnings filters in force at each launch in its ``filters``. The
    simulator's launch does not warn, and there may be no GPU."""
    from asofgpu._backend import cuda

    class Launches(list):
        pass

    launched = Launches()
    launched.filters = []

    class Kernel:
        def __getitem__(self, config):
            launched.filters.append(warnings.filters)
            if config[0] < 128:
                warnings.warn(  # highlighted, as numba-cuda 0.30.4's was on a lent H200
                    f"\x1b[1m\x1b[1mGrid size {config[0]} will likely result in GPU "
                    f"under-utilization due to low occupancy.\x1b[0m\x1b[0m",
                    stacklevel=2,
                )
            return lambda *args: launched.append((config, len(args)))

    monkeypatch.setattr(cuda, "probe_kernel", lambda is_float, simulated: Kernel())
    return launched


@pytest.fixture
def probe_launch_types(monkeypatch):
    """A set that notes, at each ``PythonBackend.probe`` (which then runs as it is), the
    types of the arguments the CUDA launch would pass: numpy arrays as ``dtype[::1]``,
    scalars as numba types them. A GPU's kernel would show them in the signatures it
    compiled; without one, the launch that every backend shares is watched here."""
    import numpy as np
    from numba import typeof

    from asofgpu._backend import PythonBackend

    launched: set[tuple[str, ...]] = set()
    probe = PythonBackend.probe

    def noting(self, is_float, left_keys, left_groups, right, how, out, time_ordered=None, **kw):
        args = (left_keys, left_groups, *right, *how, out)  # as the CUDA launch passes them
        launched.add(
            tuple(f"{a.dtype}[::1]" if isinstance(a, np.ndarray) else str(typeof(a)) for a in args)
        )
        return probe(self, is_float, left_keys, left_groups, right, how, out, time_ordered, **kw)

    monkeypatch.setattr(PythonBackend, "probe", noting)
    return launched


# --------------------------------------------------------------------------- pylibcudf's device


@pytest.fixture
def device_steps_reached(monkeypatch):
    """asofgpu.plc with its device steps replaced: a right side's preparation does nothing,
    and a join raises ``Reached`` where it would first touch the device (its stream). Without
    a GPU, pylibcudf's columns hold no data; every check runs before the device work."""
    import asofgpu.plc as front

    def reached(stream):
        raise Reached

    monkeypatch.setattr(front.AsofJoin, "_prepare", lambda self, *args: None)
    monkeypatch.setattr(front, "_stream", reached)
    return front


@pytest.fixture
def plc_columns_on_the_host(monkeypatch):
    """asofgpu.plc making its INT32 map columns without a device: pylibcudf's
    ``Column.from_cuda_array_interface`` (which needs a GPU) gives back the array it is
    given. The list returned notes the stream of each column made."""
    import asofgpu.plc as front

    made = []

    def from_cuda_array_interface(array, stream):
        made.append(stream)
        return array

    column = types.SimpleNamespace(from_cuda_array_interface=from_cuda_array_interface)
    monkeypatch.setattr(front, "_plc", lambda: types.SimpleNamespace(Column=column))
    return made


class _Memory:
    """Device memory at an address, by the CUDA array interface: nothing reads it."""

    def __init__(self, address: int, size: int):
        self.__cuda_array_interface__ = {
            "data": (address, False),
            "shape": (size,),
            "typestr": "|u1",
            "strides": None,
            "version": 3,
        }


class _Stream:
    """A CUDA stream handle, by the CUDA stream protocol: nothing runs on it."""

    def __init__(self, handle: int):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


@pytest.fixture
def streaming_asof_calls(monkeypatch):
    """asofgpu.polars_gpu's node called as cudf-polars' streaming executor calls it, without a
    device. pylibcudf makes columns over memory it does not read, and rmm wraps stream handles
    it does not use; a preparation, a join and a gather need a GPU, so ``asofgpu.plc``'s
    ``AsofJoin`` and ``gather`` are replaced: a preparation is noted in ``prepared`` (its right
    key column and stream), a join gives a map of the left key's length, a gather columns of
    the map's length, over memory nothing reads.

    ``chunk(schema, rows, address, stream)`` is a chunk as the executor's actor hands it to the
    node (``chunk_to_frame``): a new DataFrame over new pylibcudf columns, on the memory at
    ``address``, and ``evaluate(node, left, right)`` calls ``do_evaluate`` as that actor does,
    with a context whose ``stream_ordered_after`` gives each call a stream of its own (ordering
    nothing: there is no device). The executor itself needs a GPU (rapidsmpf)."""
    import pylibcudf as plc
    from cudf_polars.containers import Column, DataFrame
    from rmm.pylibrmm.stream import Stream

    import asofgpu.plc as front

    prepared = []

    def column(dtype, rows: int, address: int):
        return plc.Column(
            dtype, rows, plc.gpumemoryview(_Memory(address, 8 * rows)), None, 0, 0, []
        )

    class AsofJoin:
        def __init__(self, right_by, right_on, nulls_equal=None, stream=None):
            prepared.append(types.SimpleNamespace(right_on=right_on, stream=stream))

        def join(self, left_by, left_on, *args, stream=None, **kwargs):
            return column(plc.DataType(plc.TypeId.INT32), left_on.size(), 1 << 40)

    def gather(table, gather_map, stream=None, mr=None):
        rows = gather_map.size()
        return plc.Table([column(c.type(), rows, 1 << 41) for c in table.columns()])

    monkeypatch.setattr(front, "AsofJoin", AsofJoin)
    monkeypatch.setattr(front, "gather", gather)

    def chunk(schema, rows: int, address: int, stream: int):
        columns = [
            Column(column(dtype.plc_type, rows, address + i * (1 << 16)), name=name, dtype=dtype)
            for i, (name, dtype) in enumerate(schema.items())
        ]
        return DataFrame(columns, stream=Stream(_Stream(stream)))

    handles = iter(range(1 << 30, 1 << 31))

    class Context:
        @contextlib.contextmanager
        def stream_ordered_after(self, *frames):
            yield Stream(_Stream(next(handles)))

    def evaluate(node, left, right):
        return node.do_evaluate(*node._non_child_args, left, right, context=Context())

    return types.SimpleNamespace(prepared=prepared, chunk=chunk, evaluate=evaluate)


@pytest.fixture
def plc_preparations_noted(monkeypatch):
    """``asofgpu.plc.AsofJoin`` as it is, noting the stream of each preparation and of each
    join in the lists ``prepared`` and ``joined`` of the namespace returned: how often a query
    the GPU engine runs prepares its right side cannot be seen from outside it."""
    import asofgpu.plc as front

    noted = types.SimpleNamespace(prepared=[], joined=[])

    class Noting(front.AsofJoin):
        def __init__(self, *args, stream=None, **kwargs):
            noted.prepared.append(stream)
            super().__init__(*args, stream=stream, **kwargs)

        def join(self, *args, stream=None, **kwargs):
            noted.joined.append(stream)
            return super().join(*args, stream=stream, **kwargs)

    monkeypatch.setattr(front, "AsofJoin", Noting)
    return noted


@pytest.fixture
def pairs_reached(monkeypatch):
    """``Windows.pairs`` raises ``Reached``: the range join's maps for a column's worth of
    rows (2**31 - 1) take tens of GiB to make, more than a test machine holds."""
    from asofgpu.window import Windows

    def reached(self):
        raise Reached

    monkeypatch.setattr(Windows, "pairs", reached)


@pytest.fixture
def on_device(monkeypatch):
    """A function that sends the next ``asofgpu enrich`` runs down ``_job._on_device`` as
    ``--device cuda`` on a GPU with pylibcudf would, with ``fake`` in the place of
    ``device_io.enrich``: none of the three is here, so only what needs them is faked.

    The runs pass ``--device cpu``: under ``--device cuda`` the join itself asks for a GPU,
    where a rollback's host pipeline must join (on the cpu here, as the same code does on a
    GPU). ``wanted`` then stands for ``--device cuda``, the dry run's backend name for the
    GPU it would have found (the dry run itself still runs, on the cpu), and
    ``libcudf_refusal`` for pylibcudf importing; ``device_io_refusal`` decides for real."""
    from asofgpu.enrich import _device_io as device_io
    from asofgpu.enrich import _job

    dry_run = _job.dry_run

    def on_a_gpu(*args) -> str:
        dry_run(*args)
        return "cuda"

    def use(fake) -> None:
        monkeypatch.setattr(device_io, "wanted", lambda options: True)
        monkeypatch.setattr(_job, "dry_run", on_a_gpu)
        monkeypatch.setattr(device_io, "libcudf_refusal", lambda options: None)
        monkeypatch.setattr(device_io, "enrich", fake)

    return use


# --------------------------------------------------------------------------- faults


def dropped_interrupt() -> None:
    """SIGINT raised inside a ctypes callback: ctypes drops the KeyboardInterrupt and goes on."""
    import ctypes
    import signal

    def body():
        signal.raise_signal(signal.SIGINT)
        return None  # the handler runs at a bytecode boundary, inside the callback

    ctypes.CFUNCTYPE(None)(body)()


@pytest.fixture
def failing_gather_at(monkeypatch):
    """A function ``(n, error, check)``: the n-th gather of enrich's chunks calls
    ``check()`` (what the test asserts mid-run), then raises ``error``, or sends it to this
    process when it is a signal (whose handler raises), or, when it is ``"dropped"``, sends
    SIGINT inside a callback from C, which drops what the handler raises (as when numba's
    compiler calls back through ctypes), and goes on. It returns the list of the rows each
    gather was given. No input fails a run between two chunks, and a signal from outside
    lands at no chunk in particular."""
    import os
    import signal

    from asofgpu.enrich import _attach

    def fail(n: int, error, check):
        calls = []
        real = _attach.gather

        def gather(table, gmap):
            calls.append(len(gmap))
            if len(calls) == n:
                check()
                if error == "dropped":
                    dropped_interrupt()
                    return real(table, gmap)
                if isinstance(error, signal.Signals):
                    os.kill(os.getpid(), error)  # os.kill runs the handler before it returns
                    raise AssertionError(f"{error.name} was sent and the run went on")
                raise error
            return real(table, gmap)

        monkeypatch.setattr(_attach, "gather", gather)
        return calls

    return fail


@pytest.fixture
def interrupted_after_commit(monkeypatch):
    """Ctrl-C once enrich has put OUT in place, while it sums up (its peak memory read)."""
    from asofgpu.enrich import _job

    def peak_rss():
        raise KeyboardInterrupt

    monkeypatch.setattr(_job, "peak_rss", peak_rss)


@pytest.fixture
def bench_answers_differ(monkeypatch):
    """bench/frontends.py's calls of every case give 1 for asofgpu and 2 for the library it
    is measured against. They agree on every input the bench makes: a wrong answer can only
    be injected. Needs bench/ on sys.path, as its tests have it."""
    import frontends

    monkeypatch.setattr(
        frontends,
        "_calls",
        lambda case, trades, quotes: (lambda: 1, lambda: 2, lambda a, b: a == b),
    )


# --------------------------------------------------------------------------- once a process


@pytest.fixture
def hook_warnings_rearmed(monkeypatch):
    """asofgpu.polars_gpu warns once a process for each reason ``install()`` gives up: the
    reasons already warned of are forgotten for this test, so that its warning comes
    whatever ran before it in the process."""
    import asofgpu.polars_gpu as hook

    monkeypatch.setattr(hook, "_warned", set())


def exit_of_a_child_forked_while_held(locks, in_child) -> int:
    """The exit code of a child forked while another thread holds ``locks``: 0 when
    ``in_child()`` (run in the child, under a 20 s alarm) returns true. The holding thread
    does not exist in the child, so a lock it held there stays held unless reset."""
    import os
    import signal
    import threading

    inside, leave = threading.Event(), threading.Event()

    def hold():
        with contextlib.ExitStack() as stack:
            for lock in locks:
                stack.enter_context(lock)
            inside.set()
            leave.wait(30)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert inside.wait(10)
    try:
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 1
            try:
                signal.alarm(20)
                code = 0 if in_child() else 1
            finally:
                os._exit(code)
    finally:
        leave.set()
        holder.join(10)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)
