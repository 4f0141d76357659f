"""Burn-rate arithmetic with known answers (Google SRE workbook, chapter 5)."""

from __future__ import annotations

import pytest

from monitor.slo import SRE_POLICY, budget_spent, burn_rate, error_budget


@pytest.mark.parametrize(
    ("objective", "budget"),
    [
        pytest.param(0.999, 0.001, id="99.9% availability leaves a 0.1% error budget"),
        pytest.param(0.95, 0.05, id="a p95 latency SLO leaves 5% of requests over the threshold"),
    ],
)
def test_error_budget(objective: float, budget: float) -> None:
    assert error_budget(objective) == pytest.approx(budget)


@pytest.mark.parametrize(
    ("bad", "objective", "rate"),
    [
        pytest.param(0.0144, 0.999, 14.4, id="1.44% errors against 99.9% burns at 14.4"),
        pytest.param(0.05, 0.95, 1.0, id="exactly 5% slow requests burn a p95 budget at 1"),
        pytest.param(0.0, 0.999, 0.0, id="no errors burn nothing"),
    ],
)
def test_burn_rate(bad: float, objective: float, rate: float) -> None:
    assert burn_rate(bad, objective) == pytest.approx(rate)


@pytest.mark.parametrize(
    ("factor", "window", "spent"),
    [
        pytest.param(14.4, "1h", 0.02, id="burning at 14.4 for an hour spends 2% of a 30-day budget"),
        pytest.param(6.0, "6h", 0.05, id="burning at 6 for six hours spends 5%"),
        pytest.param(1.0, "3d", 0.1, id="burning at 1 for three days spends 10%"),
    ],
)
def test_budget_spent(factor: float, window: str, spent: float) -> None:
    assert budget_spent(factor, window) == pytest.approx(spent)


def test_policy_short_windows_are_a_twelfth_of_the_long_ones() -> None:
    from monitor.units import parse_duration

    for w in SRE_POLICY:
        assert parse_duration(w.short) == pytest.approx(parse_duration(w.long) / 12)
