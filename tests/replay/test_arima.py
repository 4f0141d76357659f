"""The predictive policy's ARIMA load predictor (Dynamo's SLA planner style) and its fallbacks."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.tsa.arima.model import ARIMA

from monitor.replay.arima import ARIMA_ORDER, ArimaPredictor, one_step_forecast
from monitor.replay.demand import profile_demand
from monitor.replay.run import ReplayConfig, run_replay
from tests.replay.plans import one_tier_plan


def _walk(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 10.0 + np.cumsum(rng.normal(0.0, 0.3, n)) + rng.normal(0.0, 0.5, n)


def test_the_recursion_forecasts_what_statsmodels_forecasts_with_the_same_fit() -> None:
    y = _walk(100)
    fit = ARIMA(y, order=ARIMA_ORDER).fit(cov_type="none")
    ours = one_step_forecast(y, tuple(fit.arparams), tuple(fit.maparams))
    assert ours == pytest.approx(float(fit.forecast(1)[0]), rel=1e-6)


def _fed(rates: list[float] | np.ndarray, **kwargs: int) -> ArimaPredictor:
    p = ArimaPredictor(**kwargs)
    for r in rates:
        p.add(float(r))
    return p


@pytest.mark.parametrize(
    ("rates", "expected"),
    [
        pytest.param([], 0.0, id="no history predicts no demand"),
        pytest.param([3.0, 4.0, 7.5], 7.5, id="under five points it is the last value, as Dynamo's"),
        pytest.param([6.0] * 30, 6.0, id="a flat history is not fitted: the last value"),
        pytest.param([1.0, 2.0, float("nan"), 4.0, 5.0, 0.0], None, id="a NaN rate counts as zero, as Dynamo's"),
    ],
)
def test_short_or_flat_history_falls_back_to_the_last_value(rates: list[float], expected: float | None) -> None:
    p = _fed(rates)
    if expected is None:
        assert np.isfinite(p.predict()) and p.predict() >= 0.0
    else:
        assert p.predict() == expected


def test_a_failed_fit_falls_back_to_the_last_value(monkeypatch: pytest.MonkeyPatch) -> None:
    import statsmodels.tsa.arima.model as arima_model

    def broken(*args: object, **kwargs: object) -> None:
        raise np.linalg.LinAlgError("singular")

    monkeypatch.setattr(arima_model, "ARIMA", broken)
    y = _walk(40)
    assert _fed(y).predict() == y[-1]


def test_on_a_steady_ramp_arima_runs_ahead_of_the_last_value() -> None:
    """What ARIMA buys over last value on a morning ramp: the drift of the differences carries forward."""
    rng = np.random.default_rng(1)
    ramp = 2.0 + 0.1 * np.arange(60) + rng.normal(0.0, 0.05, 60)
    p = _fed(ramp)
    assert p.predict() > ramp[-1] + 0.05
    assert p.predict() == pytest.approx(2.0 + 0.1 * 60, abs=0.3)


def test_parameters_are_refitted_on_their_cadence_not_every_interval() -> None:
    y = _walk(130)
    p = ArimaPredictor(refit_every=60)
    for value in y:
        p.add(float(value))
        p.predict()
    assert p.fits == 3  # at 5 points, then every 60 more


def test_the_predictive_policy_moves_at_most_one_replica_per_interval() -> None:
    plan = one_tier_plan(cold_start="5m")
    demand = profile_demand(plan, (), 1.0, np.random.default_rng(5))
    record = run_replay(plan, demand, ReplayConfig(policies=("predictive",))).run("predictive").fleets["chat"].record
    wanted = record.billed
    assert np.abs(np.diff(wanted)).max() <= 1
    assert wanted.max() > wanted.min()  # it does follow the day
