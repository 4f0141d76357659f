"""Business hours are judged in the plan's timezone, daylight saving included."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from monitor.plan.hours import in_business_hours
from monitor.plan.model import BusinessHours

NY = BusinessHours(timezone="America/New_York", start="08:00", end="18:00")


def _ts(text: str, tz: str = "America/New_York") -> float:
    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(tz)).timestamp()


@pytest.mark.parametrize(
    ("when", "inside"),
    [
        pytest.param("2026-12-02 08:00", True, id="08:00 local on a Wednesday is inside"),
        pytest.param("2026-12-02 07:59", False, id="07:59 local is before the start"),
        pytest.param("2026-12-02 18:00", False, id="18:00 local is the exclusive end"),
        pytest.param("2026-12-05 12:00", False, id="Saturday noon is outside"),
        pytest.param("2026-07-01 08:30", True, id="in summer time 08:30 local is still inside (UTC-4)"),
        pytest.param("2026-03-09 07:30", False, id="the Monday after the spring change, 07:30 local is outside"),
    ],
)
def test_business_hours_in_local_time(when: str, inside: bool) -> None:
    assert in_business_hours(_ts(when), NY) is inside


def test_the_same_utc_instant_differs_across_timezones() -> None:
    berlin = BusinessHours(timezone="Europe/Berlin")
    instant = _ts("2026-12-02 09:00", "Europe/Berlin")  # 03:00 in New York
    assert in_business_hours(instant, berlin) and not in_business_hours(instant, NY)
