"""`make test` runs pytest --doctest-modules over asofgpu/, which imports every module. The
polars_gpu modules that subclass or call cudf-polars need it; the main environment has none.
(This file sits at the root, outside the package, so that no conftest ships in the wheel.)

The cpu backend's tests test its compiled kernels: a small join would otherwise run the python
backend's plain-Python ones (``walks.compiles``), which the python backend's tests cover, until
the test process had spent a second on them. tests/test_interpreted.py turns them back on
(``walks.overridden``).
"""

import contextlib
import importlib.util

from asofgpu._backend import walks

collect_ignore = (
    []
    if importlib.util.find_spec("cudf_polars")
    else [f"asofgpu/polars_gpu/{name}.py" for name in ("_node", "_translate", "_streaming")]
)

_COMPILED = contextlib.ExitStack()


def pytest_configure(config):
    _COMPILED.enter_context(walks.overridden(interpret_max_rows=0))


def pytest_unconfigure(config):
    _COMPILED.close()
