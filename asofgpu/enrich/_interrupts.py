"""Ctrl-C, SIGTERM and SIGHUP in ``asofgpu enrich``: never lost, and never half of a commit.

Python raises ``KeyboardInterrupt`` wherever the main thread happens to be, and two places
went wrong. A callback from C drops it: while numba compiles a kernel, llvmlite calls back
into Python through ctypes, which prints an exception raised there and goes on, so a run
interrupted then wrote OUT and exited 0. And the renames that put OUT in place: an interrupt
between replacing OUT and noting it replaced left the new folder in place, the old one
aside, and said that nothing was written.

``handling`` (the command's, around the whole run) raises an interrupt for a signal and
records it, so that ``check`` (each LEFT chunk, and before the commit) raises one that a
callback dropped, as does the next signal, and the run's end; its quiet
``sys.unraisablehook`` keeps the dropped one off stderr. A signal while one is on its way out
is let be: the clean-up the first set off finishes.
``committing`` holds the signals (``asofgpu._signals``) off while OUT is put in place (one
that came meanwhile is raised once it is), and refuses to start when one was dropped.
Outside ``handling`` (a program calling ``enrich``), nothing is installed; ``committing``
still holds the signals off around the renames.

>>> with handling() as run:
...     run.interrupted is None
True
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from dataclasses import dataclass

from .. import _signals
from .._signals import SIGNALS, HungUp, Terminated, heeded, raised_for

__all__ = ["SIGNALS", "HungUp", "Terminated", "check", "committing", "handling"]


@dataclass
class State:
    interrupted: type[KeyboardInterrupt] | None = None  # the last signal's, once raised
    committed: bool = False  # OUT was put in place whole


_state = State()


def _raise(signum, frame):
    if _state.interrupted is not None and not _signals.dropped:
        # The run is ending already (a Ctrl-C pressed twice): raised again, the interrupt
        # stopped the clean-up it was in, and a spill folder stayed behind. Unless a
        # callback from C dropped the first: then this one is raised, as the first was.
        return
    _state.interrupted, _signals.dropped = raised_for(signum), False
    raise _state.interrupted


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def handling():
    """SIGINT, SIGTERM and SIGHUP raised as ``KeyboardInterrupt``, ``Terminated`` and
    ``HungUp`` and recorded; one raised inside a callback from C is not printed (``check``
    raises it again). One the command's own handler raised before (while its modules
    imported: ``asofgpu.__main__``) and that was dropped is raised at once."""
    global _state
    if not _on_main_thread():  # signals reach the main thread only
        yield _state
        return
    _state = State()
    early, _signals.received = _signals.received, None
    _signals.dropped = False
    previous = {s: signal.signal(s, _raise) for s in heeded()}
    hook = sys.unraisablehook
    sys.unraisablehook = _signals.quiet(hook)
    state = _state
    try:
        if early is not None:
            _state.interrupted = early
            raise early
        yield _state
        if state.interrupted is not None:  # dropped, and never raised again: the run ended
            raise state.interrupted  # anyway, and says it was interrupted (after OUT, if so)
    except Exception as exc:
        if state.interrupted is None:
            raise
        # A signal raised inside an import or a call from C comes out as that code's own
        # error (pandas' C init, imported by pyarrow mid-run: "PyCapsule_Import could not
        # import module"): the run was interrupted, and ends as one.
        raise state.interrupted from exc
    finally:
        sys.unraisablehook = hook
        for s, handler in previous.items():
            signal.signal(s, handler)
        _state = State()  # a later call in this process starts clean


def keep_exit_code() -> None:
    """Make the process's exit status the one it returns, even after a caught Ctrl-C.

    CPython notes a KeyboardInterrupt that leaves code run by ``exec`` of a string (numba
    compiles its generated code that way, as dataclasses and namedtuple do), caught later or
    not, and ``python -m`` then ends the process by SIGINT instead of its ``sys.exit`` code
    (seen with 3.11: returncode -2, not 130). Every ``exec`` of a string clears that note
    first, so an empty one does. Call it once the run is over, with the signals ignored.

    >>> keep_exit_code()
    """
    exec("")


def check() -> None:
    """Raise the interrupt a callback from C dropped, if one did."""
    if _state.interrupted is not None:
        raise _state.interrupted


def committing(put_in_place, is_out: bool = True) -> None:
    """Call ``put_in_place`` (the renames that replace OUT) with the signals held off:
    one that arrives meanwhile is raised again once OUT is in place. One a callback dropped
    before is raised first, with OUT untouched. ``is_out``: the files are the run's output
    (``committed``; not the inputs ``asofgpu demo`` writes before its run)."""
    check()
    if not _on_main_thread():  # signals reach the main thread only
        put_in_place()
        _state.committed = _state.committed or is_out
        return
    # Not pthread_sigmask: Python runs its handlers on the main thread whichever thread the
    # signal reached, and enrich's thread pools are alive here.
    held: list[int] = []
    previous = {s: signal.signal(s, lambda signum, frame: held.append(signum)) for s in heeded()}
    try:
        put_in_place()
        _state.committed = _state.committed or is_out
    finally:
        for s, handler in previous.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)
        for s in held:  # as if it came now: the handler it found acts on it
            signal.raise_signal(s)
