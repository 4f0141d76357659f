"""Histogram arithmetic (pure): PromQL's histogram_quantile, and the share over a threshold interpolated inside
its bucket. `tests/rules/test_buckets.py` holds the same functions against promtool."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fleetsim.metrics import TPOT_BUCKETS, TTFT_BUCKETS
from monitor.histogram import FixedBounds, merged_quantile, quantile
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


def test_a_model_whose_buckets_cannot_read_the_threshold_drops_out_as_the_rules_guard_drops_it() -> None:
    """A replica on the pre-#15202 TTFT list (ending at 10 s) cannot say whether a request took more than 15 s."""
    samples = [
        ({"le": "10", "model_name": "old"}, 8.0), ({"le": "+Inf", "model_name": "old"}, 10.0),
        ({"le": "10", "model_name": "new"}, 6.0), ({"le": "20", "model_name": "new"}, 8.0),
        ({"le": "+Inf", "model_name": "new"}, 10.0),
    ]  # fmt: skip
    share = fraction_over_groups(samples, 15.0)
    assert (share.over, share.total) == pytest.approx((10 - 7.0, 10.0))


def test_no_model_able_to_read_the_threshold_is_unknown() -> None:
    share = fraction_over_groups([({"le": "10"}, 8.0), ({"le": "+Inf"}, 10.0)], 15.0)
    assert share.fraction is None and "above the highest finite bucket bound" in share.reason


@pytest.mark.parametrize(
    ("q", "buckets", "expected"),
    [
        pytest.param(0.5, TTFT, 0.5 + 0.5 * (50 - 40) / 40, id="linear inside the bucket that holds the rank"),
        pytest.param(0.2, TTFT, 0.25, id="the first bucket starts at 0"),
        pytest.param(0.95, TTFT, 2.5, id="a rank in the +Inf bucket reads as the highest finite bound"),
        pytest.param(0.8, TTFT, 1.0, id="a rank on a bound reads as that bound"),
        pytest.param(0.5, [Bucket(1.0, 5), Bucket(INF, 4)], 0.5, id="counts are made monotonic first"),
        pytest.param(0.5, [Bucket(1.0, 2), Bucket(1.0, 3), Bucket(INF, 10)], 1.0, id="equal bounds are merged"),
        pytest.param(0.5, [Bucket(1.0, 5)], math.nan, id="without a +Inf bucket there is no quantile"),
        pytest.param(0.5, [Bucket(INF, 5)], math.nan, id="nor with the +Inf bucket alone"),
        pytest.param(0.5, [Bucket(1.0, 0), Bucket(INF, 0)], math.nan, id="nor without observations"),
        pytest.param(-0.1, TTFT, -INF, id="a quantile below 0 is -Inf"),
        pytest.param(1.1, TTFT, INF, id="a quantile above 1 is +Inf"),
        pytest.param(0.5, [Bucket(-1.0, 6), Bucket(1.0, 8), Bucket(INF, 10)], -1.0,
                     id="a rank in a first bucket with a bound at or below 0 reads as that bound"),
    ],
)  # fmt: skip
def test_quantile_is_promqls_histogram_quantile(q: float, buckets: list[Bucket], expected: float) -> None:
    got = quantile(q, buckets)
    assert (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(expected)


def test_merged_quantile_of_histograms_with_the_same_bounds_is_the_quantile_of_their_sum() -> None:
    other = [Bucket(0.5, 10), Bucket(1.0, 20), Bucket(2.5, 60), Bucket(INF, 100)]
    summed = [Bucket(a.le, a.count + b.count) for a, b in zip(TTFT, other, strict=True)]
    for q in (0.5, 0.9, 0.95, 0.99):
        assert merged_quantile(q, [TTFT, other]) == pytest.approx(quantile(q, summed))


def test_merged_quantile_counts_what_a_shorter_list_cannot_bound_as_above_its_last_bound() -> None:
    """Two tiers: one whose buckets stop at 1,000 tokens (10 of its 100 prompts longer), one whose list goes to
    10,000 with everything under 5,000. The 10 longer prompts are above 1,000 for every bound past it."""
    short = [Bucket(1000, 90), Bucket(INF, 100)]
    long = [Bucket(1000, 50), Bucket(5000, 100), Bucket(10_000, 100), Bucket(INF, 100)]
    # Merged: 140 at 1,000, 190 at 5,000 and 10,000, 200 in all. Rank 0.95 x 200 = 190 lies at 5,000.
    assert merged_quantile(0.95, [short, long]) == pytest.approx(5000)
    assert merged_quantile(0.5, [[Bucket(1.0, 0), Bucket(INF, 0)]]) is None


def _random_histograms(rng: np.random.Generator, bounds: tuple[float, ...], rows: int) -> np.ndarray:
    counts = rng.poisson(rng.uniform(0, 5, size=(rows, len(bounds) + 1))).astype(float)
    counts[rng.uniform(size=rows) < 0.2] = 0.0  # some rows observed nothing
    counts *= rng.uniform(0.01, 3.0, size=(rows, 1))  # rates, not whole counts
    return np.cumsum(counts, axis=1)


@pytest.mark.parametrize(
    "bounds",
    [
        pytest.param(TTFT_BUCKETS, id="vLLM's TTFT buckets"),
        pytest.param(TPOT_BUCKETS, id="vLLM's TPOT buckets"),
        pytest.param((0.0, 1.0, 2.0), id="a first bound of 0 is read as a bound"),
    ],
)
def test_fixed_bounds_answer_what_the_scalar_readers_answer_to_the_bit(bounds: tuple[float, ...]) -> None:
    rng = np.random.default_rng(7)
    rows = _random_histograms(rng, bounds, 200)
    reader = FixedBounds(bounds)
    thresholds = [0.0, bounds[0], bounds[-1], 2 * bounds[-1], *rng.uniform(0, bounds[-1], 5)]
    for row, cumulative in enumerate(rows):
        buckets = [Bucket(le, float(c)) for le, c in zip((*bounds, INF), cumulative, strict=True)]
        for threshold in thresholds:
            got = reader.fraction_over(rows[row : row + 1], float(threshold))[0]
            want = fraction_over(buckets, float(threshold)).fraction
            assert (math.isnan(got) and want is None) or got == want, (row, threshold)
        for q in (0.5, 0.95, 0.99, 1.0):
            got, want = reader.quantile(q, rows[row : row + 1])[0], quantile(q, buckets)
            assert (math.isnan(got) and math.isnan(want)) or got == want, (row, q)
        several = reader.quantile((0.5, 0.95, 0.99), np.repeat(rows[row : row + 1], 3, axis=0))
        one_by_one = [reader.quantile(q, rows[row : row + 1])[0] for q in (0.5, 0.95, 0.99)]
        assert np.array_equal(several, one_by_one, equal_nan=True), row  # one quantile per row reads the same


@pytest.mark.parametrize(
    "bounds",
    [
        pytest.param((1.0, 0.5), id="bounds out of order"),
        pytest.param((0.5, 0.5), id="a bound given twice"),
        pytest.param((0.5, INF), id="+Inf given (it is implied)"),
        pytest.param((), id="no bounds"),
    ],
)
def test_fixed_bounds_refuse_a_bucket_list_they_would_misread(bounds: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match="distinct ascending finite bounds"):
        FixedBounds(bounds)
