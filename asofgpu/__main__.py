"""``python -m asofgpu``: the ``asofgpu`` command."""

import sys

if __name__ == "__main__":
    try:
        from .cli import entry
    except KeyboardInterrupt:  # Ctrl-C while the command's modules import: nothing started
        print("asofgpu: interrupted", file=sys.stderr)
        exec("")  # 130, not SIGINT, as in cli.entry: see _interrupts.keep_exit_code
        sys.exit(130)
    sys.exit(entry())
