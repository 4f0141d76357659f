"""Share of observations over a threshold, interpolated inside the bucket (pure)."""

from __future__ import annotations

import math

import pytest

from monitor.queries import Bucket, count_at, fraction_over, fraction_over_groups

INF = math.inf
TTFT = [Bucket(0.5, 40), Bucket(1.0, 80), Bucket(2.5, 90), Bucket(INF, 100)]


@pytest.mark.parametrize(
    ("threshold", "expected"),
    [
        pytest.param(1.0, 0.20, id="at a bucket bound the count is exact"),
        pytest.param(1.2, 1 - (80 + 10 * 0.2 / 1.5) / 100, id="inside a bucket the count is interpolated"),
        pytest.param(0.25, 1 - 20 / 100, id="the first bucket starts at 0"),
        pytest.param(0.0, 1.0, id="everything is over a threshold of 0"),
        pytest.param(2.5, 0.10, id="at the highest finite bound only the +Inf bucket is over"),
    ],
)
def test_fraction_over_a_threshold(threshold: float, expected: float) -> None:
    assert fraction_over(TTFT, threshold).fraction == pytest.approx(expected)


@pytest.mark.parametrize(
    ("buckets", "threshold", "reason"),
    [
        pytest.param(TTFT, 3.0, "above the highest finite bucket", id="beyond the last finite bound is unknown"),
        pytest.param([Bucket(1.0, 5)], 0.5, "no +Inf bucket", id="a histogram without +Inf is incomplete"),
        pytest.param([], 0.5, "no +Inf bucket", id="no buckets at all"),
    ],
)
def test_uninterpretable_buckets_give_no_fraction(buckets: list[Bucket], threshold: float, reason: str) -> None:
    share = fraction_over(buckets, threshold)
    assert share.fraction is None
    assert reason in share.reason


def test_no_observations_give_no_fraction_rather_than_zero() -> None:
    assert fraction_over([Bucket(1.0, 0), Bucket(INF, 0)], 0.5).fraction is None


def test_count_at_interpolates_linearly() -> None:
    assert count_at(TTFT, 0.75) == pytest.approx(60)
    assert count_at(TTFT, 10) is None


def test_histograms_of_different_models_are_interpolated_separately_then_added() -> None:
    samples = [
        ({"le": "1000", "model_name": "small"}, 10.0), ({"le": "+Inf", "model_name": "small"}, 10.0),
        ({"le": "100", "model_name": "big"}, 0.0), ({"le": "10000", "model_name": "big"}, 10.0),
        ({"le": "+Inf", "model_name": "big"}, 10.0), ({"le": "+Inf", "model_name": "odd"}, math.nan),
    ]  # fmt: skip
    share = fraction_over_groups(samples, 500.0)
    small_over = 10 - 10 * 0.5  # (0, 1000] holds 10: half of them above 500
    big_over = 10 - 10 * (400 / 9900)  # (100, 10000] holds 10
    assert share.total == 20
    assert share.over == pytest.approx(small_over + big_over)
