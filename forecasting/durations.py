"""Durations as people write them: 90s, 5m, 90m, 24h, 7d, 2w, or combined (1h30m); plain numbers are seconds."""

from __future__ import annotations

import re

from forecasting.errors import ForecastInputError

__all__ = ["format_duration", "parse_duration"]

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86_400.0, "w": 604_800.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


def parse_duration(text: str) -> float:
    """Seconds in `text`, e.g. '24h' -> 86400.0, '1h30m' -> 5400.0, '300' -> 300.0; must be > 0."""
    cleaned = text.strip().lower()
    try:
        seconds = float(cleaned)
    except ValueError:
        parts = _PART.findall(cleaned)
        if not parts or "".join(number + unit for number, unit in parts) != cleaned:
            raise ForecastInputError(f"{text!r} is not a duration (use e.g. 90s, 5m, 90m, 24h, 7d or 1h30m)") from None
        seconds = sum(float(number) * _UNITS[unit] for number, unit in parts)
    if not seconds > 0:
        raise ForecastInputError(f"{text!r} is not a positive duration")
    return seconds


def format_duration(seconds: float) -> str:
    """The largest whole unit that fits, e.g. 86400 -> '1d', 5400 -> '90m', 300 -> '5m'."""
    for unit in ("w", "d", "h", "m"):
        size = _UNITS[unit]
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"
