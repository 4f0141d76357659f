"""The burst fit: Poisson minutes read as none, whatever the day's shape or the scrape's extrapolation; bursts
whose size grows with the traffic read as their alpha."""

from __future__ import annotations

import numpy as np
import pytest

from monitor.observe.dispersion import MIN_MINUTES, REACH, fit_bursts, overdispersion

WEEK = np.arange(7 * 1440)
DAILY = 4.0 + 3.0 * np.sin(2.0 * np.pi * WEEK / 1440.0)  # req/s, a day's swing from 1 to 7


def _poisson(rate: np.ndarray, seconds: float, seed: int) -> np.ndarray:
    """1-minute rates as `rate()` gives them from `seconds` of counts (60: the minute's own count)."""
    return np.random.default_rng(seed).poisson(rate * seconds) / seconds


@pytest.mark.parametrize(
    "rates",
    [
        _poisson(DAILY, 60.0, 1),
        _poisson(DAILY, 60.0, 2),
        _poisson(8.0 * np.clip(np.minimum(WEEK % 1440 - 420.0, 1200.0 - WEEK % 1440) / 60.0, 0.0, 1.0), 60.0, 3),
        _poisson(DAILY, 45.0, 4),
        _poisson(DAILY, 30.0, 5),
    ],
    ids=[
        "a week of Poisson minutes over a daily swing",
        "another draw of the same",
        "Poisson minutes on an hour-long morning ramp to a flat day and an evening's fall to none",
        "1-minute rates extrapolated from 45 s of counts (15 s scrapes): more noise, but in proportion to the rate",
        "1-minute rates from 30 s of counts (30 s scrapes)",
    ],
)
def test_poisson_minutes_read_as_no_bursts(rates: np.ndarray) -> None:
    fit = fit_bursts(rates)
    assert fit is not None and fit.alpha == 0.0
    assert abs(fit.estimate) < 3.0 * fit.standard_error


def test_extrapolated_rates_show_in_the_count_term_not_the_bursts() -> None:
    fit = fit_bursts(_poisson(DAILY, 30.0, 6))
    assert fit is not None and fit.phi == pytest.approx(2.0, rel=0.1) and fit.alpha == 0.0


@pytest.mark.parametrize(
    ("share", "height", "within"),
    [(0.1, 3.5, 0.1), (0.3, 2.0, 0.1), (0.05, 6.4, 0.2)],
    ids=["10% of minutes at 3.5x", "30% at 2x",
         "5% at 6.4x, as fleetsim's bursty scenario's bursts (rarer and taller: a week's fit spreads wider)"],
)  # fmt: skip
def test_bursts_that_grow_with_the_traffic_read_as_their_squared_coefficient_of_variation(
    share: float, height: float, within: float
) -> None:
    """Eight weeks each: the fit is unbiased (a week's spreads 5-16% around the truth, tallest bursts widest)."""
    ratios = []
    for seed in range(8):
        rng = np.random.default_rng(seed)
        factor = np.where(rng.random(WEEK.size) < share, height, 1.0)
        factor /= factor.mean()
        fit = fit_bursts(rng.poisson(DAILY * factor * 60.0) / 60.0)
        assert fit is not None and fit.alpha > 0 and fit.estimate > 10 * fit.standard_error
        ratios.append(fit.alpha / float(factor.var()))
    assert float(np.mean(ratios)) == pytest.approx(1.0, abs=within)


def test_a_level_that_never_moves_cannot_tell_the_count_s_noise_from_bursts() -> None:
    assert fit_bursts(_poisson(np.full(WEEK.size, 5.0), 60.0, 10)) is None


def test_unknown_minutes_are_left_out_and_too_few_fit_nothing() -> None:
    rates: list[float | None] = list(_poisson(DAILY, 60.0, 8))
    for start in range(0, len(rates), 300):  # a scrape gap every 5 hours
        rates[start : start + 20] = [None] * 20
    fit = fit_bursts(rates)
    assert fit is not None and fit.alpha == 0.0 and fit.minutes < len(rates) - 2 * REACH - 100
    assert fit_bursts(rates[: MIN_MINUTES + 2 * REACH - 1]) is None  # the minutes within reach of an end count not
    assert fit_bursts([0.0] * 500) is None  # no traffic


def test_the_observation_is_alpha_from_its_minutes_or_unknown_with_why() -> None:
    fit = fit_bursts(_poisson(DAILY, 60.0, 9))
    seen, unseen = overdispersion(fit, "7d"), overdispersion(None, "7d")
    assert fit is not None and (seen.value, seen.samples, seen.window) == (0.0, fit.minutes, "7d")
    assert unseen.value is None and "no burst fit over 7d" in unseen.reason
