"""The two ways ``asofgpu enrich`` fails, each with a message that names what to fix."""


class EnrichError(Exception):
    """Bad input (a file, a column, a key type, an option): exit code 2."""


class OutputError(Exception):
    """The output could not be written (disk full, permissions): exit code 1. Nothing was
    left behind, but for ``in_place``: the paths of files written together with the one that
    failed, put in place before it (a demo's day files: a rename that fails after another
    succeeded)."""

    def __init__(self, message: str, in_place: tuple[str, ...] = ()):
        super().__init__(message)
        self.in_place = in_place


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (Arrow's span several)."""
    return " ".join(str(exc).split()) or type(exc).__name__
