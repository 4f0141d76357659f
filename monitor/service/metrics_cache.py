"""/metrics from a cache: the exposition is rendered once per change, not once per scrape.

Everything on it changes at known moments: the snapshot (swapped by the jobs), `planwatch_business_open`
(judged on the clock, so at most once a minute) and the state file's skipped rows. The key holds all three;
a scrape that finds the same key gets the same bytes, like the JSON routes do.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable

from prometheus_client import CollectorRegistry, generate_latest

__all__ = ["MetricsCache", "Same"]


class Same:
    """A key part equal only to the very same object (a snapshot), held so its id cannot be reused."""

    __slots__ = ("obj",)

    def __init__(self, obj: object) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Same) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


class MetricsCache:
    def __init__(self, registry: CollectorRegistry, key: Callable[[], Hashable]) -> None:
        self._registry, self._key = registry, key
        self._lock = threading.Lock()
        self._cached: tuple[Hashable, bytes] | None = None

    def body(self) -> bytes:
        key = self._key()
        cached = self._cached
        if cached is not None and cached[0] == key:
            return cached[1]
        with self._lock:  # one render per change, however many scrapes arrive at once
            cached = self._cached
            if cached is None or cached[0] != key:
                cached = (key, generate_latest(self._registry))
                self._cached = cached
            return cached[1]
