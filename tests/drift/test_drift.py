"""The drift judge and the per-tier report, on hand-made observations (pure; no Prometheus)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from monitor.drift import Status, fleet_drift, judge, tier_drift, worst_status
from monitor.observe.model import Measurement, TierObservation
from monitor.plan import ASSUMPTIONS, load_plan
from monitor.plan.model import Tolerance
from monitor.sizing.tier import size_tier
from tests.builders import baseline_fleet_observation, baseline_observation, copilot_plan

_MODEL_TOKENS_PER_SECOND = baseline_observation().output_tokens_per_second_per_replica.value or 0.0

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TOL = Tolerance(warn=0.10, breach=0.25)


@pytest.mark.parametrize(
    ("plan", "observed", "harmful", "status"),
    [
        pytest.param(100, 105, "higher", Status.OK, id="5% over a higher-is-harmful plan value is ok"),
        pytest.param(100, 120, "higher", Status.WARN, id="20% over is a warning"),
        pytest.param(100, 140, "higher", Status.BREACH, id="40% over is a breach"),
        pytest.param(100, 50, "higher", Status.OK, id="far below a higher-is-harmful value is fine"),
        pytest.param(0.6, 0.58, "lower", Status.OK, id="a hit rate slightly below plan is ok"),
        pytest.param(0.6, 0.05, "lower", Status.BREACH, id="a hit rate collapsing is a breach"),
        pytest.param(0.6, 0.9, "lower", Status.OK, id="more hits than planned is fine"),
        pytest.param(100, 110, "higher", Status.OK, id="exactly at the warn tolerance is still ok"),
        pytest.param(0, 0.01, "higher", Status.BREACH, id="any amount over a plan of zero breaches"),
    ],
)
def test_judge(plan: float, observed: float, harmful: str, status: Status) -> None:
    assert judge(plan, Measurement.of(observed), harmful, TOL)[1] is status  # type: ignore[arg-type]


def test_unknown_is_never_ok() -> None:
    ratio, status = judge(100, Measurement.unknown("no series matched"), "higher", TOL)
    assert (ratio, status) == (None, Status.UNKNOWN)


@pytest.mark.parametrize(
    ("value", "known"),
    [
        pytest.param(None, False, id="a missing value is unknown"),
        pytest.param(float("nan"), False, id="a NaN quantile is unknown, not zero"),
        pytest.param(float("inf"), False, id="an infinite value is unknown"),
        pytest.param(0.0, True, id="a real zero is known"),
    ],
)
def test_measurement_of(value: float | None, known: bool) -> None:
    assert Measurement.of(value).known is known


def _rows(obs: TierObservation) -> dict[str, Status]:
    plan = load_plan(EXAMPLES / "support-copilot.yaml")
    return {r.assumption: r.status for r in tier_drift(plan, size_tier(plan, plan.tiers[0]), obs)}


def test_production_matching_the_plan_is_ok_on_every_assumption() -> None:
    rows = _rows(baseline_observation())
    assert set(rows.values()) == {Status.OK}, rows
    assert set(rows) == set(ASSUMPTIONS) - {"peak_to_average"}  # burstiness is judged for the fleet


@pytest.mark.parametrize(
    ("change", "assumption", "status"),
    [
        pytest.param(
            {"prompt_p95": Measurement.of(4000)},
            "prompt_p95",
            Status.BREACH,
            id="prompts twice as long as planned breach prompt_p95",
        ),
        pytest.param(
            {"prefix_hit_rate": Measurement.of(0.02)},
            "prefix_hit_rate",
            Status.BREACH,
            id="prefix hits collapsing breach the hit rate",
        ),
        pytest.param(
            {"peak_rate": Measurement.of(70.0)},
            "peak_rate",
            Status.BREACH,
            id="traffic 40% above the planned peak breaches the peak rate",
        ),
        pytest.param(
            {"output_tokens_per_second_per_replica": Measurement.of(0.7 * _MODEL_TOKENS_PER_SECOND)},
            "throughput_per_replica",
            Status.BREACH,
            id="a replica 30% slower than the model at the same batch breaches throughput",
        ),
        pytest.param(
            {"cold_start_p95": Measurement.of(1200.0)},
            "cold_start",
            Status.BREACH,
            id="20-minute cold starts against 10 planned breach",
        ),
        pytest.param(
            {"calls_per_request": Measurement.of(5.0)},
            "calls_per_request",
            Status.BREACH,
            id="five model calls per user request breach",
        ),
        pytest.param(
            {"error_ratio": Measurement.of(0.002)},
            "availability",
            Status.BREACH,
            id="errors at twice the 0.1% budget breach availability",
        ),
        pytest.param(
            {"error_ratio": Measurement.of(1 / 313), "request_rate": Measurement.of(313 / 3600, window="1h")},
            "availability",
            Status.UNKNOWN,
            id="one error in 313 requests cannot resolve a 0.1% budget: unknown, not a breach",
        ),
        pytest.param(
            {"ttft_p95": Measurement.unknown("no series")},
            "ttft_p95",
            Status.UNKNOWN,
            id="a missing TTFT series is unknown with its reason",
        ),
        pytest.param(
            {"batch_per_replica": Measurement.unknown("no series")},
            "throughput_per_replica",
            Status.UNKNOWN,
            id="throughput cannot be judged without the batch it ran at",
        ),
    ],
)
def test_each_drift_moves_its_own_assumption(change: dict[str, Measurement], assumption: str, status: Status) -> None:
    rows = _rows(replace(baseline_observation(), **change))
    assert rows[assumption] is status


def test_worst_status_ranks_breach_over_warn_over_unknown_over_ok() -> None:
    plan = load_plan(EXAMPLES / "support-copilot.yaml")
    sizing = size_tier(plan, plan.tiers[0])
    rows = tier_drift(plan, sizing, replace(baseline_observation(), ttft_p95=Measurement.unknown("x")))
    assert worst_status(rows) is Status.UNKNOWN
    rows = tier_drift(plan, sizing, replace(baseline_observation(), prompt_p95=Measurement.of(9000)))
    assert worst_status(rows) is Status.BREACH


def _fleet_rows(obs: TierObservation) -> dict[str, Status]:
    return {r.assumption: r.status for r in fleet_drift(copilot_plan(), obs)}


def test_the_fleet_view_of_matching_production_is_ok() -> None:
    rows = _fleet_rows(baseline_fleet_observation())
    assert set(rows.values()) == {Status.OK}, rows
    assert {"peak_rate", "peak_to_average", "prompt_p95", "calls_per_request"} <= set(rows)


@pytest.mark.parametrize(
    ("change", "assumption", "status"),
    [
        pytest.param(
            {"burst_peak_rate": Measurement.of(110.0)},
            "peak_to_average",
            Status.BREACH,
            id="one-minute bursts twice the planned peak breach peak-to-average",
        ),
        pytest.param(
            {"peak_rate": Measurement.of(70.0)},
            "peak_rate",
            Status.BREACH,
            id="a sustained peak 40% over the plan breaches the fleet peak rate",
        ),
        pytest.param(
            {"peak_rate": Measurement.of(250.0), "calls_per_request": Measurement.of(5.0)},
            "peak_rate",
            Status.OK,
            id="five calls per request at the planned user peak is fan-out, not more users",
        ),
        pytest.param(
            {"prompt_p95": Measurement.of(45_000.0)},
            "prompt_p95",
            Status.BREACH,
            id="a fleet prompt p95 near 45K breaches the plan",
        ),
    ],
)
def test_fleet_drift(change: dict[str, Measurement], assumption: str, status: Status) -> None:
    assert _fleet_rows(replace(baseline_fleet_observation(), **change))[assumption] is status
