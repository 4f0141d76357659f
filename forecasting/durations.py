"""Durations as people write them: 50ms, 90s, 5m, 90m, 24h, 7d, 2w, or combined (1h30m); plain numbers are seconds.

The one duration grammar of planwatch: the plan, the settings, the CLI options and PromQL windows all read it
(`monitor.units` builds on it; forecasting imports nothing of monitor). A window written into PromQL is the
same grammar with whole numbers only (`is_promql_duration`), so what validates also renders and parses.
"""

from __future__ import annotations

import re

from forecasting.errors import ForecastInputError

__all__ = ["DURATION_UNITS", "duration_seconds", "format_duration", "is_promql_duration", "parse_duration"]

DURATION_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86_400.0, "w": 604_800.0}
_UNIT = "|".join(sorted(DURATION_UNITS, key=len, reverse=True))  # "ms" before "m" and "s"
_PART = re.compile(rf"(\d*\.?\d+)({_UNIT})")
_PROMQL = re.compile(rf"^(\d+({_UNIT}))+$")
EXAMPLES = "50ms, 90s, 5m, 24h, 7d, 2w or 1h30m"


def duration_seconds(text: str) -> float:
    """Seconds in `text` (>= 0): '24h' -> 86400.0, '1h30m' -> 5400.0, '300' -> 300.0, '50ms' -> 0.05."""
    cleaned = text.strip().lower().replace(" ", "")
    try:
        seconds = float(cleaned)
    except ValueError:
        parts = _PART.findall(cleaned)
        if not parts or "".join(number + unit for number, unit in parts) != cleaned:
            raise ForecastInputError(f"{text!r} is not a duration (use e.g. {EXAMPLES})") from None
        seconds = sum(float(number) * DURATION_UNITS[unit] for number, unit in parts)
    if not seconds >= 0:
        raise ForecastInputError(f"{text!r} is not a duration (it is negative)")
    return seconds


def parse_duration(text: str) -> float:
    """`duration_seconds`, which must be > 0 (a horizon, a step, a history)."""
    seconds = duration_seconds(text)
    if not seconds > 0:
        raise ForecastInputError(f"{text!r} is not a positive duration")
    return seconds


def is_promql_duration(text: str) -> bool:
    """True for the grammar's whole-number forms (`5m`, `1h30m`): what PromQL accepts in a range."""
    return bool(_PROMQL.match(text))


def format_duration(seconds: float) -> str:
    """The largest whole unit that fits, e.g. 86400 -> '1d', 5400 -> '90m', 300 -> '5m'."""
    for unit in ("w", "d", "h", "m"):
        size = DURATION_UNITS[unit]
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"
