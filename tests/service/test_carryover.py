"""Which previous triggers resolve: those the data says stopped; those whose inputs are unknown carry over."""

from __future__ import annotations

from dataclasses import replace

import pytest

from monitor.evaluation import Evaluation, EvaluationInputs, evaluate
from monitor.observe.model import Measurement, TierObservation
from monitor.service.jobs import unknown_observation
from monitor.sizing.plan_sizing import size_plan
from monitor.triggers import Evidence, Severity, TriggerRecord, TriggerState
from tests.builders import copilot_plan
from tests.service.fakes import NOW, copilot_observation

PLAN = copilot_plan()
SIZING = size_plan(PLAN)
UNKNOWN = Measurement.unknown("no series")


def _previous(trigger: str, observed: dict[str, float | None], tier: str = "copilot") -> TriggerRecord:
    return TriggerRecord(trigger, tier, Severity.WARNING, TriggerState.ACTIVE, NOW - 3600, NOW - 60,
                         Evidence("held", observed))  # fmt: skip


def _evaluate(observation: TierObservation, previous: TriggerRecord) -> Evaluation:
    inputs = EvaluationInputs(PLAN, {"copilot": observation}, NOW, previous_triggers={previous.key: previous})
    return evaluate(replace(inputs, sizing=SIZING))


@pytest.mark.parametrize(
    ("previous", "observation", "outcome"),
    [
        pytest.param(_previous("prompt-p95-above-plan", {"prompt_p95": 40_000.0}), copilot_observation(), "resolved",
                     id="a drift trigger resolves when the assumption is back within tolerance"),
        pytest.param(_previous("prompt-p95-above-plan", {"prompt_p95": 40_000.0}),
                     copilot_observation(prompt_p95=UNKNOWN), "carried",
                     id="a drift trigger whose assumption is unknown carries over"),
        pytest.param(_previous("kv-pressure", {"kv_occupancy_max": 0.99, "preemption_rate": 2.0}),
                     copilot_observation(preemption_rate=UNKNOWN), "carried",
                     id="a measurement trigger with one input unknown carries over"),
        pytest.param(_previous("kv-pressure", {"kv_occupancy_max": 0.99, "preemption_rate": 2.0}),
                     copilot_observation(), "resolved", id="a measurement trigger resolves when both inputs are ok"),
        pytest.param(_previous("ttft-slo-burn-page", {"burn_1h": 20.0, "burn_5m": 30.0}),
                     replace(copilot_observation(), bad_fraction={"ttft:1h": UNKNOWN}), "carried",
                     id="a burn trigger whose window is unknown carries over"),
        pytest.param(_previous("prompt-p95-above-plan", {"prompt_p95": 40_000.0}),
                     unknown_observation("copilot", NOW, "1h", "Prometheus unreachable"), "carried",
                     id="every trigger carries over when nothing is known"),
        pytest.param(_previous("prompt-p95-above-plan", {"prompt_p95": 40_000.0}, tier="gone"),
                     copilot_observation(), "resolved", id="a trigger of a tier no longer in the plan resolves"),
    ],
)  # fmt: skip
def test_reconcile(previous: TriggerRecord, observation: TierObservation, outcome: str) -> None:
    ev = _evaluate(observation, previous)
    got = "carried" if ev.carried == (previous,) else "resolved" if ev.resolved == (previous.key,) else "neither"
    assert got == outcome
    assert ev.triggers == (*ev.current_triggers, *ev.carried)


def test_a_trigger_that_still_holds_is_current_with_its_first_seen() -> None:
    previous = _previous("prompt-p95-above-plan", {"prompt_p95": 40_000.0})
    obs = copilot_observation(prompt_p95=Measurement.of(40_000))
    ev = _evaluate(obs, previous)
    assert (ev.carried, ev.resolved) == ((), ()) and ev.current_triggers[0].first_seen == previous.first_seen
    assert ev.triggers == ev.current_triggers


def test_an_all_unknown_observation_has_every_measurement_unknown_with_the_reason() -> None:
    obs = unknown_observation("copilot", NOW, "1h", "Prometheus unreachable: refused")
    assert all(not m.known and m.reason == "Prometheus unreachable: refused" for m in obs.measurements().values())
    assert obs.request_rate.window == "1h"
