"""`make test` runs pytest --doctest-modules over asofgpu/, which imports every module. The
polars_gpu modules that subclass or call cudf-polars need it; the main environment has none.
(This file sits at the root, outside the package, so that no conftest ships in the wheel.)"""

import importlib.util

collect_ignore = (
    []
    if importlib.util.find_spec("cudf_polars")
    else [f"asofgpu/polars_gpu/{name}.py" for name in ("_node", "_translate", "_streaming")]
)
