"""``python -m asofgpu`` and the ``asofgpu`` script: the command (``asofgpu.cli``).

Only this module and the package's own ``__init__`` (which loads nothing) stand between the
process's start and ``run``, so that a Ctrl-C while the command's modules import ends the
command as one later does: "asofgpu: interrupted", exit 130, no traceback.
"""

import sys


def run() -> int:
    """The command's exit code: ``cli.entry``, once its modules are imported."""
    try:
        from .cli import entry
    except KeyboardInterrupt:  # Ctrl-C while the command's modules import: nothing started
        print("asofgpu: interrupted", file=sys.stderr)
        exec("")  # 130, not SIGINT, as in cli.entry: see _interrupts.keep_exit_code
        return 130
    return entry()


if __name__ == "__main__":
    sys.exit(run())
