"""``python -m asofgpu`` and the ``asofgpu`` script: the command (``asofgpu.cli``).

Only this module, ``asofgpu._signals`` and the package's own ``__init__`` (which loads
nothing) stand between the process's start and ``run``, so that a Ctrl-C, SIGTERM or SIGHUP
while the command's modules import ends the command as one later does: "asofgpu:
interrupted", exit 130 (143, 129), no traceback, where SIGTERM and SIGHUP ended the process
before (by the signal, which a caller sees as returncode -15 or -1).
"""

import gc
import signal
import sys

from . import _signals


def run() -> int:
    """The command's exit code: ``cli.entry``, once its modules are imported."""
    # The command's imports (numba's above all) make objects that live to its end, which the
    # collector's default thresholds (700, 10, 10) walked again and again: the bench's enrich
    # of 200K x 200K took 0.59 s against 0.63, of 10M x 10M 1.62 s against 1.71 (medians of 8
    # and 4 alternating processes, on 2 cores).
    gc.set_threshold(50_000, 20, 100)
    for s in _signals.heeded():  # until the run's own handling takes them over
        signal.signal(s, _signals.raise_interrupt)
    sys.unraisablehook = _signals.quiet(sys.unraisablehook)
    try:
        from .cli import entry
    except KeyboardInterrupt as exc:  # while the command's modules import: nothing started
        for s in _signals.heeded():  # a second one now would end it by the signal, as -2
            signal.signal(s, signal.SIG_IGN)
        _signals.received = None  # (raised where it was, not dropped)
        _signals.say("asofgpu: interrupted")
        exec("")  # 130, not SIGINT, as in cli.entry: see _interrupts.keep_exit_code
        return _signals.exit_code(exc)
    return entry()


if __name__ == "__main__":
    sys.exit(run())
