"""kernels/ imports as asofgpu.kernels from a wheel, an editable install and a plain checkout;
``import asofgpu`` pulls in no front-end library."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Every public name loaded too: ``import asofgpu`` alone loads none of the library's modules
WHERE = (
    "import asofgpu.kernels.probe as p, asofgpu; [getattr(asofgpu, n) for n in asofgpu.__all__]; "
    "print(p.__file__); print(asofgpu.__file__)"
)


def _python(code: str, cwd: Path, pythonpath: str | None = None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, check=True, capture_output=True, text=True
    )
    return out.stdout.split()


def test_plain_checkout_imports_kernels_from_the_tree():
    kernels, package = _python(WHERE, cwd=ROOT)
    assert Path(kernels).resolve() == ROOT / "kernels" / "probe.py"
    assert Path(package).parent.resolve() == ROOT / "asofgpu"


def test_editable_install_imports_kernels_from_the_tree(tmp_path):
    kernels, _ = _python(WHERE, cwd=tmp_path)  # outside the checkout: the installed package
    assert Path(kernels).resolve() == ROOT / "kernels" / "probe.py"


@pytest.mark.slow  # builds a wheel with pip
def test_wheel_ships_kernels_as_asofgpu_kernels(tmp_path):
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
    )
    if build.returncode:
        pytest.fail(f"pip wheel failed:\n{build.stderr}")
    (wheel,) = (tmp_path / "dist").glob("asofgpu-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for module in ("__init__", "search", "probe"):
        assert f"asofgpu/kernels/{module}.py" in names
    assert not any(n.startswith("kernels/") for n in names)
    assert not [n for n in names if n.endswith("conftest.py") or n.startswith("tests/")]
    assert "asofgpu/py.typed" in names  # type checkers read the annotations
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    kernels, package = _python(WHERE, cwd=tmp_path, pythonpath=str(site))
    assert Path(kernels).parent.resolve() == (site / "asofgpu" / "kernels").resolve()
    assert Path(package).parent.resolve() == (site / "asofgpu").resolve()


def test_import_pulls_in_no_front_end_library():
    code = (  # every public name loaded, which loads the library's modules
        "import sys, asofgpu; [getattr(asofgpu, n) for n in asofgpu.__all__]; "
        "assert 'asofgpu.join' in sys.modules; print(' '.join(sorted(m for m in "
        "('pandas', 'polars', 'cudf', 'pylibcudf', 'dask', 'cupy', 'numba.cuda') "
        "if m in sys.modules)) or 'none')"
    )
    assert _python(code, cwd=ROOT) == ["none"]


def test_a_join_of_numpy_arrays_imports_no_pandas(tmp_path):
    """pyarrow's ``pa.array`` of a numpy array imports pandas first (0.25 s of the first
    join); keys, by columns and times with NaT go through their buffers instead, and a join
    of tables read from parquet needs none either."""
    code = (
        "import sys, numpy as np, pyarrow.parquet as pq, asofgpu as ag\n"
        "n = 100_000\n"
        "m = ag.AsofJoin(np.arange(n) * 2, device='cpu').join(np.arange(n) * 2 + 1)\n"
        "assert (np.asarray(m)[:3] == [0, 1, 2]).all()\n"
        "t = np.array(['2026-12-07T10:00', 'NaT', '2026-12-07T10:05'], 'datetime64[ns]')\n"
        "m = ag.AsofJoin(t, np.array([1, 1, 2]), device='cpu').join(t, np.array([1, 2, 2]))\n"
        "assert np.asarray(m).tolist() == [0, ag.NO_MATCH, 2], m\n"
        "table = pq.ParquetFile(sys.argv[1]).read()\n"
        "ag.join_asof(table, table, on='t', by='g', strategy='nearest', device='cpu')\n"
        "print('pandas' in sys.modules)\n"
    )
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 100_000
    pq.write_table(pa.table({"t": np.arange(n), "g": np.arange(n) % 7}), tmp_path / "t.parquet")
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "t.parquet")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and done.stdout == "False\n", done.stderr


def test_import_loads_the_library_at_first_use():
    """``import asofgpu`` loads none of its modules, nor numpy and pyarrow: the command
    answers a Ctrl-C from its first moments (``asofgpu/__main__.py``). Each public name is
    its module's object, and ``gather`` stays the function once its module, ``_gather``, is
    imported by another (an import binds a submodule's name in its package)."""
    code = (
        "import sys, asofgpu; loaded = sorted(m for m in sys.modules if m.startswith("
        "('asofgpu.', 'numpy', 'pyarrow', 'numba'))); print(' '.join(loaded) or 'none')"
    )
    assert _python(code, cwd=ROOT) == ["none"]
    code = (
        "import importlib, asofgpu, asofgpu.table, asofgpu.window\n"
        "assert asofgpu.__all__ == list(asofgpu._PUBLIC)\n"
        "assert asofgpu.join.AsofJoin is asofgpu.AsofJoin  # the modules __init__ once loaded\n"
        "for name in asofgpu.__all__:\n"
        "    module, attribute = asofgpu._PUBLIC[name]\n"
        "    want = getattr(importlib.import_module(module, 'asofgpu'), attribute)\n"
        "    assert getattr(asofgpu, name) is want, name\n"
        "from asofgpu import *\n"
        "print(gather.__module__, callable(asofgpu.gather), sorted(asofgpu.__all__) == "
        "sorted(n for n in dir(asofgpu) if n in asofgpu._PUBLIC))\n"
        "try:\n"
        "    asofgpu.no_such_name\n"
        "except AttributeError as exc:\n"
        "    print(exc)\n"
    )
    assert _python(code, cwd=ROOT) == (
        "asofgpu._gather True True module 'asofgpu' has no attribute 'no_such_name'".split()
    )


@pytest.mark.parametrize(
    ("module", "missing", "message"),
    [
        (
            "polars",
            "polars",
            "asofgpu.polars needs polars (No module named 'polars'). "
            "Hint: pip install 'asofgpu[polars]'",
        ),
        (
            "dask",
            "dask",
            "asofgpu.dask needs dask and pandas (No module named 'dask'). "
            "Hint: pip install 'asofgpu[dask]'",
        ),
        (
            "dask",
            "pandas",
            "asofgpu.dask needs dask and pandas (No module named 'pandas'). "
            "Hint: pip install 'asofgpu[dask]'",
        ),
    ],
)
def test_a_front_end_without_its_library_names_the_extra(module, missing, message):
    """On a plain ``pip install asofgpu`` the front ends' libraries are absent: importing one
    said only "No module named 'polars'"."""
    code = (
        "import importlib.abc, sys\n"
        "class Missing(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        f"        if name.split('.')[0] == {missing!r}:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Missing())\n"
        "try:\n"
        f"    import asofgpu.{module}\n"
        "except ModuleNotFoundError as exc:\n"
        "    print(exc, '|', exc.name)\n"
    )
    assert _python(code, cwd=ROOT) == f"{message} | {missing}".split()


@pytest.mark.parametrize(
    ("module", "function"),
    [
        ("join", "asof_join"),
        ("table", "join_asof"),
        ("_gather", "gather"),
        ("pandas", "merge_asof"),
        ("cudf", "merge_asof"),
        ("dask", "merge_asof"),
        ("polars", "join_asof"),
    ],
)
def test_the_public_functions_are_annotated(module, function):
    """Every parameter and the result of the public entry points carry annotations (read
    from the source: the cuDF front end does not import here)."""
    import ast

    tree = ast.parse((ROOT / "asofgpu" / f"{module}.py").read_text())
    (node,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function]
    arguments = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
    assert [a.arg for a in arguments if a.annotation is None] == []
    assert node.returns is not None
