"""The GPU probe kernel through the real CUDA compiler, without a GPU (issue 24).

numba's CUDA simulator runs kernels as Python, so a typing error, a call numba cannot lower
for the device, or float64 arithmetic in an integer kernel would first show on a GPU. Here
numba-cuda's own compiler (NVVM, from the nvidia wheels of ``numba-cuda[cu13]``, which the
``test`` extra installs) compiles the kernel to PTX for every argument type a launch passes,
for sm_80 (A100) and sm_90 (H100, H200); the second test checks, on the python backend that
shares ``Backend.probe``, that launches pass only those types.
"""

from __future__ import annotations

import functools
import re
import types

import numpy as np
import pyarrow as pa
import pytest

from asofgpu import _backend, asof_join

if _backend.cudasim_enabled():
    pytest.skip("the simulator replaces numba.cuda's compiler", allow_module_level=True)

cuda = pytest.importorskip("numba.cuda")

KEYS = {"int64": False, "uint64": False, "float64": True}  # a key's values, and is it float
WIDTHS = ("int32", "int64")  # row numbers and map entries: int64 from 2**31 right rows on
TARGETS = ((8, 0), (9, 0))


def _signature(key: str, width: str) -> tuple[str, ...]:
    """The kernel's argument types: the left keys and groups, the ``Right``'s fields, the
    ``Options``' and the map, as ``CudaBackend.probe`` passes them."""
    tol = "float64" if KEYS[key] else "uint64"
    return (
        f"{key}[::1]",
        "int32[::1]",
        "int64[::1]",
        f"{key}[::1]",
        f"{width}[::1]",
        f"{width}[::1]",
        "int64",
        "bool",
        "bool",
        tol,
        f"{tol}[::1]",
        f"{tol}[::1]",
        "int64",
        "int64",
        f"{width}[::1]",
    )


@functools.cache
def _compiler_missing() -> str | None:
    def touch(out):
        out[0] = 1

    try:
        cuda.compile_ptx(touch, "void(int32[::1])", cc=TARGETS[0])
    except Exception as exc:  # noqa: BLE001 - whatever keeps NVVM from loading
        return f"{type(exc).__name__}: {exc}"
    return None


@pytest.fixture
def target(monkeypatch, request):
    """Device functions compile for the current device's compute capability; without a GPU
    there is none, so the one under test stands in for it."""
    missing = _compiler_missing()
    if missing:
        pytest.skip(
            f"numba-cuda's NVVM is not installed ({missing[:200]}); pip install 'numba-cuda[cu13]'"
        )
    import numba.cuda.dispatcher as dispatcher

    monkeypatch.setattr(  # there is no current device without a GPU
        dispatcher,
        "get_current_device",
        lambda: types.SimpleNamespace(compute_capability=request.param),
    )
    return request.param


@pytest.mark.parametrize("target", TARGETS, indirect=True, ids=lambda cc: f"sm{cc[0]}{cc[1]}")
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("key", KEYS)
def test_the_probe_kernel_compiles_for_every_type_a_launch_passes(target, key, width):
    signature = "void(" + ", ".join(_signature(key, width)).replace("bool", "boolean") + ")"
    ptx, _ = cuda.compile_ptx(_backend.cuda_probe_source(KEYS[key]), signature, cc=target)
    assert f".target sm_{target[0]}{target[1]}" in ptx
    assert ".entry" in ptx
    if not KEYS[key]:
        doubles = sorted(set(re.findall(r"\b[\w.]+\.f64\b", ptx)))
        assert not doubles, f"the {key} kernel does float64 arithmetic: {doubles}"


def test_launches_pass_only_the_types_compiled_above(probe_launch_types):
    """Every backend launches through ``Backend.probe``: on the python backend, each
    argument's type for every kind of key, with and without groups, a tolerance (one, a
    column of them, a calendar one) and each strategy, is one of the signatures compiled
    above (int32 maps; int64 ones need 2**31 right rows). ``probe_launch_types``
    (tests/fakes.py) notes them: no GPU here compiles a signature for each."""
    left, right = np.array([1, 5, 9]), np.array([0, 4, 8])
    keys = [
        (left, right),
        (left.astype(np.uint32), right.astype(np.uint32)),
        (left.astype(np.float32), right.astype(np.float64)),
        (left.astype("datetime64[s]"), right.astype("datetime64[ms]")),
        (
            pa.array(left.astype(np.int32), pa.date32()),
            pa.array(right.astype(np.int32), pa.date32()),
        ),
    ]
    for left_on, right_on in keys:
        temporal = not isinstance(left_on, np.ndarray) or left_on.dtype.kind == "M"
        tolerance = np.timedelta64(3, "s") if temporal else 3
        column = np.array([tolerance] * 3)
        tolerances = (tolerance, column, "1mo") if temporal else (tolerance, column)
        for strategy in ("backward", "forward", "nearest"):
            asof_join(left_on, right_on, strategy=strategy, device="python")
            for tolerance in tolerances:
                asof_join(
                    left_on,
                    right_on,
                    np.array(["a", "b", "a"]),
                    np.array(["a", "a", "b"]),
                    strategy=strategy,
                    tolerance=tolerance,
                    allow_exact_matches=False,
                    device="python",
                )
    compiled = {_signature(key, "int32") for key in KEYS}
    assert probe_launch_types <= compiled, probe_launch_types - compiled
    assert {sig[0] for sig in probe_launch_types} == {f"{key}[::1]" for key in KEYS}


@pytest.mark.parametrize("target", TARGETS[1:], indirect=True, ids=lambda cc: f"sm{cc[0]}{cc[1]}")
@pytest.mark.parametrize("key", KEYS)
def test_the_window_kernels_compile(target, key):
    """The window join's two kernels (issue 21), for each key kind and each kind of value a
    reduction reads: the windows with one reach and with a reach per row, the reductions
    through rows and in the prepared order."""
    from asofgpu._backend.cuda import window_kernel_sources

    bounds, reduces = window_kernel_sources(KEYS[key])
    reach = "float64" if KEYS[key] else "uint64"
    window_signature = (
        f"void({key}[::1], int32[::1], int64[::1], {key}[::1], int32[::1], int32[::1], "
        f"{reach}, {reach}, boolean, {reach}[::1], {reach}[::1], int64[::1], int64[::1])"
    )
    ptx, _ = cuda.compile_ptx(bounds, window_signature, cc=target)
    assert ".entry" in ptx
    for values, keys in (("float64", "float64"), ("int64", "int64"), ("uint64", "int64")):
        reduce_signature = (
            f"void(int64[::1], int64[::1], int32[::1], {values}[::1], {keys}[::1], boolean[::1], "
            f"int64[::1], int64[::1], int64[::1], int64[::1], {keys}[::1], {keys}[::1], "
            f"{values}[::1], int64[::1])"
        )
        ptx, _ = cuda.compile_ptx(reduces, reduce_signature, cc=target)
        assert ".entry" in ptx


@pytest.mark.parametrize("target", TARGETS[1:], indirect=True, ids=lambda cc: f"sm{cc[0]}{cc[1]}")
def test_the_calendar_kernel_compiles(target):
    """The reaches of a calendar tolerance (issue 22), one thread a key, integer only."""
    from asofgpu._backend.cuda import calendar_kernel_source

    for keys in ("int64",):  # every key's values arrive as int64 (ordered_key), dates too
        signature = (
            f"void({keys}[::1], uint64[::1], boolean, int64, int64, int64, int64, int64, int64, "
            "int64, int64)"
        )
        ptx, _ = cuda.compile_ptx(calendar_kernel_source(), signature, cc=target)
        assert ".entry" in ptx
        doubles = sorted(set(re.findall(r"\b[\w.]+\.f64\b", ptx)))
        assert not doubles, f"the calendar kernel does float64 arithmetic: {doubles}"


@pytest.mark.parametrize("target", TARGETS, indirect=True, ids=lambda cc: f"sm{cc[0]}{cc[1]}")
def test_the_group_lookup_kernel_compiles_for_every_width_it_reads(target):
    """A left by-key given on the device, found among the right's distinct keys (int64 bits):
    integers of every width read as they are (``_device_groups.searchable``: uint64 and the
    rest arrive as int64, bools as uint8), widened in integer arithmetic only."""
    from asofgpu._backend.cuda import groups_kernel_source

    for values in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"):
        signature = f"void({values}[::1], int64[::1], int32[::1])"
        ptx, _ = cuda.compile_ptx(groups_kernel_source(), signature, cc=target)
        assert ".entry" in ptx
        doubles = sorted(set(re.findall(r"\b[\w.]+\.f64\b", ptx)))
        assert not doubles, f"the {values} lookup does float64 arithmetic: {doubles}"


def test_the_group_lookup_passes_only_the_widths_compiled_above():
    """Every dtype a device by-key may have reaches the kernel as one of the widths above."""
    from asofgpu._device_groups import is_fixed_width, searchable

    compiled = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"}
    dtypes = [np.dtype(c) for c in np.typecodes["AllInteger"] + np.typecodes["Float"] + "?"]
    dtypes += [np.dtype("datetime64[ns]"), np.dtype("timedelta64[s]")]
    for dtype in dtypes:
        if is_fixed_width(dtype) and dtype.itemsize <= 8:
            assert str(searchable(np.zeros(2, dtype), dtype, np).dtype) in compiled, dtype
