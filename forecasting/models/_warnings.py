"""Catch the warnings a numerical library emits during a fit, so they are reported, not leaked."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collect_warnings"]


@contextmanager
def collect_warnings(into: list[str]) -> Iterator[None]:
    """Record every warning raised in the block into `into` as 'Category: message' (deduplicated)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for item in caught:
        text = f"{item.category.__name__}: {str(item.message).splitlines()[0]}"
        if text not in into:
            into.append(text)
