"""Batch jobs as Prometheus sees them (an adapter, I/O): each job's own selector, read three ways.

    done      tokens its engines processed since the current run's window began (TOKENS_DONE)
    rate      tokens/s now (TOKENS_RATE over 5 minutes)
    on tier   tokens/s of its engines that also carry an online tier's labels: batch traffic on that tier

The readings ride on the observations the observer already returns (`extra`, keyed `batch_job:<name>:...`):
the fleet view carries done and rate, each online tier the job's rate on it. So every entry point that
evaluates observations (check, serve, report) sees them, and the triggers judge them (monitor.triggers.batch).
"""

from __future__ import annotations

from dataclasses import replace

from monitor.batch_progress import batch_key
from monitor.observe.model import Measurement, TierObservation
from monitor.plan.batch import current_run
from monitor.plan.model import FLEET, Plan
from monitor.queries.cost import TOKENS_DONE, TOKENS_RATE
from monitor.source import PrometheusSource, measurement

__all__ = ["with_batch_readings"]

_NOW_WINDOW = "5m"


def with_batch_readings(
    source: PrometheusSource, plan: Plan, now: float, observations: dict[str, TierObservation]
) -> dict[str, TierObservation]:
    if not plan.batch_jobs:
        return observations
    extra: dict[str, dict[str, Measurement]] = {name: {} for name in observations}
    for job in plan.batch_jobs:
        sel = job.label_selector
        start, _, _ = current_run(job, plan.workload.business_hours.timezone, now)
        since = f"{max(60, int(now - start))}s"
        if FLEET in extra:
            done, rate = TOKENS_DONE.for_tier(sel, window=since), TOKENS_RATE.for_tier(sel, window=_NOW_WINDOW)
            extra[FLEET][batch_key(job.name, "done")] = _read(source, done, now, since)
            extra[FLEET][batch_key(job.name, "rate")] = _read(source, rate, now, _NOW_WINDOW)
        for tier in plan.tiers:
            if tier.name in extra:
                both = {**tier.label_selector, **sel}
                expr = TOKENS_RATE.for_tier(both, window=_NOW_WINDOW)
                extra[tier.name][batch_key(job.name, "rate")] = _read(source, expr, now, _NOW_WINDOW)
    return {name: replace(obs, extra={**obs.extra, **extra[name]}) for name, obs in observations.items()}


def _read(source: PrometheusSource, expr: str, now: float, window: str) -> Measurement:
    return measurement(source.instant(expr, at=now), window=window)
