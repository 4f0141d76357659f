"""The pure trigger evaluator: which triggers hold on which tier now, given what held before.

A condition must hold for the trigger's hold time before the trigger is active (like `for:` in a
Prometheus alert); until then it is pending. A condition that stops holding drops out; the service keeps
the history. Time is a parameter.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from monitor.triggers.catalog import CATALOG
from monitor.triggers.model import TriggerDef, TriggerInputs, TriggerRecord, TriggerState

__all__ = ["evaluate_triggers"]


def evaluate_triggers(
    inputs: TriggerInputs,
    previous: Mapping[tuple[str, str], TriggerRecord] | None = None,
    catalog: Iterable[TriggerDef] = CATALOG,
    held_since: float | None = None,
    held_before: Mapping[tuple[str, str], float] | None = None,
) -> list[TriggerRecord]:
    """Every (trigger, tier) whose condition holds now, pending or active, with its evidence.

    `held_since` is for one-shot checks: conditions judged over a window (an hour of histograms) are taken
    to have held since the window began, since there is no earlier run to remember them. `held_before` says,
    per (trigger, tier) without a previous record, since when history shows the condition held: it wins.
    """
    before = previous or {}
    out = []
    for definition in catalog:
        for tier in inputs.tiers:
            evidence = definition.check(inputs, tier)
            if evidence is None:
                continue
            prior = before.get((definition.id, tier))
            if prior is not None:
                first_seen = prior.first_seen
            elif held_before and (definition.id, tier) in held_before:
                first_seen = min(held_before[(definition.id, tier)], inputs.now)
            else:
                first_seen = held_since if held_since is not None else inputs.now
            held = inputs.now - first_seen >= definition.hold_seconds
            out.append(
                TriggerRecord(
                    trigger=definition.id,
                    tier=tier,
                    severity=definition.severity,
                    state=TriggerState.ACTIVE if held else TriggerState.PENDING,
                    first_seen=first_seen,
                    last_seen=inputs.now,
                    evidence=evidence,
                )
            )
    return out
