"""A quantile in the histogram's first or top bucket is a bound ("at most 1 token", "above 2560 s"): where the
bound is found, how drift judges it (only where the bound decides the status), and how a table shows it."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from monitor.drift import DriftRow, Status, describe_bound, fleet_drift, tier_drift
from monitor.histogram import QuantileBound, merged_quantile_bound, quantile, quantile_bound
from monitor.observe.model import Measurement
from monitor.plan import load_plan
from monitor.queries import Bucket
from monitor.sizing.tier import size_tier
from monitor.triggers import evaluate_triggers
from tests.builders import EXAMPLES, baseline_fleet_observation, baseline_observation

INF = math.inf
TOKENS = [Bucket(1, 0), Bucket(2, 0), Bucket(5, 0), Bucket(10, 0), Bucket(INF, 0)]


def _tokens(*counts: float) -> list[Bucket]:
    """Cumulative counts at 1, 2, 5, 10 and +Inf."""
    return [Bucket(b.le, c) for b, c in zip(TOKENS, counts, strict=True)]


@pytest.mark.parametrize(
    ("q", "buckets", "bound"),
    [
        pytest.param(0.5, _tokens(100, 100, 100, 100, 100), QuantileBound("at most", 1),
                     id="every output in the first bucket: the median is at most its bound"),
        pytest.param(0.95, _tokens(0, 0, 0, 10, 100), QuantileBound("above", 10),
                     id="a p95 in the +Inf bucket is above the top finite bound"),
        pytest.param(0.5, _tokens(0, 20, 80, 100, 100), None,
                     id="a median inside a bucket with a bound on each side is a measurement"),
        pytest.param(0.5, _tokens(0, 0, 0, 0, 0), None, id="no observations give no bound (and no value)"),
        pytest.param(0.5, [Bucket(1, 5), Bucket(2, 9)], None, id="a histogram without +Inf gives no bound"),
    ],
)  # fmt: skip
def test_a_quantile_in_an_edge_bucket_is_a_bound(q: float, buckets: list[Bucket], bound: QuantileBound | None) -> None:
    assert quantile_bound(q, buckets) == bound
    if bound is not None and bound.side == "above":  # histogram_quantile answers the bound itself
        assert quantile(q, buckets) == bound.bound


def test_merged_histograms_are_bounded_at_the_union_of_their_bounds() -> None:
    short = [Bucket(1, 0), Bucket(2, 0), Bucket(INF, 10)]  # all above 2
    long = [Bucket(1, 0), Bucket(2, 0), Bucket(5, 0), Bucket(10, 0), Bucket(INF, 10)]  # all above 10
    assert merged_quantile_bound(0.5, [short, long]) == QuantileBound("above", 10)


def _bounded(side: str, bound: float) -> Measurement:
    value = bound if side == "above" else bound / 2  # histogram_quantile interpolates up from 0 in the first bucket
    return Measurement(value, "q", "1h", 100, bound=QuantileBound(side, bound))  # type: ignore[arg-type]


COPILOT = load_plan(EXAMPLES / "support-copilot.yaml")


def _tier_row(field: str, assumption: str, m: Measurement) -> DriftRow:
    rows = tier_drift(COPILOT, size_tier(COPILOT, COPILOT.tiers[0]), replace(baseline_observation(), **{field: m}))
    return next(r for r in rows if r.assumption == assumption)


@pytest.mark.parametrize(
    ("field", "assumption", "observed", "status", "says"),
    [
        pytest.param("output_p50", "output_p50", _bounded("at most", 1), Status.OK, "first bucket: at most 1 token",
                     id="outputs of at most 1 token against 300 planned are certainly not longer: ok, as a bound"),
        pytest.param("ttft_p95", "ttft_p95", _bounded("above", 2560), Status.BREACH, "top bucket: above 2560 s",
                     id="a TTFT above 2560 s certainly breaches the 500 ms SLO"),
        pytest.param("ttft_p95", "ttft_p95", _bounded("above", 0.25), Status.UNKNOWN, "could be ok or worse",
                     id="a TTFT above 0.25 s is ok at the bound but could be anything: unknown, not ok"),
        pytest.param("output_p95", "output_p95", _bounded("at most", 5000), Status.UNKNOWN, "breach or better",
                     id="outputs of at most 5000 tokens breach at the bound but could be shorter: unknown"),
        pytest.param("prefix_hit_rate", "prefix_hit_rate", _bounded("above", 0.9), Status.OK, "above 90.0%",
                     id="on a lower-is-harmful assumption a bound above the plan is certainly ok"),
    ],
)  # fmt: skip
def test_drift_judges_a_bound_only_where_it_decides(
    field: str, assumption: str, observed: Measurement, status: Status, says: str
) -> None:
    row = _tier_row(field, assumption, observed)
    assert row.status is status, row
    assert says in (row.reason if status is Status.UNKNOWN else row.note), row
    assert observed.bound is not None and row.observed.value == observed.bound.bound  # judged (and shown) at it
    assert "a bound, not a measurement" in (row.reason or row.note)


def test_the_fleet_view_judges_bounds_the_same_way() -> None:
    obs = replace(baseline_fleet_observation(), output_p50=_bounded("at most", 1))
    (row,) = [r for r in fleet_drift(COPILOT, obs) if r.assumption == "output_p50"]
    assert row.status is Status.OK and describe_bound(row.observed, row.unit) == "at most 1 token"


@pytest.mark.parametrize(
    ("m", "unit", "text"),
    [
        pytest.param(_bounded("above", 640), "s", "above 640 s", id="a latency bound in the bucket's own seconds"),
        pytest.param(_bounded("at most", 1), "tokens", "at most 1 token", id="one token is singular"),
        pytest.param(_bounded("at most", 20), "tokens", "at most 20 tokens", id="a token bound"),
        pytest.param(Measurement(3.0), "tokens", "", id="a measurement is no bound"),
    ],
)
def test_a_bound_reads_as_what_is_known(m: Measurement, unit: str, text: str) -> None:
    assert describe_bound(m, unit) == text


@pytest.mark.parametrize(
    ("observed", "says"),
    [
        pytest.param(_bounded("above", 5000), "observed above 5,000 tokens against",
                     id="a prompt p95 above the top bound is evidence as a bound"),
        pytest.param(Measurement(4000.0, "q", "1h", 100), "observed 4,000 tokens against",
                     id="a measured prompt p95 is evidence as a measurement"),
    ],
)  # fmt: skip
def test_a_breach_trigger_states_a_bound_as_a_bound(observed: Measurement, says: str) -> None:
    from tests.drift.test_triggers import _inputs

    (record,) = [r for r in evaluate_triggers(_inputs(replace(baseline_observation(), prompt_p95=observed)))
                 if r.trigger == "prompt-p95-above-plan"]  # fmt: skip
    assert says in record.evidence.summary, record.evidence.summary
