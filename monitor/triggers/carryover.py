"""Which triggers resolve: only those the data says stopped (pure). A trigger whose inputs are unknown now
(Prometheus away, a series missing) is carried over unchanged, because missing data is not evidence that it
stopped.

The evaluator only returns triggers whose condition holds; a previous trigger missing from its result either
stopped (the inputs it was judged on are known now and no longer meet the condition) or could not be judged
(they are unknown). Its evidence names the inputs: a drift assumption (`prompt_p95`), a measurement
(`kv_occupancy_max`) or a burn over a window (`burn_1h`); a tier with no known measurement at all cannot
judge any trigger.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from monitor.drift import Status
from monitor.triggers.model import TierInputs, TriggerInputs, TriggerRecord

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
    previous: Mapping[TriggerKey, TriggerRecord], current: Iterable[TriggerRecord], inputs: TriggerInputs
) -> Reconciled:
    """Sort the previous triggers missing from `current` into carried (unjudgeable now) and resolved."""
    now = {r.key: r for r in current}
    carried, resolved = [], []
    for key, prior in previous.items():
        if key in now:
            continue
        tier = inputs.tiers.get(prior.tier)
        if tier is not None and _unjudgeable(prior, tier):
            carried.append(prior)
        else:
            resolved.append(key)
    return Reconciled(tuple(now.values()), tuple(carried), tuple(resolved))


def _unjudgeable(record: TriggerRecord, tier: TierInputs) -> bool:
    """True when what the trigger was judged on is unknown now."""
    measurements = tier.observation.measurements()
    if not any(m.known for m in measurements.values()):
        return True
    drift = {row.assumption: row for row in tier.drift}
    for name in record.evidence.observed:
        if name in drift and drift[name].status is Status.UNKNOWN:
            return True
        if name in measurements and not measurements[name].known:
            return True
        if name.startswith("burn_"):
            window = name.removeprefix("burn_")
            if any(not m.known for k, m in tier.observation.bad_fraction.items() if k.endswith(f":{window}")):
                return True
    return False
