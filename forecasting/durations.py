"""Durations as people write them: 50ms, 90s, 5m, 90m, 24h, 7d, 2w, or combined (1h30m); plain numbers are seconds.

The one duration grammar of planwatch: the plan, the settings, the CLI options and PromQL windows all read it
(`monitor.units` builds on it; forecasting imports nothing of monitor). A window written into PromQL is the
same grammar with whole numbers only (`is_promql_duration`), so what validates also renders and parses.
"""

from __future__ import annotations

import math
import re

from forecasting.errors import ForecastInputError

__all__ = ["DURATION_UNITS", "duration_seconds", "format_duration", "is_promql_duration", "parse_duration"]

DURATION_UNITS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86_400.0, "w": 604_800.0}
_UNIT = "|".join(sorted(DURATION_UNITS, key=len, reverse=True))  # "ms" before "m" and "s"
_PART = re.compile(rf"(\d*\.?\d+)({_UNIT})")
_PROMQL = re.compile(rf"^(\d+({_UNIT}))+$")
_WRITTEN = ("d", "h", "m", "s", "ms")
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
    """The one duration writer: whole numbers of each unit, largest first, to the millisecond, as PromQL writes
    a range and `duration_seconds` reads it back: 5400 -> '1h30m', 86400 -> '1d', 90 -> '1m30s', 0.05 -> '50ms'.
    Days are the largest unit written (30 days is '30d', not '4w2d'). Refuses what rounds to under 1 ms."""
    left = round(seconds * 1000) if math.isfinite(seconds) else 0
    if left <= 0:
        raise ForecastInputError(f"{seconds!r} s is not a positive duration (at least 1ms)")
    parts = []
    for unit in _WRITTEN:
        count, left = divmod(left, round(DURATION_UNITS[unit] * 1000))
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
