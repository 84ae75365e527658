"""The GPU check's orchestrator: the stages in order, each in a process of its own with a time
box cut from the budget (SIGINT at its end, SIGKILL after a grace), their output shown and
logged, and the reports rewritten after every stage here and in $OUT."""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import ROOT
from gpu_check_pytest import junit_summary, pytest_command
from gpu_check_report import render_markdown
from gpu_check_stage import plain

SCRIPT = Path(__file__).resolve().with_name("gpu_check.py")  # a stage: --run-stage NAME
DEFAULT_RESULTS = ROOT / "bench" / "results"
# install first: wheels it brings (bench/wheelhouse/: numpy below 2.5, which numba-cuda needs)
# change what env reads and finds usable.
STAGES = ("install", "env", "pytest", "compare", "bench", "enrich")
# Seconds: each stage's time box (None: whatever is left), and the least a stage is still
# worth starting with (the stages after one keep that much of the budget back for themselves).
# (compare: 83.5 s of a 90 s box on the H200's first run, compiling the CPU's kernels cold)
BOX = {"env": 30, "install": 60, "pytest": 210, "compare": 150, "bench": None, "enrich": 150}
LEAST = {"env": 10, "install": 20, "pytest": 60, "compare": 40, "bench": 120, "enrich": 60}
GRACE_S = 15  # after SIGINT at the time limit, how long a stage may take to write its results
REPORT_FILES = ("gpu_check.md", "gpu_check.json", "gpu_check.log", "gpu_check_pytest.xml")


class Run:
    """One check: the stages given, in order, within ``--budget`` seconds; its report."""

    def __init__(self, args):
        self.simulate = args.simulate
        self.plant_mismatch = args.plant_mismatch
        self.results = (
            Path(args.results)
            if args.results
            else (
                Path(tempfile.gettempdir()) / "asofgpu-gpu-check-simulated"
                if args.simulate
                else DEFAULT_RESULTS
            )
        )
        self.results.mkdir(parents=True, exist_ok=True)
        self.out = Path(os.environ["OUT"]) if os.environ.get("OUT") else None
        self.started = time.time()
        self.deadline = self.started + args.budget
        self.log_path = self.results / "gpu_check.log"
        self.log_path.write_text("")
        self.junit = self.results / "gpu_check_pytest.xml"
        self.junit.unlink(missing_ok=True)
        self.report = {
            "meta": {
                "started": _utc(self.started),
                "budget_s": args.budget,
                "simulated": self.simulate,
                "root": str(ROOT),
                "host": platform.node(),
                "argv": sys.argv[1:],
            },
            "stages": {},
        }
        self.env = dict(
            os.environ,
            PYTHONUNBUFFERED="1",
            PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
        )
        if self.simulate:
            self.env["NUMBA_ENABLE_CUDASIM"] = "1"
        else:  # a stray setting would quietly turn the real check into a simulated one
            self.env.pop("NUMBA_ENABLE_CUDASIM", None)

    def log(self, text: str) -> None:
        print(text, flush=True)
        with self.log_path.open("a") as f:
            f.write(text + "\n")

    def execute(self, cmd: list[str], limit: float) -> tuple[int | None, bool]:
        """Run a command with its output shown and logged; at the limit, SIGINT (pytest and
        the stages then write what they have), SIGKILL after a grace. (rc, timed out)."""
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,
        )

        def pump():
            with self.log_path.open("a") as f:
                for line in proc.stdout:
                    sys.stdout.write(line)
                    f.write(line)
                    f.flush()  # a run killed from outside still leaves its log
            sys.stdout.flush()

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        timed_out = False
        try:
            proc.wait(timeout=limit)
        except KeyboardInterrupt:  # Ctrl-C here: the stage runs in a session of its own
            self._signal(proc, signal.SIGKILL)
            raise
        except subprocess.TimeoutExpired:
            timed_out = True
            self._signal(proc, signal.SIGINT)
            try:
                proc.wait(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                self._signal(proc, signal.SIGKILL)
                proc.wait()
        reader.join(timeout=10)
        return proc.returncode, timed_out

    @staticmethod
    def _signal(proc, sig) -> None:
        try:
            os.killpg(proc.pid, sig)  # the stage and its own children (pytest's workers)
        except ProcessLookupError:
            pass

    def run_all(self, stages: list[str]) -> int:
        for i, name in enumerate(stages):
            left = self.deadline - time.time()
            later = sum(LEAST[n] for n in stages[i + 1 :])
            box = min(left if BOX[name] is None else BOX[name], left - later)
            entry = {"status": "skipped", "box_s": round(box, 1)}
            self.report["stages"][name] = entry
            if box < LEAST[name] / 2:
                entry["note"] = f"not started: {left:.0f} s of the budget left"
                self.log(f"==== {name}: skipped, {left:.0f} s left")
                self.write()
                continue
            self.log(f"==== {name} (time box {box:.0f} s) {_utc(time.time())}")
            t0 = time.time()
            if name == "pytest":
                self.pytest_stage(entry, box)
            else:
                self.python_stage(name, entry, box)
            entry["seconds"] = round(time.time() - t0, 1)
            if entry["status"] == "timeout":
                entry["note"] = f"stopped at its {box:.0f} s time box; what it finished is kept"
            self.log(f"==== {name}: {entry['status']} in {entry['seconds']} s")
            self.write()
        self.report["meta"]["finished"] = _utc(time.time())
        self.report["meta"]["seconds"] = round(time.time() - self.started, 1)
        failed = [n for n, e in self.report["stages"].items() if e["status"] != "passed"]
        self.report["meta"]["result"] = "failed: " + ", ".join(failed) if failed else "passed"
        self.write()
        print("\n" + self.markdown(), flush=True)
        return 1 if failed else 0

    def markdown(self) -> str:
        try:
            return render_markdown(self.report)
        except Exception as exc:  # noqa: BLE001 - the JSON beside it holds every number
            return (
                f"# asofgpu GPU check: {self.report['meta']['started']}\n\nThe report could "
                f"not be rendered ({type(exc).__name__}: {exc}); gpu_check.json holds the "
                f"results, gpu_check.log the output.\n"
            )

    def python_stage(self, name: str, entry: dict, box: float) -> None:
        result = self.results / f".gpu_check_{name}.json"
        result.unlink(missing_ok=True)
        cmd = [
            sys.executable,
            str(SCRIPT),
            "--run-stage",
            name,
            "--result",
            str(result),
            "--deadline",
            str(time.time() + box),
        ]
        if self.simulate:
            cmd.append("--simulate")
        if self.plant_mismatch:
            cmd.append("--plant-mismatch")
        rc, timed_out = self.execute(cmd, box)
        if result.exists():
            try:
                entry.update(json.loads(result.read_text()))
            except ValueError:  # cut short as it was written (a kill)
                entry["error"] = f"its result file could not be read: {result.read_text()[-500:]!r}"
            result.unlink()
        entry["rc"] = rc
        if timed_out:
            entry["status"] = "timeout"
        elif rc != 0 and entry.get("status") in (None, "running", "skipped", "passed"):
            entry["status"] = "failed"  # it died before it could say so (a crash, a kill)

    def pytest_stage(self, entry: dict, box: float) -> None:
        cmd, left_out = pytest_command(self.simulate, self.junit)
        entry["command"] = shlex.join(cmd)
        entry["left_out"] = left_out
        rc, timed_out = self.execute(cmd, box)
        entry["rc"] = rc
        entry["junit"] = junit_summary(self.junit)
        entry["status"] = "timeout" if timed_out else "passed" if rc == 0 else "failed"

    def write(self) -> None:
        """The reports, rewritten in full after every stage, here and in $OUT: the JSON first,
        and a markdown that says so when the report could not be rendered (a stage's entry
        in a shape the renderer did not foresee must not lose the run's results)."""
        (self.results / "gpu_check.json").write_text(
            json.dumps(self.report, indent=1, default=plain)
        )
        (self.results / "gpu_check.md").write_text(self.markdown())
        if self.out:
            self.out.mkdir(parents=True, exist_ok=True)
            for name in REPORT_FILES:
                if (self.results / name).exists():
                    shutil.copyfile(self.results / name, self.out / name)


def _utc(t: float) -> str:
    moment = datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")
