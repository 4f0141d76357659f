"""What the product sends and when: request rates, length distributions, business hours (plan sections)."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Self
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator, model_validator

from monitor.plan.fields import MAX_RPS, MAX_TOKENS, Strict

__all__ = ["Arrival", "BusinessHours", "Percentiles", "Weekday", "Workload"]


class Weekday(StrEnum):
    MON = "mon"
    TUE = "tue"
    WED = "wed"
    THU = "thu"
    FRI = "fri"
    SAT = "sat"
    SUN = "sun"

    @property
    def day_index(self) -> int:
        """Monday is 0, as datetime.weekday() counts."""
        return list(Weekday).index(self)


class Percentiles(Strict):
    """A length distribution as discovery reports it: the median and the 95th percentile."""

    p50: float = Field(gt=0, le=MAX_TOKENS)
    p95: float = Field(gt=0, le=MAX_TOKENS)

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.p95 < self.p50:
            raise ValueError(f"p95 ({self.p95:g}) is below p50 ({self.p50:g})")
        return self


class Arrival(Strict):
    """Arrival rate of user requests (req/s) at peak and on average, and how long the peak lasts each day."""

    peak_rps: float = Field(gt=0, le=MAX_RPS)
    average_rps: float = Field(gt=0, le=MAX_RPS)
    peak_hours_per_day: float = Field(default=8.0, gt=0, le=24)

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.average_rps > self.peak_rps:
            raise ValueError(f"average_rps ({self.average_rps:g}) is above peak_rps ({self.peak_rps:g})")
        return self


class BusinessHours(Strict):
    """When the availability SLO applies and when the morning ramp happens, in local time."""

    timezone: str = "UTC"
    weekdays: tuple[Weekday, ...] = (Weekday.MON, Weekday.TUE, Weekday.WED, Weekday.THU, Weekday.FRI)
    start: str = "08:00"
    end: str = "18:00"

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{value!r} is not an IANA timezone (examples: UTC, Europe/Berlin)") from None
        return value

    @field_validator("start", "end")
    @classmethod
    def _clock(cls, value: str) -> str:
        if not re.fullmatch(r"([01][0-9]|2[0-4]):[0-5][0-9]", value) or value > "24:00":
            raise ValueError(f"{value!r} is not a time of day as HH:MM")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.end <= self.start:
            raise ValueError(f"end ({self.end}) is not after start ({self.start})")
        return self

    @property
    def start_hour(self) -> float:
        hours, minutes = self.start.split(":")
        return int(hours) + int(minutes) / 60

    @property
    def end_hour(self) -> float:
        hours, minutes = self.end.split(":")
        return int(hours) + int(minutes) / 60


class Workload(Strict):
    """What the product sends: rate, shape and shared prefix, per user request."""

    arrival: Arrival
    business_hours: BusinessHours = BusinessHours()
    prompt_tokens: Percentiles
    output_tokens: Percentiles
    shared_prefix_tokens: int = Field(default=0, ge=0, description="System prompt shared by every request.")
    prefix_cache_hit_rate: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Expected share of prompt tokens served from the prefix cache (vLLM: hits/queries in "
        "tokens). Default: shared_prefix_tokens / mean prompt tokens.",
    )
    calls_per_request: float = Field(
        default=1.0, ge=1, le=1000, description="Model calls per user request (tool calls)."
    )
