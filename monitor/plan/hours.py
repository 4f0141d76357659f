"""Business hours in the plan's timezone: when the availability SLO counts and when the morning ramp comes.

The one implementation of "is this local time inside the working day" is the forecasting package's
(`forecasting.calendar.within_hours`), which imports nothing of monitor; the plan reads it.
"""

from __future__ import annotations

from datetime import datetime, time
from zoneinfo import ZoneInfo

from forecasting.calendar import within_hours
from monitor.plan.model import BusinessHours

__all__ = ["in_business_hours", "within_hours"]


def in_business_hours(unix_seconds: float, hours: BusinessHours) -> bool:
    """True on a listed weekday between start (inclusive) and end (exclusive), local time, DST included."""
    local = datetime.fromtimestamp(unix_seconds, ZoneInfo(hours.timezone))
    start = time.fromisoformat(hours.start)
    end = time.max if hours.end == "24:00" else time.fromisoformat(hours.end)
    return within_hours(local, start, end, {d.day_index for d in hours.weekdays})
