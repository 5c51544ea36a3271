"""Argument checks shared by the table, transaction and engine modules."""

from __future__ import annotations

import operator
from typing import Any, Optional, Union

from .exceptions import InvalidArgumentError
from .isolation import IsolationLevel

LevelLike = Union[str, IsolationLevel, None]


def int_arg(what: str, value: Any, low: int, high: int = 2**63 - 1) -> int:
    """An integer argument in [low, high] (bool refused), or InvalidArgumentError naming it."""
    try:
        n = operator.index(value)
    except TypeError:
        n = None
    if n is None or isinstance(value, bool) or not low <= n <= high:
        raise InvalidArgumentError(f"{what} must be an integer from {low} to {high}, got {value!r}")
    return n


def version_arg(what: str, value: Any) -> int:
    """A table version argument: an int >= 0 (bool refused), or InvalidArgumentError naming it."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidArgumentError(f"{what} must be an int >= 0, got {value!r}")
    return value


def level_name(level: LevelLike) -> Optional[str]:
    if level is None:
        return None
    return IsolationLevel.parse(level).value
