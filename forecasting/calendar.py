"""Local-time helpers: business hours and the next morning ramp, in an IANA timezone (zoneinfo).

Demand follows the clock on the wall of its users, so "is it business hours" and "when does the morning
ramp start" are questions in local time, DST included, even though the series is in Unix seconds.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
from numpy.typing import NDArray

from forecasting.errors import ForecastInputError
from forecasting.events import crossing_time
from forecasting.series import FloatArray

__all__ = [
    "MorningRamp",
    "WorkWeek",
    "is_business_hours",
    "local_time",
    "next_morning_ramp",
    "within_hours",
    "zone",
]

WEEKDAYS = frozenset(range(5))


def within_hours(local: datetime, start: time, end: time, weekdays: Collection[int]) -> bool:
    """start <= local clock < end on one of `weekdays` (Monday = 0); a window whose end is not after its start
    wraps midnight (22:00-06:00)."""
    clock = local.time()
    inside = start <= clock < end if start < end else clock >= start or clock < end
    return local.weekday() in weekdays and inside


def zone(timezone: str) -> ZoneInfo:
    """The ZoneInfo for an IANA name, or a ForecastInputError naming it."""
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ForecastInputError(f"unknown timezone {timezone!r} (use an IANA name like Europe/Paris)") from exc


@dataclass(frozen=True)
class WorkWeek:
    """Which local days are working days (Monday = 0) in a timezone: a plan's business days.

    Demand on a Monday looks like Friday's, not Sunday's; a forecaster that knows the week can say so from
    the first week of history, before a weekly season can be fitted.
    """

    timezone: str
    weekdays: frozenset[int] = WEEKDAYS

    def __post_init__(self) -> None:
        zone(self.timezone)  # a bad name fails here, where the calendar is made
        if not self.weekdays or not self.weekdays <= frozenset(range(7)):
            raise ForecastInputError(f"working weekdays must be some of 0-6 (Monday = 0), got {sorted(self.weekdays)}")

    def working(self, timestamps_s: FloatArray) -> NDArray[np.bool_]:
        """Whether each timestamp falls on a working day, local time (DST included).

        One datetime per local day, not per timestamp: a month of 5-minute steps is ~30 conversions.
        """
        if timestamps_s.size == 0:
            return np.zeros(0, dtype=bool)
        tz = zone(self.timezone)
        first = datetime.fromtimestamp(float(np.min(timestamps_s)), tz).date()
        last = datetime.fromtimestamp(float(np.max(timestamps_s)), tz).date()
        days = [first + timedelta(days=k) for k in range((last - first).days + 1)]
        midnights = np.array([datetime.combine(d, time(0), tz).timestamp() for d in days], dtype=np.float64)
        kinds = np.array([d.weekday() in self.weekdays for d in days], dtype=bool)
        return kinds[np.searchsorted(midnights, timestamps_s, side="right") - 1]


def local_time(timestamp_s: float, timezone: str) -> datetime:
    """The aware local datetime of a Unix timestamp."""
    return datetime.fromtimestamp(timestamp_s, zone(timezone))


def is_business_hours(
    timestamp_s: float,
    timezone: str,
    start: time = time(9, 0),
    end: time = time(18, 0),
    weekdays: Collection[int] = WEEKDAYS,
) -> bool:
    """True when the local time is within [start, end) on one of `weekdays` (Monday = 0)."""
    return within_hours(local_time(timestamp_s, timezone), start, end, weekdays)


@dataclass(frozen=True)
class MorningRamp:
    """The first rise after local night: `timestamp_s` is when the path crosses `threshold` upward.

    threshold = trough + fraction x (peak - trough), where trough is the lowest value in the night and
    peak the highest value between the end of that night and the start of the next.
    """

    timestamp_s: float
    threshold: float
    trough: float
    peak: float


def _night_mask(timestamps_s: FloatArray, tz: ZoneInfo, start: time, end: time) -> NDArray[np.bool_]:
    every_day = range(7)
    return np.array([within_hours(datetime.fromtimestamp(float(ts), tz), start, end, every_day) for ts in timestamps_s],
                    dtype=bool)  # fmt: skip


def next_morning_ramp(
    timestamps_s: FloatArray,
    values: FloatArray,
    timezone: str,
    *,
    night_start: time = time(22, 0),
    night_end: time = time(6, 0),
    fraction: float = 0.5,
    min_rise: float = 0.3,
    min_day_seconds: float = 4 * 3600.0,
) -> MorningRamp | None:
    """When the path rises through the half-way level on its way to the day's peak, after the first night.

    The crossing taken is the last one before the peak, so noise in a quiet night cannot pass for the
    ramp. None when no night is followed by at least `min_day_seconds` of day in the path, or when the
    day does not rise clearly above the night: (peak - trough) < `min_rise` x peak.
    """
    night = _night_mask(timestamps_s, zone(timezone), night_start, night_end)
    starts = np.flatnonzero(night & ~np.concatenate(([False], night[:-1])))
    for first in starts:
        ends = np.flatnonzero(~night[first:])
        if ends.size == 0:
            return None
        day_first = int(first + ends[0])
        next_nights = np.flatnonzero(night[day_first:])
        day_stop = day_first + int(next_nights[0]) if next_nights.size else values.size
        if day_stop == values.size and timestamps_s[-1] - timestamps_s[day_first] < min_day_seconds:
            return None
        trough_i = int(first + np.argmin(values[first:day_first]))
        peak_i = int(day_first + np.argmax(values[day_first:day_stop]))
        trough, peak = float(values[trough_i]), float(values[peak_i])
        if peak - trough < min_rise * peak:
            continue
        threshold = trough + fraction * (peak - trough)
        below = np.flatnonzero(values[trough_i : peak_i + 1] < threshold)
        i = trough_i + int(below[-1]) + 1
        return MorningRamp(crossing_time(timestamps_s, values, i, threshold), threshold, trough, peak)
    return None
