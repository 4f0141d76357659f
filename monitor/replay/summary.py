"""The figures of a replay, per policy and tier, and their JSON shape (stable keys).

gpu_hours                    replicas running or starting x GPUs per replica, summed over minutes / 60
cost_usd                     gpu_hours x the plan's price per GPU-hour
oracle_ratio                 gpu_hours / the oracle's (None without an oracle run)
slo_compliant_minutes_share  judged minutes (business hours) in which every tier met its SLO
                             (per tier: that tier's minutes)
requests_over_slo_share      requests over the TTFT or TPOT SLO / requests served
worst_minute                 the judged minute with the highest p95 TTFT relative to the tier's SLO
queue_peak                   most requests waiting in front of the replicas at a minute's end
scale_events                 minutes in which replicas were started or stopped
mornings                     per business day: was capacity ready before demand needed it (from two
                             hours before business hours start to three after, every minute had at least
                             the replicas the oracle found necessary ready)
availability_price           (top level) in the judged minutes, the oracle's need against sizing on each
                             minute's expected rate at the plan's availability quantile: the part of the gap
                             to the oracle no forecast closes (`monitor.replay.reference`)
violating_minutes_by_cause   per tier, its SLO-violating judged minutes by what the policy had against the
                             oracle's need that minute (`CAUSES`): too few replicas asked for (running and
                             starting below the need), asked for but still in cold start (ready below the
                             need, running and starting not), or enough ready (the minute failed on a queue
                             carried over from before)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np

from monitor.replay.reference import availability_price
from monitor.replay.run import PolicyRun, Replay
from monitor.replay.slo import MinuteSLO, minute_slo

__all__ = ["CAUSES", "PolicySummary", "TierSummary", "summarise", "to_json"]

_MORNING_BEFORE_H, _MORNING_AFTER_H = 2.0, 3.0
# why a violating minute failed: the policy asked too little (the capacity it believed in, or its margins),
# asked too late (the cold start), or had enough ready and carried a queue in
CAUSES = ("too_few_asked", "still_starting", "enough_ready")


@dataclass(frozen=True)
class TierSummary:
    name: str
    gpu_hours: float
    cost_usd: float
    slo_compliant_minutes_share: float | None
    requests_over_slo_share: float | None
    worst_minute: dict[str, Any] | None
    queue_peak: float
    scale_events: int
    replicas_min: int
    replicas_max: int
    violating_minutes_by_cause: dict[str, int]


@dataclass(frozen=True)
class PolicySummary:
    name: str
    gpu_hours: float
    cost_usd: float
    oracle_ratio: float | None
    slo_compliant_minutes_share: float | None
    slo_violating_minutes: int
    requests_over_slo_share: float | None
    worst_minute: dict[str, Any] | None
    queue_peak: float
    scale_events: int
    mornings_ready: int
    mornings: tuple[dict[str, Any], ...]
    tiers: tuple[TierSummary, ...]
    violating: np.ndarray  # per minute: a judged minute where some tier missed its SLO


def summarise(replay: Replay) -> list[PolicySummary]:
    out = [_policy(replay, run) for run in replay.runs]
    oracle = next((s for s in out if s.name == "oracle"), None)
    if oracle is None or oracle.gpu_hours <= 0:
        return out
    from dataclasses import replace

    return [replace(s, oracle_ratio=s.gpu_hours / oracle.gpu_hours) for s in out]


def _policy(replay: Replay, run: PolicyRun) -> PolicySummary:
    plan, minutes, judged = replay.plan, replay.demand.minutes, replay.judged
    slos = {name: minute_slo(plan, f.tier, f.curve, f.record, minutes) for name, f in run.fleets.items()}
    tiers = tuple(_tier(replay, run, name, slos[name]) for name in run.fleets)
    ok = np.logical_and.reduce([s.ok for s in slos.values()])
    served = sum(float(f.record.served.sum()) for f in run.fleets.values())
    over = sum(float(s.over.sum()) for s in slos.values())
    worst = max((t.worst_minute for t in tiers if t.worst_minute), key=lambda w: w["ttft_p95_over_slo"], default=None)
    mornings = _mornings(replay, run)
    return PolicySummary(
        name=run.name,
        gpu_hours=sum(t.gpu_hours for t in tiers),
        cost_usd=sum(t.cost_usd for t in tiers),
        oracle_ratio=None,
        slo_compliant_minutes_share=float(ok[judged].mean()) if judged.any() else None,
        slo_violating_minutes=int((~ok & judged).sum()),
        requests_over_slo_share=over / served if served > 0 else None,
        worst_minute=worst,
        queue_peak=max(t.queue_peak for t in tiers),
        scale_events=sum(t.scale_events for t in tiers),
        mornings_ready=sum(1 for m in mornings if m["ready"]),
        mornings=tuple(mornings),
        tiers=tiers,
        violating=~ok & judged,
    )


def _tier(replay: Replay, run: PolicyRun, name: str, slo: MinuteSLO) -> TierSummary:
    fleet, judged = run.fleets[name], replay.judged
    tier, r = fleet.tier, fleet.record
    gpu_hours = float(r.billed.sum()) * tier.tensor_parallel / 60.0
    served = float(r.served.sum())
    return TierSummary(
        name=name,
        gpu_hours=gpu_hours,
        cost_usd=gpu_hours * replay.plan.costs.gpu_hour_usd.get(tier.gpu, 0.0),
        slo_compliant_minutes_share=float(slo.ok[judged].mean()) if judged.any() else None,
        requests_over_slo_share=float(slo.over.sum()) / served if served > 0 else None,
        worst_minute=_worst(replay, name, slo),
        queue_peak=float(r.queue.max()),
        scale_events=int(((r.started > 0) | (r.stopped > 0)).sum()),
        replicas_min=int(r.billed.min()),
        replicas_max=int(r.billed.max()),
        violating_minutes_by_cause=_causes(r.ready, r.billed, replay.required[name], ~slo.ok & judged),
    )


def _causes(ready: np.ndarray, billed: np.ndarray, need: np.ndarray, violating: np.ndarray) -> dict[str, int]:
    """`CAUSES` of the violating minutes: each minute has exactly one."""
    n = min(ready.size, need.size, violating.size)
    ready, billed, need, bad = ready[:n], billed[:n], need[:n], violating[:n]
    few = bad & (billed < need)
    starting = bad & ~few & (ready < need)
    counts = (int(few.sum()), int(starting.sum()), int((bad & ~few & ~starting).sum()))
    return dict(zip(CAUSES, counts, strict=True))


def _worst(replay: Replay, name: str, slo: MinuteSLO) -> dict[str, Any] | None:
    ttft_slo = replay.plan.slo_for(replay.plan.tier(name))[0]
    ratio = np.where(replay.judged, slo.ttft_p95 / ttft_slo, np.nan)
    if np.all(np.isnan(ratio)):
        return None
    m = int(np.nanargmax(ratio))
    return {
        "at": _iso(replay.demand.start + 60.0 * m),
        "tier": name,
        "ttft_p95_s": float(slo.ttft_p95[m]),
        "tpot_p95_s": float(slo.tpot_p95[m]),
        "ttft_p95_over_slo": float(ratio[m]),
        "met_slo": bool(slo.ok[m]),
    }


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def _mornings(replay: Replay, run: PolicyRun) -> list[dict[str, Any]]:
    """Each business day in the trace: ready >= the oracle's need at every minute around the ramp."""
    hours = replay.plan.workload.business_hours
    zone = ZoneInfo(hours.timezone)
    start = datetime.fromtimestamp(replay.demand.start, zone)
    days = int(np.ceil(replay.demand.minutes / 1440)) + 1
    weekdays = {d.day_index for d in hours.weekdays}
    out = []
    for k in range(days):
        day = (start + timedelta(days=k)).date()
        if day.weekday() not in weekdays:
            continue
        opening = datetime.combine(day, datetime.strptime(hours.start, "%H:%M").time(), zone).timestamp()
        lo = int((opening - _MORNING_BEFORE_H * 3600 - replay.demand.start) // 60)
        hi = int((opening + _MORNING_AFTER_H * 3600 - replay.demand.start) // 60)
        if lo < 0 or hi > replay.demand.minutes:
            continue
        short = [n for n, f in run.fleets.items() if (f.record.ready[lo:hi] < replay.required[n][lo:hi]).any()]
        out.append({"day": day.isoformat(), "ready": not short, "short_tiers": short})
    return out


def to_json(replay: Replay, summaries: list[PolicySummary]) -> dict[str, Any]:
    d = replay.demand
    return {
        "plan": replay.plan.name,
        "trace": {
            "source": d.source,
            "start": _iso(d.start),
            "minutes": d.minutes,
            "scale": d.scale,
            "requests": int(d.arrivals.sum()),
            "peak_5m_rps": _peak(d.total_rps()),
        },
        "days": d.minutes / 1440.0,
        "decision_interval_s": replay.config.decision_interval_s,
        "policies": [_policy_json(s, _oracle_tiers(summaries)) for s in summaries],
        "availability_price": availability_price(replay).to_json(),
    }


def _peak(rps: np.ndarray) -> float:
    from monitor.replay.demand import peak_5m_rps

    return peak_5m_rps(rps)


def _oracle_tiers(summaries: list[PolicySummary]) -> dict[str, float]:
    oracle = next((s for s in summaries if s.name == "oracle"), None)
    return {t.name: t.gpu_hours for t in oracle.tiers} if oracle else {}


def _ratio(value: float, oracle: float | None) -> float | None:
    return value / oracle if oracle else None


def _policy_json(s: PolicySummary, oracle: dict[str, float]) -> dict[str, Any]:
    return {
        "name": s.name,
        "gpu_hours": s.gpu_hours,
        "cost_usd": s.cost_usd,
        "oracle_ratio": s.oracle_ratio,
        "slo_compliant_minutes_share": s.slo_compliant_minutes_share,
        "slo_violating_minutes": s.slo_violating_minutes,
        "requests_over_slo_share": s.requests_over_slo_share,
        "worst_minute": s.worst_minute,
        "queue_peak": s.queue_peak,
        "scale_events": s.scale_events,
        "mornings_ready": s.mornings_ready,
        "mornings": list(s.mornings),
        "tiers": [
            {
                "name": t.name,
                "gpu_hours": t.gpu_hours,
                "cost_usd": t.cost_usd,
                "oracle_ratio": _ratio(t.gpu_hours, oracle.get(t.name)),
                "slo_compliant_minutes_share": t.slo_compliant_minutes_share,
                "requests_over_slo_share": t.requests_over_slo_share,
                "worst_minute": t.worst_minute,
                "queue_peak": t.queue_peak,
                "scale_events": t.scale_events,
                "replicas_min": t.replicas_min,
                "replicas_max": t.replicas_max,
                "violating_minutes_by_cause": dict(t.violating_minutes_by_cause),
            }
            for t in s.tiers
        ],
    }
