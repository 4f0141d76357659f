"""Values derived from plan objects, remembered per object for the evaluations that ask for them again.

Drift and advice rebuild the same tier models, capacity tables and length shapes at every evaluation (serve every
cycle, a replay every minute), from immutable plan objects. `IdentityMemo` keys them by the objects' ids and holds
the objects in the entry, so an id cannot be reused by another object while its entry is cached; it is cleared
past `limit` entries (a long-running service that reloads plans does not grow without bound)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["IdentityMemo"]

V = TypeVar("V")


class IdentityMemo(Generic[V]):
    def __init__(self, limit: int = 256) -> None:
        self._limit = limit
        self._entries: dict[tuple[Hashable, ...], tuple[tuple[object, ...], V]] = {}

    def get(self, held: tuple[object, ...], extra: tuple[Hashable, ...], compute: Callable[[], V]) -> V:
        """The value for the objects `held` (by identity) and the values `extra`, computed once."""
        key = (*map(id, held), *extra)
        entry = self._entries.get(key)
        if entry is not None and all(a is b for a, b in zip(entry[0], held, strict=True)):
            return entry[1]
        if len(self._entries) > self._limit:
            self._entries.clear()
        value = compute()
        self._entries[key] = (held, value)
        return value
