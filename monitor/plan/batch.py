"""Offline work, declared apart from the online path (qualification seed, Key Takeaways: "a nightly batch job
priced on an online deployment is the most common sizing mistake").

A job runs `runs_per_day` times; each run must finish inside its window (local time, in the plan's business-hours
timezone; a window may cross midnight) and by its deadline. Token counts are per run, or per day when `per` says
so. `items` is how many requests a run is made of: with `shared_prefix_tokens` (an instruction block sent with
every item) it says how much of the input the prefix cache serves.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Annotated, Literal, Self
from zoneinfo import ZoneInfo

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from monitor.plan.fields import parse_tokens

__all__ = ["BatchJob", "BatchWindow", "clock_hours", "current_run"]

_CLOCK = re.compile(r"([01][0-9]|2[0-3]):[0-5][0-9]")

Tokens = Annotated[float, BeforeValidator(parse_tokens), Field(gt=0)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def clock_hours(value: str) -> float:
    hours, minutes = value.split(":")
    return int(hours) + int(minutes) / 60


class BatchWindow(_Strict):
    """When the job may run (start to end, local time); `deadline` (default: the end) is when it must be done."""

    start: str
    end: str
    deadline: str = ""

    @field_validator("start", "end", "deadline")
    @classmethod
    def _clock(cls, value: str) -> str:
        if value and not _CLOCK.fullmatch(value):
            raise ValueError(f"{value!r} is not a time of day as HH:MM")
        return value

    @model_validator(mode="after")
    def _inside(self) -> Self:
        if self.start == self.end:
            raise ValueError("start and end are the same time: the window is empty")
        if self.deadline and self.offset(self.deadline) > self.hours:
            raise ValueError(f"deadline {self.deadline} is outside the window {self.start}-{self.end}")
        return self

    def offset(self, clock: str) -> float:
        """Hours from the window's start to `clock`, across midnight when needed."""
        return (clock_hours(clock) - clock_hours(self.start)) % 24

    @property
    def hours(self) -> float:
        return self.offset(self.end)

    @property
    def hours_to_deadline(self) -> float:
        return self.offset(self.deadline) if self.deadline else self.hours


class BatchJob(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    model: str
    items: int = Field(gt=0, description="Requests per run (documents, tickets, rows).")
    input_tokens: Tokens = Field(description="Input tokens per run (or per day), the instruction block included.")
    output_tokens: Tokens
    per: Literal["run", "day"] = "run"
    runs_per_day: float = Field(default=1.0, gt=0)
    shared_prefix_tokens: int = Field(default=0, ge=0, description="Instruction block sent first with every item.")
    window: BatchWindow
    batch_usd_per_million_tokens: float = Field(gt=0, description="The batch API's price, input and output.")
    online_tier: str = Field(default="", description="The online tier whose quiet hours could host it.")
    pool_gpu: str = Field(default="", description="GPU of a dedicated or spot pool for it (default: the tier's).")
    pool_gpu_hour_usd: float | None = Field(default=None, gt=0, description="Spot or reserved price per GPU-hour.")
    runs_on: str = Field(default="batch-api", description="Where it runs: batch-api, pool, or an online tier name.")
    selector: dict[str, str] = Field(
        default_factory=dict, description="Label matchers of the engines running it; default {batch_job: name}."
    )

    @property
    def label_selector(self) -> dict[str, str]:
        return self.selector or {"batch_job": self.name}

    @property
    def input_tokens_per_run(self) -> float:
        return self.input_tokens / self.runs_per_day if self.per == "day" else self.input_tokens

    @property
    def output_tokens_per_run(self) -> float:
        return self.output_tokens / self.runs_per_day if self.per == "day" else self.output_tokens

    @model_validator(mode="after")
    def _prefix_fits(self) -> Self:
        if self.shared_prefix_tokens > self.input_tokens_per_run / self.items:
            raise ValueError(
                f"shared_prefix_tokens ({self.shared_prefix_tokens}) is longer than an item's input "
                f"({self.input_tokens_per_run / self.items:,.0f} tokens)"
            )
        return self


def current_run(job: BatchJob, timezone: str, now: float) -> tuple[float, float, float]:
    """(start, deadline, end) in Unix seconds of the job's latest window that started at or before `now`, in the
    plan's timezone (DST included: the clock times are local)."""
    zone = ZoneInfo(timezone)
    local = datetime.fromtimestamp(now, zone)
    hours, minutes = (int(x) for x in job.window.start.split(":"))
    start = local.replace(hour=hours, minute=minutes, second=0, microsecond=0)
    if start > local:
        start = (start - timedelta(days=1)).replace(hour=hours, minute=minutes)
    begin = start.timestamp()
    return begin, begin + job.window.hours_to_deadline * 3600, begin + job.window.hours * 3600
