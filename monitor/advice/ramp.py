"""What the forecast asks of a tier: the scale-up schedule a cold start ahead of the ramp, the replicas held
for a ramp due within a cold start, and the need at the forecast's peak (monitor.advice.recommend composes
them with the need now, the floor and the hysteresis).

Every forecast point is sized by the bound of its own moment (`Tables.pick`: the SLO's where it counts, the
throughput's outside the availability window) and per minute (`CapacityTable.minute_rates`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from monitor.advice.capacity import CapacityTable
from monitor.advice.model import DemandOutlook, ScaleStep
from monitor.advice.window import business_flags, judged_points
from monitor.memo import IdentityMemo
from monitor.plan.model import Plan

__all__ = ["Points", "Tables", "held_for_ramp", "highest", "need_among", "needed_at_peak", "scale_schedule"]


@dataclass(frozen=True)
class Tables:
    """The tier's two bounds at one calibration: the SLO's, and throughput's for moments the SLO does not count."""

    slo: CapacityTable
    throughput: CapacityTable
    bursts: float = 0.0  # production's minutes beyond Poisson (`CapacityTable.minute_rate`), 0 unmeasured

    def pick(self, judged: bool) -> CapacityTable:
        return self.slo if judged else self.throughput

    def minute_rates(self, points: Points) -> np.ndarray:
        """Each point's minute rate by the quantile of its moment's table (`CapacityTable.minute_rates`): the
        SLO's from the mean and the upper bound, throughput's from the mean. Remembered per (tables, points):
        the schedule, the ramp's hold and the floor read them every minute between refits."""
        return _RATES.get((self.slo, self.throughput, points), (self.bursts,), lambda: self._minute_rates(points))

    def _minute_rates(self, points: Points) -> np.ndarray:
        judged, bursts = points.judged, self.bursts
        slo = self.slo.minute_rates(points.mean, points.upper, bursts)
        outside = slo if judged.all() else self.throughput.minute_rates(points.mean, bursts=bursts)
        rates = slo if judged.all() else np.where(judged, slo, outside)
        rates.flags.writeable = False
        return rates

    def capacities(self, replicas: int, judged: np.ndarray) -> np.ndarray | float:
        """What `replicas` serve at each point, by the bound of its moment."""
        slo = self.slo.capacity_of(replicas)
        if judged.all():
            return slo
        return np.where(judged, slo, self.throughput.capacity_of(replicas))


@dataclass(frozen=True)
class Points:
    """The outlook's points as arrays: when, the mean and the upper bound, whether in business hours, whether
    the SLO sizes the point (`judged_points`), and the demand it is planned on. The planned demand is the
    upper bound where the SLO counts (it guards the SLO against the forecast's error: the minute rate there
    combines the bound's margin with the minute's, `CapacityTable.minute_rate`), the mean where only
    throughput does (the queue stays bounded when capacity exceeds the mean rate; demand above the forecast
    shows as a growing queue, which scales up reactively). Arrays because advice reads hundreds of points
    every minute."""

    times: np.ndarray
    upper: np.ndarray
    business: np.ndarray
    judged: np.ndarray
    planned: np.ndarray
    mean: np.ndarray
    step: float  # between points

    @classmethod
    def of(cls, plan: Plan, outlook: DemandOutlook | None, business: tuple[bool, ...] | None) -> Points | None:
        """The outlook's arrays, built once per (plan, outlook, flags): an outlook lives until its tier's next
        refit (15 minutes in serve and the replay) and advice reads it every minute. Read-only, as shared."""
        if outlook is None or not outlook.timestamps:
            return None
        return _POINTS.get((plan, outlook, business), (), lambda: cls._build(plan, outlook, business))

    @classmethod
    def _build(cls, plan: Plan, outlook: DemandOutlook, business: tuple[bool, ...] | None) -> Points:
        flags = business if business is not None else business_flags(plan, outlook.timestamps)
        times, upper = np.asarray(outlook.timestamps, dtype=float), np.asarray(outlook.upper, dtype=float)
        mean = np.asarray(outlook.mean, dtype=float)
        judged = np.asarray(judged_points(plan, flags), dtype=bool)
        planned = upper if judged.all() else np.where(judged, upper, mean)
        step = float(times[1] - times[0]) if times.size > 1 else 0.0
        arrays = (times, upper, np.asarray(flags, dtype=bool), judged, planned, mean)
        for array in arrays:
            array.flags.writeable = False
        return cls(*arrays, step)


_POINTS: IdentityMemo[Points] = IdentityMemo(64)
_RATES: IdentityMemo[np.ndarray] = IdentityMemo(256)


def highest(values: np.ndarray, mask: np.ndarray) -> float:
    """The highest value where `mask` holds, NaN points skipped; 0 where none is left."""
    chosen = values[mask]
    chosen = chosen[~np.isnan(chosen)]
    return float(chosen.max()) if chosen.size else 0.0


def needed_at_peak(tables: Tables, points: Points | None) -> int | None:
    """Replicas the forecast's highest point needs, each point by the bound of its moment."""
    if points is None:
        return None
    held = (tables.slo, tables.throughput, points)
    everywhere = np.ones(points.times.size, dtype=bool)
    return _PEAK_NEEDS.get(held, (tables.bursts,), lambda: need_among(tables, points, everywhere))


_PEAK_NEEDS: IdentityMemo[int] = IdentityMemo(256)


def need_among(tables: Tables, points: Points, among: np.ndarray) -> int:
    """Replicas the highest minute rate `among` the given points needs, each point by the bound of its moment
    (the peak's need, the ramp's hold, the floor): the need never falls as the rate grows, so the highest point
    of each kind decides (0 where none)."""
    judged, rates = points.judged, tables.minute_rates(points)
    return max(tables.slo.replicas_for(highest(rates, among & judged)),
               tables.throughput.replicas_for(highest(rates, among & ~judged)))  # fmt: skip


def scale_schedule(
    tables: Tables, points: Points | None, current: int, cold: float, margin: float
) -> tuple[ScaleStep, ...]:
    """One step per replica above `current` the forecast will need (`Points.planned`), each point sized by the
    bound of its moment (the SLO's, or throughput's outside the availability window). A forecast point stands
    for the step that ends at it (demand histories are rates over the step before each stamp), so demand
    can reach its value at the start of that step: that is when the replica is needed.

    Remembered per (tables, points) and (current, cold, margin): between refits advice asks the same every
    minute while the ready count holds."""
    if points is None:
        return ()
    held = (tables.slo, tables.throughput, points)
    args = (current, cold, margin, tables.bursts)
    return _SCHEDULES.get(held, args, lambda: _schedule(tables, points, current, cold, margin))


def _schedule(tables: Tables, points: Points, current: int, cold: float, margin: float) -> tuple[ScaleStep, ...]:
    steps, have, step = [], current, points.step
    # one array pass over the points `have` already serves, each point's minute rate by its moment's table
    rates, at, mask = tables.minute_rates(points), 0, points.judged
    while (i := _first_unserved(tables, have, rates, mask, at)) is not None:
        t, upper, at = float(points.times[i]), float(points.planned[i]), i + 1
        need = tables.pick(bool(mask[i])).replicas_for(float(rates[i]))
        while need > have:
            have += 1
            steps.append(ScaleStep(have, t - step - cold - margin, t - step, upper, cold, margin))
    return tuple(steps)


_SCHEDULES: IdentityMemo[tuple[ScaleStep, ...]] = IdentityMemo(256)


def held_for_ramp(tables: Tables, points: Points | None, now: float, lead: float) -> int:
    """Replicas the forecast needs before a replacement started now could be ready: the points whose schedule
    step would already be due (needed within the cold start and the margin), each by its moment's bound. The
    schedule asks only for replicas above the current count, so without this a replica it brought up for the
    morning could be scaled down again before the morning came (and asked for again, a cold start late)."""
    if points is None:
        return 0
    return need_among(tables, points, (points.times > now) & (points.times <= now + points.step + lead))


def _first_unserved(tables: Tables, replicas: int, rates: np.ndarray, judged: np.ndarray, start: int) -> int | None:
    """The first index from `start` whose minute rate `replicas` do not hold by its moment's bound (a NaN
    point included), or None."""
    if judged.all():
        return tables.slo.first_unserved(replicas, rates, start)
    capacity = tables.capacities(replicas, judged[start:])
    over = np.flatnonzero(~(rates[start:] <= capacity))
    return start + int(over[0]) if over.size else None
