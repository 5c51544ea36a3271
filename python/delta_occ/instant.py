"""``current_date()`` / ``current_timestamp()`` fixed once per operation (the core's
``resolve_now`` rewrites them into literals through the SQL parser): every condition and value of
one operation names the same instant, and so do the rows it selects and the read predicate the
conflict checker records in commitInfo. Conditions are evaluated in UTC (docs/guide.md
"Conditions")."""

from __future__ import annotations

import time
from typing import Any, Mapping, Optional, TypeVar, Union

from . import _core
from .exceptions import PredicateError

T = TypeVar("T")


class Now:
    """One operation's instant (µs since the epoch), taken when the operation starts."""

    def __init__(self, micros: Optional[int] = None) -> None:
        self.micros = time.time_ns() // 1000 if micros is None else int(micros)

    def text(self, text: T) -> T:
        """``text`` with the calls replaced (non-text values returned unchanged, for the
        caller's own type checks)."""
        # The core owns which calls are resolved, and returns a text without any unchanged.
        if isinstance(text, str):
            try:
                return _core.resolve_now(text, self.micros)  # type: ignore[return-value]
            except PredicateError:
                pass  # not SQL the core parses: whoever compiles it reports the error
        return text

    def values(self, values: Union[bool, None, Mapping[str, Any]]) -> Any:
        """A SET / INSERT mapping with each SQL value resolved (True / None unchanged)."""
        if isinstance(values, Mapping):
            return {k: self.text(v) for k, v in values.items()}
        return values


__all__ = ["Now"]
