"""Has a trigger's condition held over its hold period? Asked of the history Prometheus holds, not of memory.

A trigger holds "for 30 minutes" before it is active. A process that has just started (a `check`, a `serve`
after a restart, a demo on 28 backfilled days) has not watched those 30 minutes, yet Prometheus has them. So for
each trigger that holds now and has no record, the same evaluation runs at a few earlier times across the
longest hold (each over the same observation window, ending then): the condition has held since the earliest
of those times from which it held at every one up to now. The evaluation is the one every entry point uses, so
`check` and `serve` judge a hold the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

from monitor.evaluation import EvaluationInputs, evaluate
from monitor.observe.collector import Collector
from monitor.plan.model import Plan
from monitor.sizing.plan_sizing import PlanSizing
from monitor.triggers import CATALOG, trigger_def

__all__ = ["PROBES", "held_in_history", "probe_times"]

TriggerKey = tuple[str, str]
# Earlier evaluations across the hold: 3 judge a 30-minute hold every 10 minutes (a break shorter than that can
# be missed, as a rule evaluated every few minutes would miss one).
PROBES = 3


def probe_times(now: float, hold_seconds: float, probes: int = PROBES) -> list[float]:
    """Newest first: now - hold/probes, ..., now - hold."""
    return [now - hold_seconds * i / probes for i in range(1, probes + 1)]


def held_in_history(
    collector: Collector,
    plan: Plan,
    now: float,
    window: str,
    keys: Iterable[TriggerKey],
    sizing: PlanSizing | None = None,
    probes: int = PROBES,
) -> dict[TriggerKey, float]:
    """For each (trigger, tier) in `keys` (holding now): the earliest probe time from which history shows it
    held at every probe up to now. A key absent from the answer did not hold at the first probe back."""
    known = {d.id for d in CATALOG}
    alive = {k for k in keys if k[0] in known}
    if not alive:
        return {}
    span = max(trigger_def(trigger).hold_seconds for trigger, _ in alive)
    held_from: dict[TriggerKey, float] = {}
    for t in probe_times(now, span, probes):
        observations = collector.collect(plan, t, window)
        seen = {r.key for r in evaluate(EvaluationInputs(plan, observations, t, sizing=sizing)).current_triggers}
        for key in sorted(alive):
            if key in seen:
                held_from[key] = t
            else:
                alive.discard(key)
        alive = {k for k in alive if now - held_from[k] < trigger_def(k[0]).hold_seconds}  # long enough already
        if not alive:
            break
    return held_from
