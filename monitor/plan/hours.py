"""Business hours in the plan's timezone: when the availability SLO counts and when the morning ramp comes.

The one implementation of "is this local time inside the working day" is the forecasting package's
(`forecasting.calendar.within_hours`), which imports nothing of monitor; the plan reads it.
"""

from __future__ import annotations

from datetime import datetime, time
from functools import lru_cache
from zoneinfo import ZoneInfo

from forecasting.calendar import within_hours
from monitor.plan.model import BusinessHours

__all__ = ["in_business_hours", "within_hours"]


def in_business_hours(unix_seconds: float, hours: BusinessHours) -> bool:
    """True on a listed weekday between start (inclusive) and end (exclusive), local time, DST included."""
    zone, start, end, weekdays = _parsed(hours)
    return within_hours(datetime.fromtimestamp(unix_seconds, zone), start, end, weekdays)


@lru_cache(maxsize=64)
def _parsed(hours: BusinessHours) -> tuple[ZoneInfo, time, time, frozenset[int]]:
    """The zone, clock bounds and weekdays of `hours`, parsed once (a replay asks millions of times)."""
    end = time.max if hours.end == "24:00" else time.fromisoformat(hours.end)
    return (
        ZoneInfo(hours.timezone),
        time.fromisoformat(hours.start),
        end,
        frozenset(d.day_index for d in hours.weekdays),
    )
