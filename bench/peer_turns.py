"""bench/run.py's parent side: the workers of the jobs on one pair of files, started one at a
time, then taking turns, a timed run each per round; each watched against ``--timeout`` (per
step) and ``--mem-limit``, and stopped and recorded as such when it passes one."""

from __future__ import annotations

import json
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench_plan import Job
from common import ROOT, BenchError
from peer_worker import EVENT

RUN = Path(__file__).resolve().with_name("run.py")  # the worker is ``run.py --worker SPEC``


def _read_events(stream, events: queue.Queue) -> None:
    for line in stream:
        if line.startswith(EVENT):
            events.put(json.loads(line[len(EVENT) :]))
    events.put(None)  # end of output: the worker has exited (or closed stdout)


def _rss(proc) -> int:
    import psutil

    try:
        return proc.memory_info().rss
    except psutil.Error:
        return 0


class WorkerProcess:
    """One job's worker: its events, its limits (``--timeout`` per step, ``--mem-limit``) and
    its record: timings and peak memory, or status 'timeout' / 'memory'."""

    def __init__(self, job: Job, args, check: Path, on_event):
        import psutil

        spec = {
            "system": job.system,
            "prepared": job.prepared,
            "quotes": str(job.dataset.quotes),
            "trades": str(job.trades),
            "order": job.dataset.order,
            "runs": args.runs,
            "check": str(check),
            "corrupt": args.corrupt_for_test == job.system,
        }
        self.job, self.on_event = job, on_event
        self.limit_bytes = args.mem_limit * 2**30
        self.timeout = args.timeout
        self.record = {"status": "ok", "times_s": [], "started_at": [], "page_faults": []}
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [sys.executable, str(RUN), "--worker", json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            cwd=ROOT,
        )
        self.events: queue.Queue = queue.Queue()
        threading.Thread(
            target=_read_events, args=(self.proc.stdout, self.events), daemon=True
        ).start()
        self.watched = psutil.Process(self.proc.pid)

    @property
    def ok(self) -> bool:
        return self.record["status"] == "ok"

    def until(self, wanted: str) -> bool:
        """Take the worker's events until ``wanted``: True then; False when it ran past its
        time or memory (it is stopped, and its record says which)."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                event = self.events.get(timeout=0.25)
            except queue.Empty:  # nothing new: watch the memory and the clock
                if _rss(self.watched) > self.limit_bytes:
                    return self._stop("memory")
                if time.monotonic() > deadline:
                    return self._stop("timeout")
                continue
            if event is None:  # the worker exited before saying what was wanted
                code = self.proc.wait()
                self.stderr.seek(0)
                tail = self.stderr.read()[-3000:]
                raise BenchError(f"{self.job.name}: the worker failed (exit code {code}):\n{tail}")
            # A step that ended past its limit is over time all the same: the clock is read
            # above only after 0.25 s without events, which a fast worker never leaves.
            if time.monotonic() > deadline:
                return self._stop("timeout")
            deadline = time.monotonic() + self.timeout  # the limit is per step
            kind = event.pop("event")
            if kind == "loaded":
                self.record["load_s"] = event["seconds"]
                self.record["loaded_rss_mib"] = event["rss_mib"]
            elif kind == "prepare":
                self.record["prepare_s"] = event["seconds"]
            elif kind == "warmup":
                self.record["warmup_s"] = event["seconds"]
            elif kind == "run":
                self.record["times_s"].append(event["seconds"])
                self.record["started_at"].append(event["at"])  # Unix time: the turns
                # Minor faults in the run: an allocator that handed pages back while the
                # worker waited its turn makes the run fault them in again (bench/idle.py).
                self.record["page_faults"].append(event["faults"])
            elif kind == "done":
                self.record.update(event)
            self.on_event(self.job, kind, event)
            if kind == wanted:
                return True

    def run_once(self) -> bool:
        """One timed run, now."""
        try:
            self.proc.stdin.write("run\n")
            self.proc.stdin.flush()
        except OSError:  # it died while it waited: until() reports how, with its stderr
            pass
        return self.until("run")

    def finish(self) -> dict:
        if self.ok and self.until("done"):
            code = self.proc.wait()
            if code != 0:
                raise BenchError(
                    f"{self.job.name}: the worker exited with code {code} after its runs"
                )
            self.record["median_s"] = statistics.median(self.record["times_s"])
        self.close()
        return self.record

    def _stop(self, status: str) -> bool:
        self.record["status"] = status
        self.close()
        return False

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()


def run_group(jobs: list[Job], args, checks: Path, on_checked, on_event) -> dict[Job, dict]:
    """The jobs on one pair of files: their workers started one at a time (each loads,
    prepares and warms up alone on the machine), each answer handed to
    ``on_checked(job, check)``, then ``--runs`` rounds of one timed run per worker, each
    round begun by the next system. Returns each job's record."""
    workers: list[WorkerProcess] = []
    try:
        for job in jobs:
            check = checks / (job.name.replace(" ", "-") + ".npz")  # one name per job
            workers.append(WorkerProcess(job, args, check, on_event))
            if workers[-1].until("checked"):
                on_checked(job, check)
        for r in range(args.runs):
            turn = [w for w in workers if w.ok]
            if not turn:
                break
            first = r % len(turn)
            for w in turn[first:] + turn[:first]:
                w.run_once()
        return {w.job: w.finish() for w in workers}
    finally:
        for w in workers:
            w.close()
