"""Progress of ``asofgpu enrich`` on stderr: a bar on a terminal (rich), log lines otherwise.

``enrich`` reports to an object with four methods: ``log(text)`` for each phase,
``start(total_rows)``, ``update(rows_done)`` as chunks are written and ``stop()``; ``Quiet``
says nothing.
"""

from __future__ import annotations

import sys
import time

from . import _signals


class Quiet:
    """The progress interface ``enrich`` reports to; this one says nothing."""

    def log(self, text: str) -> None: ...
    def start(self, total_rows: int) -> None: ...
    def update(self, rows_done: int) -> None: ...
    def stop(self) -> None: ...


def readable_count(value: float) -> str:
    """Three significant digits with k, M, G: 1.23 M."""
    for size, unit in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if value >= size:
            return f"{value / size:.3g}{unit}"
    return f"{value:.0f}"


def for_stderr(prog: str):
    """A progress bar on a terminal (rich), plain log lines on stderr otherwise."""
    if sys.stderr is None:  # started with it closed (2>&-)
        return Quiet()
    if sys.stderr.isatty():
        try:
            return Bar(prog)
        except ImportError:  # installed without rich
            pass
    return Lines(prog)


class Lines:
    """Log lines to stderr: each phase, then the rows done at every tenth of the file and at
    least every 30 s."""

    def __init__(self, prog: str, every_s: float = 30.0):
        self.prog, self.every_s = prog, every_s

    def log(self, text: str) -> None:
        # One write, line and newline together (print writes them apart): a Ctrl-C between
        # the two left the next message on the same line. A stderr that cannot be written
        # (2>&1 | head, a log on a full disk) loses the line, not the run.
        try:
            if sys.stderr is not None:
                sys.stderr.write(f"{self.prog}: {text}\n")
                sys.stderr.flush()
        except (OSError, ValueError):
            _signals.drop_broken_streams()

    def start(self, total_rows: int) -> None:
        self.total, self.t0 = total_rows, time.perf_counter()
        self.last, self.tenth = self.t0, 1

    def update(self, rows_done: int) -> None:
        now = time.perf_counter()
        share = rows_done / self.total if self.total else 1.0
        if share * 10 < self.tenth and now - self.last < self.every_s:
            return
        self.last, self.tenth = now, int(share * 10) + 1
        rate = rows_done / (now - self.t0) if now > self.t0 else 0.0
        eta = (self.total - rows_done) / rate if rate else 0.0
        self.log(
            f"{rows_done:,} / {self.total:,} rows ({share:.0%}), "
            f"{readable_count(rate)} rows/s, ETA {clock(eta)}"
        )

    def stop(self) -> None:
        pass


class Bar:
    """rich's progress bar on stderr: rows done of total, rows/s, elapsed, ETA."""

    def __init__(self, prog: str):
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            ProgressColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.text import Text

        class Rate(ProgressColumn):
            def render(self, task):
                return Text(f"{readable_count(task.speed or 0.0)} rows/s")

        self.prog = prog
        self.console = Console(stderr=True)
        self.bar = Progress(
            TextColumn("[bold]enrich"),
            BarColumn(),
            TaskProgressColumn(),
            TextColumn("{task.completed:,.0f} / {task.total:,.0f} rows"),
            Rate(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self.task = None

    def log(self, text: str) -> None:
        self.console.print(f"{self.prog}: {text}", highlight=False, markup=False, soft_wrap=True)

    def start(self, total_rows: int) -> None:
        if self.task is not None:  # a run started again: one bar, not two
            self.bar.remove_task(self.task)
        self.task = self.bar.add_task("enrich", total=total_rows)
        self.bar.start()

    def update(self, rows_done: int) -> None:
        self.bar.update(self.task, completed=rows_done)

    def stop(self) -> None:
        self.bar.stop()


def clock(seconds: float) -> str:
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"
