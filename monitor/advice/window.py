"""Which bound sizes a tier at a moment: the SLO while it counts, throughput outside the availability window.

`slo.availability_window: business_hours` (the plan's default) says the SLO is judged in business hours only,
as the alert rules already gate it (monitor/rules/slo.py). Outside them a tier need only keep up with its
demand, so the queue does not grow: the requests/s a replica completes at the largest batch its engine admits
(the KV cache, the chunk budget, max_num_seqs: `max_batch_at_slo` with no TPOT limit), with no TTFT bound.
Sizing those hours for the TTFT/TPOT SLO spends GPU-hours on minutes the plan does not count (a 14-day ServeGen
replay spent 6,478 of its 7,415 GPU-hours above the oracle's there). `always` sizes every moment for the SLO.
Capacity for the next business morning is still scheduled a cold start ahead: each forecast point is sized by
the bound of its own moment (`judged_points`).

"In business hours" has one definition, `monitor.plan.hours.in_business_hours` (the triggers, the rules' gauge
and the replay's judged minutes read it too).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from monitor.advice.capacity import CapacityTable
from monitor.memo import IdentityMemo
from monitor.plan.hours import in_business_hours
from monitor.plan.model import Plan
from monitor.sizing.capacity import max_batch_at_slo

__all__ = ["OUTSIDE_HOURS", "business_flags", "judged_points", "outside_quantile", "slo_counts", "throughput_table"]

OUTSIDE_HOURS = "outside business hours: sized for throughput"


def slo_counts(plan: Plan, unix_seconds: float) -> bool:
    """Whether the plan's SLO is judged at this moment: always, or inside business hours (plan timezone)."""
    return plan.slo.availability_window == "always" or in_business_hours(unix_seconds, plan.workload.business_hours)


def business_flags(plan: Plan, timestamps: Sequence[float]) -> tuple[bool, ...]:
    """Each moment inside the plan's business hours."""
    return tuple(in_business_hours(t, plan.workload.business_hours) for t in timestamps)


def judged_points(plan: Plan, business: Sequence[bool]) -> tuple[bool, ...]:
    """Per forecast point (given its business-hours flag), whether the SLO sizes it."""
    if plan.slo.availability_window == "always":
        return tuple(True for _ in business)
    return tuple(business)


_THROUGHPUT: IdentityMemo[CapacityTable] = IdentityMemo(512)


def throughput_table(table: CapacityTable, cold_seconds: float) -> CapacityTable:
    """The same replica model (so the same calibration) at the largest batch the engine admits, throughput
    only (no TTFT bound), with the minute quantile spread over a cold start (`outside_quantile`). Remembered
    per SLO table (tables are themselves remembered per plan, tier and calibration) and cold start, so its
    lookups are reused from one evaluation to the next."""
    return _THROUGHPUT.get((table,), (cold_seconds,), lambda: _throughput_table(table, cold_seconds))


def outside_quantile(minute_z: float, cold_seconds: float) -> float:
    """The quantile term outside the availability window: the minute's, over the square root of a cold
    start's minutes (at least one).

    Why: in the window every minute's p95 is judged, so a minute's Poisson count is sized for
    (`CapacityTable.minute_rate`: r + z sqrt(r / 60)). Outside it nothing is judged per minute; the tier need
    only keep up, and a minute above capacity leaves a queue the next minutes drain. What must not happen
    is a queue that keeps growing for longer than a replica takes to start (the queue rule asks for one
    when demand stays above what is served), and the count over T minutes varies by sqrt(60 r T), i.e.
    sqrt(r / (60 T)) in req/s: the same z over a cold start's T minutes. On a 14-day ServeGen replay
    (8-minute cold starts): 8,260 -> 7,938 GPU-hours, SLO minutes 99.57% -> 99.55%; the nights queue more
    (standard: minutes with over a minute of wait 40 -> 233), as the plan's business-hours window allows."""
    return minute_z / math.sqrt(max(1.0, cold_seconds / 60.0))


def _throughput_table(table: CapacityTable, cold_seconds: float) -> CapacityTable:
    batch = max_batch_at_slo(table.model, math.inf).batch
    z = outside_quantile(table.minute_z, cold_seconds)
    return CapacityTable(table.model, batch, table.ttft_slo, False, z)
