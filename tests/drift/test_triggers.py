"""The trigger catalog on hand-made inputs: each plan-breaking reality fires its own trigger, and only it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from monitor.drift import fleet_drift, tier_drift
from monitor.observe.model import Measurement, TierObservation
from monitor.plan import Plan
from monitor.sizing.plan_sizing import size_plan
from monitor.triggers import CATALOG, EvalResult, TierInputs, TriggerInputs, TriggerState, evaluate_triggers
from tests.builders import baseline_fleet_observation, baseline_observation, copilot_plan

NOW = 1_800_000_000.0


def _inputs(
    obs: TierObservation,
    plan: Plan | None = None,
    evals: tuple[EvalResult, ...] = (),
    lead: float | None = None,
    business: bool = True,
    fleet: TierObservation | None = None,
) -> TriggerInputs:
    plan = plan or copilot_plan()
    sizing = size_plan(plan)
    drift = tuple(tier_drift(plan, sizing.tiers[0].sizing, obs))
    lead_m = Measurement.of(lead) if lead is not None else Measurement.unknown("no forecast")
    tiers = {obs.tier: TierInputs(obs, drift, lead_m)}
    if fleet is not None:
        tiers["fleet"] = TierInputs(fleet, tuple(fleet_drift(plan, fleet)))
    return TriggerInputs(plan, sizing, tiers, evals, NOW, business)


def _fired(inputs: TriggerInputs) -> set[str]:
    return {r.trigger for r in evaluate_triggers(inputs)}


def _burning(slo: str, fraction: float) -> dict[str, Measurement]:
    base = baseline_observation().bad_fraction
    return {k: (Measurement.of(fraction) if k.startswith(f"{slo}:") else v) for k, v in base.items()}


def test_production_matching_the_plan_fires_nothing() -> None:
    assert _fired(_inputs(baseline_observation())) == set()


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(
            {"prompt_p95": Measurement.of(40_000)},
            {"prompt-p95-above-plan"},
            id="long prompts fire the prompt trigger only",
        ),
        pytest.param(
            {"prefix_hit_rate": Measurement.of(0.05)},
            {"prefix-hit-below-plan"},
            id="a prefix-cache miss fires the prefix trigger only",
        ),
        pytest.param(
            {"peak_rate": Measurement.of(70.0), "average_rate": Measurement.of(21.0)},
            {"traffic-above-peak"},
            id="40% over the peak with the same shape fires the traffic trigger",
        ),
        pytest.param(
            {"output_tokens_per_second_per_replica": Measurement.of(3_000.0)},
            {"throughput-below-model"},
            id="replicas slower than the model fire the throughput trigger",
        ),
        pytest.param(
            {"kv_occupancy_max": Measurement.of(0.99), "preemption_rate": Measurement.of(0.5)},
            {"kv-pressure"},
            id="a full KV cache with preemptions fires KV pressure",
        ),
        pytest.param(
            {"calls_per_request": Measurement.of(5.0)},
            {"tool-call-fanout"},
            id="five calls per request fire the fan-out trigger",
        ),
        pytest.param(
            {"bad_fraction": _burning("ttft", 0.9)},
            {"ttft-slo-burn-page", "ttft-slo-burn-ticket"},
            id="90% of requests over the TTFT threshold burn both TTFT budgets",
        ),
        pytest.param(
            {"bad_fraction": _burning("tpot", 0.2)},
            {"tpot-slo-burn-ticket"},
            id="20% over the TPOT threshold burns at 4x: a ticket, not a page",
        ),
        pytest.param(
            {"bad_fraction": _burning("errors", 0.02)},
            {"availability-burn-page", "availability-burn-ticket"},
            id="2% errors against 99.9% burn availability at 20x",
        ),
    ],
)
def test_each_reality_fires_its_trigger(change: dict[str, object], expected: set[str]) -> None:
    assert _fired(_inputs(replace(baseline_observation(), **change))) == expected  # type: ignore[arg-type]


def test_the_fleet_view_matching_the_plan_fires_nothing() -> None:
    assert _fired(_inputs(baseline_observation(), fleet=baseline_fleet_observation())) == set()


def test_bursts_in_the_fleet_view_fire_burstiness_only() -> None:
    fleet = replace(baseline_fleet_observation(), burst_peak_rate=Measurement.of(110.0))
    records = evaluate_triggers(_inputs(baseline_observation(), fleet=fleet))
    assert {(r.trigger, r.tier) for r in records} == {("burstier-than-planned", "fleet")}


def test_availability_burn_outside_business_hours_is_not_counted() -> None:
    obs = replace(baseline_observation(), bad_fraction=_burning("errors", 0.02))
    assert _fired(_inputs(obs, business=False)) == set()


@pytest.mark.parametrize(
    ("observed_cold", "lead", "fires"),
    [
        pytest.param(1200.0, 600.0, True, id="a 20-minute cold start against a 10-minute ramp lead fires"),
        pytest.param(300.0, 600.0, False, id="a 5-minute cold start within the lead does not"),
        pytest.param(None, 300.0, True, id="without an observed cold start the plan's 10 minutes are used"),
        pytest.param(1200.0, None, False, id="without a forecast there is no lead to judge"),
    ],
)
def test_cold_start_against_ramp_lead(observed_cold: float | None, lead: float | None, fires: bool) -> None:
    cold = Measurement.of(observed_cold) if observed_cold else Measurement.unknown("no ready_time series")
    obs = replace(baseline_observation(), cold_start_p95=cold)
    # A 20-minute cold start also breaches the cold_start drift; only the ramp trigger is asserted here.
    assert ("cold-start-too-slow" in _fired(_inputs(obs, lead=lead))) is fires


@pytest.mark.parametrize(
    ("precision", "score", "fires"),
    [
        pytest.param("fp8", 0.70, True, id="FP8 dropping 0.1 against a 0.05 threshold fires"),
        pytest.param("fp8", 0.78, False, id="FP8 within the threshold does not"),
        pytest.param("bf16", 0.50, False, id="an eval at another precision than the tier serves is ignored"),
    ],
)
def test_quantization_quality(precision: str, score: float, fires: bool) -> None:
    ev = EvalResult(
        model="llama-70b", precision=precision, task_set="tickets-400", score=score, baseline_score=0.80, threshold=0.05
    )
    fired = _fired(_inputs(baseline_observation(), evals=(ev,)))
    assert ("quantization-quality-regression" in fired) is fires


def test_hold_time_keeps_a_trigger_pending_then_active() -> None:
    inputs = _inputs(replace(baseline_observation(), prompt_p95=Measurement.of(40_000)))
    (first,) = evaluate_triggers(inputs)
    assert first.state is TriggerState.PENDING
    later = replace(inputs, now=NOW + 31 * 60)
    (second,) = evaluate_triggers(later, {first.key: first})
    assert (second.state, second.first_seen, second.last_seen) == (TriggerState.ACTIVE, NOW, NOW + 31 * 60)


def test_every_trigger_is_documented() -> None:
    ids = [d.id for d in CATALOG]
    assert len(ids) == len(set(ids))
    for d in CATALOG:
        assert d.title and d.invalidates and d.mitigation and d.revisit_when and d.window


def test_evidence_names_observed_and_plan_values_and_the_query() -> None:
    obs = replace(baseline_observation(), prompt_p95=Measurement(40_000.0, query="histogram_quantile(...)"))
    (record,) = evaluate_triggers(_inputs(obs))
    assert record.evidence.observed == {"prompt_p95": 40_000.0}
    assert record.evidence.plan == {"prompt_p95": pytest.approx(1950.0)}
    assert record.evidence.queries == ("histogram_quantile(...)",)
