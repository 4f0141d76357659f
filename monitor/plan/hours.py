"""Business hours in the plan's timezone: when the availability SLO counts and when the morning ramp comes."""

from __future__ import annotations

from datetime import time

from forecasting.calendar import is_business_hours
from monitor.plan.model import BusinessHours

__all__ = ["in_business_hours"]


def in_business_hours(unix_seconds: float, hours: BusinessHours) -> bool:
    """True on a listed weekday between start (inclusive) and end (exclusive), local time, DST included."""
    start = time.fromisoformat(hours.start)
    end = time.max if hours.end == "24:00" else time.fromisoformat(hours.end)
    return is_business_hours(unix_seconds, hours.timezone, start, end, {d.day_index for d in hours.weekdays})
