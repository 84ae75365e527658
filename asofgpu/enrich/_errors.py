"""The two ways ``asofgpu enrich`` fails, each with a message that names what to fix."""


class EnrichError(Exception):
    """Bad input (a file, a column, a key type, an option): exit code 2."""


class OutputError(Exception):
    """The output could not be written (disk full, permissions): exit code 1; nothing was
    left behind."""


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (Arrow's span several)."""
    return " ".join(str(exc).split()) or type(exc).__name__
