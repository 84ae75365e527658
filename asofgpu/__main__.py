"""``python -m asofgpu`` and the ``asofgpu`` script: the command (``asofgpu.cli``).

Only this module, ``asofgpu._signals`` and the package's own ``__init__`` (which loads
nothing) stand between the process's start and ``run``, so that a Ctrl-C, SIGTERM or SIGHUP
while the command's modules import ends the command as one later does: "asofgpu:
interrupted", exit 130 (143, 129), no traceback, where SIGTERM and SIGHUP ended the process
before (by the signal, which a caller sees as returncode -15 or -1).
"""

import signal
import sys

from . import _signals


def run() -> int:
    """The command's exit code: ``cli.entry``, once its modules are imported."""
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
