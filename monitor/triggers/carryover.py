"""Which triggers resolve: only those the data says stopped (pure). A trigger whose inputs are unknown now
(Prometheus away, a series missing, the forecast gone) is carried over unchanged, because missing data is not
evidence that it stopped.

The evaluator only returns triggers whose condition holds; a previous trigger missing from its result either
stopped (the inputs it is judged on are known now and no longer meet the condition) or could not be judged
(some are unknown). Each definition declares those inputs (`TriggerDef.needs`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from monitor.triggers.catalog import CATALOG
from monitor.triggers.model import TriggerDef, TriggerInputs, TriggerRecord

__all__ = ["Reconciled", "reconcile"]

TriggerKey = tuple[str, str]


@dataclass(frozen=True)
class Reconciled:
    current: tuple[TriggerRecord, ...]  # hold now, by the data
    carried: tuple[TriggerRecord, ...]  # held before, unknown now: unchanged
    resolved: tuple[TriggerKey, ...]  # held before, stopped by the data (or their tier left the plan)

    @property
    def holding(self) -> tuple[TriggerRecord, ...]:
        return (*self.current, *self.carried)


def reconcile(
    previous: Mapping[TriggerKey, TriggerRecord],
    current: Iterable[TriggerRecord],
    inputs: TriggerInputs,
    catalog: Iterable[TriggerDef] = CATALOG,
) -> Reconciled:
    """Sort the previous triggers missing from `current` into carried (some input unknown now) and resolved
    (all known; or the trigger, or its tier, is no longer there to judge)."""
    now = {r.key: r for r in current}
    definitions = {d.id: d for d in catalog}
    carried, resolved = [], []
    for key, prior in previous.items():
        if key in now:
            continue
        tier, definition = inputs.tiers.get(prior.tier), definitions.get(prior.trigger)
        if tier is not None and definition is not None and definition.needs.unknown(tier):
            carried.append(prior)
        else:
            resolved.append(key)
    return Reconciled(tuple(now.values()), tuple(carried), tuple(resolved))
