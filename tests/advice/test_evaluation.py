"""The pure evaluation pipeline wires drift, triggers and advice together for each tier."""

from __future__ import annotations

from dataclasses import replace

import pytest

from monitor.advice import DemandOutlook
from monitor.drift import Status
from monitor.evaluation import EvaluationInputs, evaluate, ramp_lead_seconds
from monitor.observe.model import Measurement
from tests.builders import baseline_observation, copilot_plan

NOW = 1_800_000_000.0


def _run(**change: Measurement):  # type: ignore[no-untyped-def]
    plan = copilot_plan()
    obs = replace(baseline_observation(), demand_rate=Measurement.of(30.0), request_rate=Measurement.of(30.0),
                  replicas_ready=Measurement.of(3), **change)  # fmt: skip
    return evaluate(EvaluationInputs(plan, {"copilot": obs}, NOW))


def test_a_plan_that_holds_gives_ok_drift_no_triggers_and_a_recommendation() -> None:
    result = _run()
    (tier,) = result.tiers
    assert result.worst_drift is Status.OK and result.triggers == ()
    assert tier.recommendation is not None and tier.recommendation.recommended >= 2


def test_long_prompts_show_in_drift_and_in_triggers() -> None:
    result = _run(prompt_p95=Measurement.of(40_000))
    assert result.worst_drift is Status.BREACH
    assert [t.trigger for t in result.triggers] == ["prompt-p95-above-plan"]
    assert not result.critical_active  # pending, and a warning in any case


@pytest.mark.parametrize(
    ("upper", "lead"),
    [
        pytest.param([10, 20, 40, 48, 60, 80], 300.0, id="from 80% (48) to 100% (60) of capacity in 5 minutes"),
        pytest.param([10, 20, 30], None, id="a forecast below capacity gives no lead to judge"),
    ],
)
def test_ramp_lead(upper: list[float], lead: float | None) -> None:
    outlook = DemandOutlook(tuple(NOW + 300 * i for i in range(len(upper))), tuple(upper), tuple(upper))
    rec = _run().tiers[0].recommendation
    rec = replace(rec, capacity_rps_now=60.0)  # type: ignore[type-var]
    assert ramp_lead_seconds(outlook, rec).value == lead
