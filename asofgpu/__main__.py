"""``python -m asofgpu``: the ``asofgpu`` command."""

import sys

if __name__ == "__main__":
    try:
        from .cli import entry
    except KeyboardInterrupt:  # Ctrl-C while the command's modules import: nothing started
        print("asofgpu: interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(entry())
