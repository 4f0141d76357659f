"""The measurement record refreshed by the service: read the history (the long window), judge each item, merge
with what the state file holds and write it back. Runs on `measurement_interval` (hourly by default): the
record moves over days, and its range queries are the heaviest planwatch runs."""

from __future__ import annotations

import logging

from monitor.measurements import Item, judge_plan, merge_record
from monitor.measurements.collect import read_measurements
from monitor.observer import PrometheusObserver
from monitor.service.jobs import JobContext
from monitor.source import PrometheusUnreachable

__all__ = ["run_measurements"]

log = logging.getLogger("planwatch.service")


def run_measurements(ctx: JobContext) -> list[Item] | None:
    """The merged record, or None when there is nothing to read from (an observer without a Prometheus source)
    or Prometheus failed: the stored record stands as it was."""
    observer = ctx.observer
    if not isinstance(observer, PrometheusObserver):
        return None
    now = ctx.clock()
    try:
        readings = read_measurements(observer.source, ctx.plan, ctx.sizing, now, ctx.settings.long_window,
                                     evals=ctx.store.evals())  # fmt: skip
        items = merge_record(ctx.store.measurement_record(), judge_plan(ctx.plan, ctx.sizing, readings))
        ctx.store.save_measurement_record(items, now)
    except PrometheusUnreachable as exc:
        log.warning("measurement record not refreshed: %s", exc)
        return None
    except Exception:
        log.exception("measurement record refresh failed")
        return None
    return items
