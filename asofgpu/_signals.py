"""The signals that end the ``asofgpu`` command as Ctrl-C does, and the codes it exits with.

SIGINT (Ctrl-C), SIGTERM (a kill) and SIGHUP (the terminal closed: a dropped ssh session)
are raised as ``KeyboardInterrupt``, ``Terminated`` and ``HungUp``, so that a run's clean-up
runs for each (no hidden files left), and the process exits 128 + the signal's number, as a
shell reports a process the signal ended: 130, 143, 129. Light on purpose:
``asofgpu.__main__`` installs the handlers before the command's modules import.

>>> import signal
>>> [exit_code(raised_for(s)()) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]
[130, 143, 129]
"""

from __future__ import annotations

import os
import signal
import sys

SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that the same clean-up runs."""

    signum = signal.SIGTERM


class HungUp(Terminated):
    """SIGHUP: the terminal the command ran in closed."""

    signum = getattr(signal, "SIGHUP", signal.SIGTERM)


_RAISED = {signal.SIGINT: KeyboardInterrupt, signal.SIGTERM: Terminated}
if hasattr(signal, "SIGHUP"):
    _RAISED[signal.SIGHUP] = HungUp


def raised_for(signum: int) -> type[KeyboardInterrupt]:
    """The exception a run raises for ``signum``, one of ``SIGNALS``."""
    return _RAISED[signum]


def exit_code(interrupt: KeyboardInterrupt) -> int:
    """128 + the number of the signal that raised ``interrupt`` (a plain one: SIGINT's)."""
    return 128 + int(getattr(interrupt, "signum", signal.SIGINT))


received: type[KeyboardInterrupt] | None = None  # the last one ``raise_interrupt`` raised
dropped = False  # a callback from C dropped an interrupt since the last one was raised


def raise_interrupt(signum, frame):
    """A handler: raise the signal's exception where the main thread is, and note it: one
    dropped where it was raised (in a callback from C, a ``__del__``) is raised again when
    the run begins (``enrich._interrupts.handling``)."""
    global received, dropped
    if received is not None and not dropped:  # one is on its way out: a second stops nothing
        return
    received, dropped = raised_for(signum), False
    raise received


def quiet(hook):
    """``hook`` (a ``sys.unraisablehook``) but for interrupts: one that a callback from C
    dropped is raised again (``received``, ``enrich._interrupts.check``), not printed."""

    def quieted(unraisable):
        global dropped
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            dropped = True  # the next signal is raised again: this one stopped nothing
        else:
            hook(unraisable)

    return quieted


def heeded() -> list[int]:
    """The SIGNALS this process does not ignore: one started ignoring SIGINT (a background
    job of a shell script: ``asofgpu enrich ... &``) or SIGHUP (under ``nohup``) goes on
    ignoring it, as Python does."""
    return [s for s in SIGNALS if signal.getsignal(s) is not signal.SIG_IGN]


def say(line: str) -> None:
    """``line`` on stderr, where there still is one: after SIGHUP the terminal may be gone,
    and the exit code must not be lost to a failed write. What stdout or stderr could not
    write stays in its buffer, and Python's flush of both at exit would fail again, and make
    the exit code 120: a stream that fails is swapped for ``os.devnull`` (for good: a
    program that called ``cli.main`` has lost that stream already)."""
    _write(line, "stderr")


def tell(line: str) -> None:
    """``line`` on stdout, as ``say`` writes on stderr: a summary that cannot be written (a
    reader gone from the pipe, a full disk) does not undo the work it reports, nor change
    the exit code."""
    _write(line, "stdout")


def _write(line: str, name: str) -> None:
    try:
        stream = getattr(sys, name)
        if stream is not None:  # (None: started with it closed, 2>&-)
            print(line, file=stream, flush=True)
    except (OSError, ValueError):  # (ValueError: a stream closed)
        pass
    drop_broken_streams()


def drop_broken_streams() -> None:
    """Swap a stdout or stderr that cannot be flushed for ``os.devnull`` (see ``say``)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            setattr(sys, name, open(os.devnull, "w"))  # noqa: SIM115 - open until the exit
