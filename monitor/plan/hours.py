"""Business hours in the plan's timezone: when the availability SLO counts and when the morning ramp comes."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from monitor.plan.model import BusinessHours

__all__ = ["in_business_hours"]


def in_business_hours(unix_seconds: float, hours: BusinessHours) -> bool:
    """True on a listed weekday between start (inclusive) and end (exclusive), local time, DST included."""
    local = datetime.fromtimestamp(unix_seconds, UTC).astimezone(ZoneInfo(hours.timezone))
    if local.weekday() not in {d.day_index for d in hours.weekdays}:
        return False
    clock = local.hour + local.minute / 60 + local.second / 3600
    return hours.start_hour <= clock < hours.end_hour
