"""What the bench scripts share: row counts and sizes on the command line, progress lines,
the machine, versions and date a report names, its heading, and files (results, cached
parquet) written whole or not at all.

>>> parse_count("2.5M"), label(2_500_000), label(1500), parse_size("10Mx200K")
(2500000, '2500K', '1500', (10000000, 200000))
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The four quote columns of asofgpu.marketdata's day: the payload every bench join carries.
PAYLOAD = ["bid", "ask", "bid_size", "ask_size"]
_UNITS = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9}


class BenchError(Exception):
    """A failure that makes the results meaningless: a wrong answer, a crashed worker."""


def parse_count(text: str) -> int:
    """'1M', '100K', '2.5M', '2000', '1_000_000' -> a positive int."""
    body = text.strip().upper().replace("_", "")
    unit = body[-1:] if body[-1:] in ("K", "M", "G") else ""
    try:
        value = float(body[: len(body) - len(unit)]) * _UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a row count such as 1M, 100K or 2000"
        ) from None
    if value < 1 or value != int(value):
        raise argparse.ArgumentTypeError(f"{text!r} must be a whole number of rows, at least 1")
    return int(value)


def parse_size(text: str, example: str = "10Mx10M") -> tuple[int, int]:
    """'10Mx10M' -> (quotes, trades); ``example`` is the one an error names."""
    pieces = re.split("[xX×]", text.strip())
    if len(pieces) != 2:
        quotes, trades = example.split("x")
        raise argparse.ArgumentTypeError(
            f"{text!r} is not QUOTESxTRADES, for example {example} ({quotes} quotes, "
            f"{trades} trades)"
        )
    return parse_count(pieces[0]), parse_count(pieces[1])


def label(n: int) -> str:
    """The shortest exact name of a row count: 1M, 100K, 1500."""
    for unit in ("G", "M", "K"):
        if n % _UNITS[unit] == 0:
            return f"{n // _UNITS[unit]}{unit}"
    return str(n)


def seconds_text(s: float) -> str:
    """A duration as a report shows it: 0.123 s, 12.3 s."""
    return f"{s:.3f} s" if s < 10 else f"{s:.1f} s"


def progress(text: str, stream=None) -> None:
    """A progress line, stamped with the time of day, on ``stream`` (default stdout)."""
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=stream or sys.stdout, flush=True)


def utc_minute() -> str:
    """Now, in UTC to the minute: the date a report carries."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def machine() -> dict:
    import psutil

    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(
                (line.split(":", 1)[1].strip() for line in f if line.startswith("model name")),
                model,
            )
    except OSError:
        pass
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
    }


def versions(packages: tuple[str, ...]) -> dict:
    found = {}
    for package in packages:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = None
    return found


def commit() -> str | None:
    """The checked-out commit, marked when tracked files have local changes."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + (" with local changes" if dirty.strip() else "")


def alternating_rounds(ours, theirs, runs: int) -> dict[str, list[float]]:
    """The times of ``runs`` rounds of two calls, each side called twice a round back to
    back and the second call timed (it finds its own arrays written, as a process calling
    again and again does), the sides taking turns to go first."""
    times = {"ours": [], "theirs": []}
    for r in range(runs):
        for side in ("ours", "theirs") if r % 2 == 0 else ("theirs", "ours"):
            call = ours if side == "ours" else theirs
            call()
            start = time.perf_counter()
            call()
            times[side].append(time.perf_counter() - start)
    return times


def heading(report: dict) -> list[str]:
    """The lines under a report's title: date, machine, load, commit; then the versions. From
    the report's ``date``, ``machine``, ``load_average``, ``commit`` and ``versions``."""
    m = report["machine"]
    return [
        f"{report['date']} · {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB · "
        f"load average {report['load_average'][0]:.2f} at the start, "
        f"{report['load_average'][1]:.2f} at the end · "
        f"commit {report['commit'] or 'unknown'}",
        "",
        "Versions: "
        + ", ".join(f"{k} {val}" for k, val in report["versions"].items() if val)
        + f", Python {m['python']}.",
    ]


def atomic_write(path: Path, write) -> None:
    """``write(tmp_path)``, then rename over ``path``: a failure leaves the old file as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's is 0600: as a plain open() would make it
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_parquet(table, path: Path) -> None:
    """A parquet file whole or not at all: a cached data set is never a torn one."""
    import pyarrow.parquet as pq

    atomic_write(path, lambda tmp: pq.write_table(table, tmp))


def write_report(out: Path, stem: str, report: dict, text: str) -> None:
    """``stem``.json (the report) and ``stem``.md (its table) in ``out``, each whole or not
    at all."""
    atomic_write(out / f"{stem}.json", lambda tmp: tmp.write_text(json.dumps(report, indent=1)))
    atomic_write(out / f"{stem}.md", lambda tmp: tmp.write_text(text))
