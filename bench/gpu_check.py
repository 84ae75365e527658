#!/usr/bin/env python3
"""The GPU check (``make gpu-check``): what a machine with an NVIDIA GPU can tell us, in one
run of under 8 minutes, with no network.

Stages, in this order, each in a process of its own with a time box, so that a stage that
fails or hangs is recorded and the next one still runs:

  install  ``pip install --no-deps --no-build-isolation --no-index -e .``, skipped when this
           checkout is installed editable already (the Docker image); editable because
           tests/test_layout.py checks that the installed package imports kernels/ from the tree.
           First, offline and in either case, the wheels in bench/wheelhouse/ (make
           gpu-wheelhouse fetches them on a machine with network): a numpy below 2.5 where
           the machine's is newer (numba-cuda compiles nothing under 2.5), peers it lacks;
  env      the GPU (name, memory, L2, clocks), the driver, the package versions;
  pytest   what the GPU adds to CI's runs: the ``gpu`` tests and every case on the real CUDA
           backend (not the CPU cases or the slow tool runs), in up to 4 processes, one under
           an exclusive compute mode; a test module that imports a package missing here
           (polars, on a machine without it) at its top is left out and named in the report;
  compare  GPU against CPU gather maps on 10M left x 1M right random rows with groups and nulls:
           every strategy, exact and strict, with and without a tolerance, float keys, null
           groups matching each other;
  bench    100M trades x 10M quotes x 5,000 groups generated on the device: prepare, the gather
           map (``join()`` end to end, and the probe kernel alone), a device gather of four
           float64 payload columns, time-sorted and shuffled left, timed with CUDA events (the
           median of several runs after a warm-up); the device copy bandwidth, the byte floor
           (``byte_floor``) and the ratio to it; the CPU backend on the same data;
  enrich   the main job as users run it: ``asofgpu enrich`` as whole processes on a parquet
           day of 10M quotes x 10M trades, ``--device cuda`` and ``--device cpu`` taking
           turns, their outputs compared (gpu_check_enrich.py).

Results: bench/results/gpu_check.md (to read), gpu_check.json (every number), gpu_check.log
(every stage's output) and gpu_check_pytest.xml (JUnit), copied to $OUT too when it is set,
all rewritten after every stage so that a run cut short still leaves what finished. Exit status
1 when any stage failed or ran out of time; the performance goals are reported, not enforced.

``--simulate`` runs the same stages at tiny sizes in numba's CUDA simulator: no GPU needed, and
the times mean nothing (tests/test_gpu_check.py runs it). ``--plant-mismatch`` corrupts one entry
of the first GPU map before it is compared: the test hook that shows the comparison catches it.

The parts, a module each: gpu_check_orchestrator.py (the stages' processes, time boxes and
report files), gpu_check_stage.py (inside a stage's process), gpu_check_setup.py (env,
install), gpu_check_pytest.py (the suite's command and JUnit summary), gpu_check_compare.py,
gpu_check_bench.py, gpu_check_enrich.py and gpu_check_report.py (gpu_check.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its modules, when loaded by path
from gpu_check_bench import stage_bench  # noqa: E402
from gpu_check_compare import stage_compare  # noqa: E402
from gpu_check_enrich import stage_enrich  # noqa: E402
from gpu_check_orchestrator import STAGES, Run  # noqa: E402
from gpu_check_setup import stage_env, stage_install  # noqa: E402
from gpu_check_stage import StageContext, run_stage  # noqa: E402

# The stages that run as Python functions in their process; pytest is a command of its own.
STAGE_FUNCTIONS = {
    "env": stage_env,
    "install": stage_install,
    "compare": stage_compare,
    "bench": stage_bench,
    "enrich": stage_enrich,
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--simulate",
        action="store_true",
        help="tiny sizes in numba's CUDA simulator (no GPU; times mean nothing)",
    )
    parser.add_argument(
        "--plant-mismatch",
        action="store_true",
        help="test hook: corrupt one entry of the first GPU map before comparing",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=450,
        help="seconds for the stages (default 450: with the grace a stopped "
        "stage gets, the run ends within 8 minutes)",
    )
    parser.add_argument(
        "--results",
        help="where the reports go (default bench/results/; a "
        "temporary folder under --simulate); also $OUT when set",
    )
    parser.add_argument(
        "--stages", default=",".join(STAGES), help=f"a comma-separated subset of {','.join(STAGES)}"
    )
    parser.add_argument("--run-stage", choices=sorted(STAGE_FUNCTIONS), help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run_stage:  # inside one stage's process
        ctx = StageContext(args.simulate, args.plant_mismatch, args.deadline)
        return run_stage(STAGE_FUNCTIONS[args.run_stage], Path(args.result), ctx)
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = sorted(set(stages) - set(STAGES))
    if unknown:
        parser.error(f"unknown stage(s) {', '.join(unknown)}; choose from {', '.join(STAGES)}")
    return Run(args).run_all([s for s in STAGES if s in stages])


if __name__ == "__main__":
    sys.exit(main())
