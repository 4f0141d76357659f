"""Has a trigger's condition held over its hold period? Asked of the history Prometheus holds, not of memory.

A trigger holds "for 30 minutes" before it is active. A process that has just started (a `check`, a `serve`
after a restart, a demo on 28 backfilled days) has not watched those 30 minutes, yet Prometheus has them. So for
each trigger that holds now and has no record, the same evaluation runs at the earlier sample times of
`monitor.triggers.hold` (each over the same observation window, ending then): the times the generated alert
rules' subquery samples, so `check`, `serve` and Alertmanager judge a hold the same way. The condition has held
since the earliest of those times from which it held at every one up to now.
"""

from __future__ import annotations

from collections.abc import Iterable

from monitor.evaluation import EvaluationInputs, evaluate
from monitor.observe.observer import Observer
from monitor.plan.model import Plan
from monitor.sizing.plan_sizing import PlanSizing
from monitor.triggers import CATALOG, trigger_def
from monitor.triggers.hold import probe_times

__all__ = ["held_in_history"]

TriggerKey = tuple[str, str]


def held_in_history(
    observer: Observer,
    plan: Plan,
    now: float,
    window: str,
    keys: Iterable[TriggerKey],
    sizing: PlanSizing | None = None,
) -> dict[TriggerKey, float]:
    """For each (trigger, tier) in `keys` (holding now): the earliest sample time from which history shows it
    held at every sample up to now; at or before `now - hold` when it held over the whole hold period. A key
    absent from the answer did not hold at its first sample back (or has no hold)."""
    known = {d.id for d in CATALOG}
    probes = {k: probe_times(now, trigger_def(k[0]).hold_seconds) for k in keys
              if k[0] in known and trigger_def(k[0]).hold_seconds > 0}  # fmt: skip
    alive = set(probes)
    held_from: dict[TriggerKey, float] = {}
    # Newest first, one evaluation per time any live key samples (triggers with different holds share none).
    for t in sorted({t for ts in probes.values() for t in ts}, reverse=True):
        asked = {k for k in alive if t in probes[k]}
        if not asked:
            continue
        observations = observer.collect(plan, t, window)
        seen = {r.key for r in evaluate(EvaluationInputs(plan, observations, t, sizing=sizing)).current_triggers}
        for key in asked:
            if key in seen:
                held_from[key] = t
            else:
                alive.discard(key)
        if not alive:
            break
    return held_from
