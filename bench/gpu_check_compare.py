"""The GPU check's compare stage: GPU against CPU gather maps on random rows with groups and
nulls, for every strategy, exact and strict, with and without a tolerance, float keys, and null
groups matching each other; any entry that differs fails the stage."""

from __future__ import annotations

import time

import numpy as np

from gpu_check_stage import Recorder, StageContext


def stage_compare(ctx: StageContext, rec: Recorder) -> None:
    import pyarrow as pa

    import asofgpu as ag
    from asofgpu._backend import get_backend

    gpu = get_backend("cuda")
    s = ctx.sizes
    n_left, n_right, n_groups = s.compare_left, s.compare_right, s.compare_groups
    rng = np.random.default_rng(20261130)
    span = 4 * n_right  # about one right key in four values: ties and exact matches occur

    def nullable(values):  # 1% nulls
        return pa.array(values, mask=rng.random(len(values)) < 0.01)

    def floats(values):  # the float path: NaN (a value above +inf, not a null) and -0.0
        out = values / 4.0
        out[rng.random(len(out)) < 0.001] = np.nan
        out[out == 0] = -0.0
        return out

    right_on = rng.integers(0, span, n_right)
    left_on = rng.integers(-span // 50, span + span // 50, n_left)
    right_by = nullable(rng.integers(0, n_groups, n_right, dtype=np.int32))
    # Some left groups the right side lacks: those rows never match.
    left_by = nullable(rng.integers(0, n_groups + max(1, n_groups // 10), n_left, dtype=np.int32))
    inputs = {
        "int64": (nullable(right_on), nullable(left_on)),
        "float64": (nullable(floats(right_on)), nullable(floats(left_on))),
    }
    rec["data"] = {
        "left_rows": n_left,
        "right_rows": n_right,
        "groups": n_groups,
        "null_share": 0.01,
        "key_span": span,
    }
    tol = 3 * span // n_right
    cases = [
        ("int64", "unequal", dict(strategy=st, allow_exact_matches=ex, tolerance=t))
        for st in ("backward", "forward", "nearest")
        for ex in (True, False)
        for t in (None, tol)
    ]
    cases += [
        ("float64", "unequal", dict(strategy=st, tolerance=t))
        for st in ("backward", "forward", "nearest")
        for t in (None, tol / 4.0)
    ]
    cases += [
        ("int64", "unequal", dict(strategy="nearest", nearest_tie="backward")),
        ("int64", "equal", dict(strategy="backward")),
        ("int64", "equal", dict(strategy="nearest", tolerance=tol)),
    ]
    prepared = {}
    failed = False
    for i, (key, null_equality, options) in enumerate(cases):
        if (key, null_equality) not in prepared:
            r_on = inputs[key][0]
            prepared[key, null_equality] = tuple(
                ag.AsofJoin(r_on, right_by, null_equality=null_equality, device=device)
                for device in ("cuda", "cpu")
            )
        on_gpu, on_cpu = prepared[key, null_equality]
        l_on = inputs[key][1]
        t0 = time.perf_counter()
        gmap = gpu.to_host(on_gpu.join(l_on, left_by, **options))
        t1 = time.perf_counter()
        cmap = on_cpu.join(l_on, left_by, **options)
        t2 = time.perf_counter()
        if ctx.plant_mismatch and i == 0:
            row = len(gmap) // 2
            gmap[row] = 1 if gmap[row] == 0 else 0
        differ = np.flatnonzero(gmap != cmap)
        case = {
            "key": key,
            "null_equality": null_equality,
            "options": options,
            "gpu_dtype": str(gmap.dtype),
            "cpu_dtype": str(cmap.dtype),
            "matched": int((cmap != ag.NO_MATCH).sum()),
            "mismatches": len(differ),
            "gpu_s": t1 - t0,
            "cpu_s": t2 - t1,
        }
        if len(differ):
            row = int(differ[0])
            case["first_mismatch"] = {"row": row, "gpu": int(gmap[row]), "cpu": int(cmap[row])}
        if len(differ) or gmap.dtype != cmap.dtype:
            failed = True
        rec.append("cases", case)
        print(f"compare {key} {null_equality} {options}: {len(differ)} mismatches", flush=True)
    rec["status"] = "failed" if failed else "passed"
