"""Every user-facing check of an option, with the message that names the parameter.

>>> strategy("nearest")
<Strategy.NEAREST: 'nearest'>
>>> strategy("closest")
Traceback (most recent call last):
...
ValueError: strategy must be one of 'backward', 'forward', 'nearest', got 'closest'
"""

from __future__ import annotations

import numpy as np

from ._types import Strategy

DEVICES = ("auto", "cpu", "cuda", "python")


def one_of(value, param: str, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        choices = ", ".join(repr(a) for a in allowed)
        msg = f"{param} must be one of {choices}, got {value!r}"
        raise ValueError(msg)
    return value


def strategy(value) -> Strategy:
    if isinstance(value, Strategy):
        return value
    return Strategy(one_of(value, "strategy", tuple(s.value for s in Strategy)))


def type_name(obj) -> str:
    """The type of ``obj`` as an error names it: with its library where one is not Python's
    own, as pandas, polars and cuDF each name a type ``DataFrame``.

    >>> import pandas as pd
    >>> type_name(pd.DataFrame()), type_name(1.5)
    ('pandas.DataFrame', 'float')
    """
    kind = type(obj)
    library = kind.__module__.partition(".")[0]
    return kind.__qualname__ if library == "builtins" else f"{library}.{kind.__qualname__}"


def flag(value, param: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        msg = f"{param} must be True or False, got {value!r}"
        raise TypeError(msg)
    return bool(value)


def device(value) -> str:
    return one_of(value, "device", DEVICES)


def same_length(n: int, got: int, param: str, reference: str) -> None:
    if got != n:
        msg = f"{param} has {got} rows, but {reference} has {n}; they must have the same length"
        raise ValueError(msg)
