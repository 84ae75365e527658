"""``python -m asofgpu``: the ``asofgpu`` command."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
