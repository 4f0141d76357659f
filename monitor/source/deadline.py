"""Retries inside a deadline: the configured timeout bounds a call to Prometheus, retries and backoff included.

urllib3's `Retry` gives every attempt the full timeout, so `timeout: 10` with two retries let one call (and
the evaluation cycle waiting on it) take ~31 s. This adapter retries itself: each attempt gets what is left of
the timeout, a backoff or a `Retry-After` that would pass the deadline is not waited for, and the last answer
(or the last error) is what the caller sees.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import requests
from requests.adapters import HTTPAdapter

__all__ = ["RETRY_STATUSES", "DeadlineAdapter"]

RETRY_STATUSES = frozenset({429, 502, 503, 504})


class DeadlineAdapter(HTTPAdapter):
    def __init__(
        self,
        timeout: float,
        retries: int,
        backoff: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(max_retries=0)
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self._clock, self._sleep = clock, sleep

    def send(  # type: ignore[override]
        self, request: requests.PreparedRequest, timeout: Any = None, **kwargs: Any
    ) -> requests.Response:
        deadline = self._clock() + self.timeout
        for attempt in range(self.retries + 1):
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise requests.exceptions.Timeout(f"timed out after {self.timeout:g}s")
            last = attempt == self.retries
            try:
                response = super().send(request, timeout=remaining, **kwargs)
            except (requests.exceptions.ConnectionError, requests.exceptions.Timeout):
                if last or not self._wait(self._backoff(attempt), deadline):
                    raise
                continue
            if response.status_code not in RETRY_STATUSES or last:
                return response
            if not self._wait(_retry_after(response.headers) or self._backoff(attempt), deadline):
                return response
            response.close()
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _backoff(self, attempt: int) -> float:
        return 0.0 if attempt == 0 else self.backoff * 2**attempt

    def _wait(self, seconds: float, deadline: float) -> bool:
        """Sleep before the next attempt, unless that would leave no time for it."""
        if self._clock() + seconds >= deadline:
            return False
        self._sleep(seconds)
        return True


def _retry_after(headers: Mapping[str, str]) -> float | None:
    value = headers.get("Retry-After", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: rare from a query API; the backoff applies
