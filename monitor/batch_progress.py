"""Where each batch job's current run stands (pure): tokens done against the run's total, the rate now, the
finish projected at that rate against the deadline, and its load on each online tier. Read from the readings
`monitor.batch_collect` puts on the observations; the deadline trigger and the check output both use it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from monitor.observe.model import Measurement, TierObservation
from monitor.plan.batch import BatchJob, current_run
from monitor.plan.model import FLEET, Plan

__all__ = ["BATCH_READINGS", "BatchProgress", "batch_key", "batch_progress"]


# Every batch reading's key in an observation's `extra` starts with this (a trigger declares it as its input).
BATCH_READINGS = "batch_job:"


def batch_key(job: str, reading: str) -> str:
    return f"{BATCH_READINGS}{job}:{reading}"


@dataclass(frozen=True)
class BatchProgress:
    job: BatchJob
    start: float
    deadline: float
    now: float
    total_tokens: float
    done: Measurement
    rate: Measurement
    on_tiers: Mapping[str, float]  # tokens/s of the job's engines that carry an online tier's labels

    @property
    def remaining(self) -> float | None:
        return None if self.done.value is None else max(0.0, self.total_tokens - self.done.value)

    @property
    def projected_finish(self) -> float | None:
        """now + remaining / rate; inf when nothing runs and tokens remain; None when unknown."""
        left, rate = self.remaining, self.rate.value
        if left is None:
            return None
        if left == 0:
            return self.now
        if rate is None:
            return None
        return self.now + left / rate if rate > 0 else math.inf

    @property
    def share_done(self) -> float | None:
        return None if self.done.value is None else min(1.0, self.done.value / self.total_tokens)


def batch_progress(plan: Plan, observations: Mapping[str, TierObservation], now: float) -> list[BatchProgress]:
    fleet = observations.get(FLEET)
    out = []
    for job in plan.batch_jobs:
        start, deadline, _ = current_run(job, plan.workload.business_hours.timezone, now)
        extra = fleet.extra if fleet else {}
        unread = Measurement.unknown("not read")
        on = {
            name: m.value
            for name, obs in observations.items()
            if name != FLEET and (m := obs.extra.get(batch_key(job.name, "rate"))) is not None and m.value
        }
        out.append(BatchProgress(job, start, deadline, now, job.input_tokens_per_run + job.output_tokens_per_run,
                                 extra.get(batch_key(job.name, "done"), unread),
                                 extra.get(batch_key(job.name, "rate"), unread), on))  # fmt: skip
    return out
