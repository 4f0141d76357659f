"""Per-minute sizing (a minute's Poisson count, at the availability's quantile) and the spare rule's arithmetic."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from monitor.advice.capacity import capacity_table, minute_quantile
from monitor.advice.recommend import spare_replicas
from monitor.plan.load import PlanError, parse_plan
from monitor.service.settings import AdviceConfig
from tests.builders import EXAMPLES, copilot_plan


@pytest.mark.parametrize(
    ("availability", "z"),
    [
        pytest.param(0.999, 3.0902, id="99.9 percent availability sizes minutes at 3.09 standard deviations"),
        pytest.param(0.99, 2.3263, id="99 percent at 2.33"),
        pytest.param(0.5, 0.0, id="a coin-flip target adds nothing to the mean"),
    ],
)
def test_the_minute_quantile_is_the_normal_quantile_of_the_availability(availability: float, z: float) -> None:
    assert minute_quantile(availability) == pytest.approx(z, abs=1e-4)


def test_a_mean_demand_just_under_a_replica_count_s_capacity_is_sized_for_its_noisy_minutes() -> None:
    """4 replicas carry this mean, but a minute's Poisson count at the 99.9% quantile does not fit them."""
    plan = copilot_plan()
    table = capacity_table(plan, plan.tiers[0], 1.0)
    mean = 0.99 * table.capacity_of(4)
    assert table.replicas_for(mean) == 4
    assert table.minute_rate(mean) == pytest.approx(mean + 3.0902 * math.sqrt(mean / 60.0), rel=1e-4)
    assert table.replicas_for_minutes(mean) == 5
    assert not table.serves_minutes(4, mean) and table.serves_minutes(5, mean)
    assert table.replicas_for_minutes(0.0) == 0


@pytest.mark.parametrize(
    ("mean", "upper"),
    [
        pytest.param(8.0, 8.0, id="with no forecast margin a minute is sized at the mean and its Poisson quantile"),
        pytest.param(8.0, 8.4, id="a forecast margin under the minute's adds far less than itself"),
        pytest.param(8.0, 14.0, id="a forecast margin far over the minute's takes nearly all of the sum"),
        pytest.param(0.0, 0.5, id="a forecast of nothing whose bound allows some demand is sized at the bound"),
    ],
)
def test_a_forecast_s_margin_and_a_minute_s_add_in_quadrature(mean: float, upper: float) -> None:
    """Independent errors: the quantile of their sum is the root of the sum of their quantiles' squares."""
    plan = copilot_plan()
    table = capacity_table(plan, plan.tiers[0], 1.0)
    noise = table.minute_z * math.sqrt(mean / 60.0)
    combined = table.minute_rate(mean, upper)
    assert combined == pytest.approx(mean + math.sqrt((upper - mean) ** 2 + noise**2), rel=1e-12)
    assert table.minute_rates([mean], [upper])[0] == combined  # one arithmetic, one point or an array
    assert max(upper, table.minute_rate(mean)) <= combined <= table.minute_rate(upper)  # the margins added
    assert table.minute_rate(mean, mean) == table.minute_rate(mean) == table.minute_rates([mean])[0]


@pytest.mark.parametrize(
    ("bursts", "upper"),
    [
        pytest.param(0.0, None, id="no bursts measured is Poisson's minute exactly"),
        pytest.param(0.05, None, id="bursts of 22% coefficient of variation widen a minute's margin"),
        pytest.param(0.05, 9.0, id="with a forecast's bound the bursts add in quadrature to its margin too"),
    ],
)
def test_production_s_bursts_add_their_variance_to_a_minute_s_poisson_count(bursts: float, upper: float | None) -> None:
    """A minute's rate is its mean times a factor of variance alpha: variance r / 60 + alpha r^2."""
    plan = copilot_plan()
    table = capacity_table(plan, plan.tiers[0], 1.0)
    mean = 8.0
    spread = table.minute_z * math.sqrt(mean / 60.0 + bursts * mean * mean)
    forecast = 0.0 if upper is None else upper - mean
    rate = table.minute_rate(mean, upper, bursts)
    assert rate == pytest.approx(mean + math.hypot(forecast, spread), rel=1e-12)
    uppers = None if upper is None else [upper]
    assert table.minute_rates([mean], uppers, bursts)[0] == rate  # one arithmetic, one point or an array
    assert (rate > table.minute_rate(mean, upper)) == (bursts > 0)
    assert table.replicas_for_minutes(mean, bursts) == table.replicas_for(table.minute_rate(mean, bursts=bursts))


@pytest.mark.parametrize(
    ("spare", "replicas", "gpus", "cold_s", "rate", "expected"),
    [
        pytest.param("auto", 4, 4, 600.0, 2e-5, 0, id="auto: 16 GPUs x 2e-5 x 10 min is 5.3e-5, under 1e-3: none"),
        pytest.param("auto", 100, 4, 600.0, 2e-5, 1, id="auto: 400 GPUs x 2e-5 x 10 min is 1.3e-3, over 1e-3: one"),
        pytest.param("auto", 4, 4, 600.0, 0.0, 0, id="auto with no failures keeps none"),
        pytest.param("always", 1, 1, 60.0, 0.0, 1, id="always keeps one even when failures cost nothing"),
        pytest.param("always", 0, 4, 600.0, 2e-5, 0, id="a tier that needs none keeps no spare"),
        pytest.param("never", 500, 8, 3600.0, 2e-5, 0, id="never keeps none even where auto would"),
    ],
)
def test_the_spare_rule(spare: str, replicas: int, gpus: int, cold_s: float, rate: float, expected: int) -> None:
    plan = copilot_plan()  # availability 0.999
    tier = plan.tiers[0].model_copy(
        update={"tensor_parallel": gpus, "replicas": plan.tiers[0].replicas.model_copy(update={"spare": spare})}
    )
    assert spare_replicas(plan, tier, replicas, cold_s, rate) == expected


def test_a_plan_s_spare_defaults_to_auto_and_a_wrong_value_names_the_field() -> None:
    text = (EXAMPLES / "support-copilot.yaml").read_text(encoding="utf-8")
    assert copilot_plan().tiers[0].replicas.spare == "auto"
    bad = text.replace("replicas: {min: 1, max: 5, planned: 4}", "replicas: {min: 1, max: 5, planned: 4, spare: some}")
    assert bad != text
    with pytest.raises(PlanError, match=r"tiers\[0\]\.replicas\.spare"):
        parse_plan(bad)


def test_the_service_sets_the_failure_rate_and_refuses_a_negative_one_by_name() -> None:
    assert AdviceConfig(gpu_failures_per_gpu_hour=1e-4).to_advice_settings().gpu_failures_per_gpu_hour == 1e-4
    with pytest.raises(ValidationError, match="gpu_failures_per_gpu_hour"):
        AdviceConfig(gpu_failures_per_gpu_hour=-1.0)
