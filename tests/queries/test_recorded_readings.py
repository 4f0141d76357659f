"""How catalog queries are read back from their recorded series, rendered for one tier (pure)."""

from __future__ import annotations

import pytest

from monitor import queries as q
from monitor.queries.recorded import Recorded, earliest, freshness

TIER = {"tier": 'std"ard'}
SEL = '{tier="std\\"ard"}'


@pytest.mark.parametrize(
    ("reading", "window", "expected"),
    [
        pytest.param(Recorded(q.REQUEST_RATE), "5m", f"tier:vllm_request_success:rate_5m{SEL}",
                     id="a rate over its own window is the recorded value itself"),
        pytest.param(Recorded(q.REQUEST_RATE), "1h", f"avg_over_time(tier:vllm_request_success:rate_5m{SEL}[1h])",
                     id="a rate over a longer window is the mean of the recorded rates"),
        pytest.param(Recorded(q.KV_USAGE_MAX, "max"), "1h",
                     f"max_over_time(tier:vllm_kv_cache_usage_perc:max_5m{SEL}[1h])",
                     id="a maximum is the largest recorded maximum"),
        pytest.param(Recorded(q.REPLICAS_UP, "last"), "1h", f"tier:vllm_replicas_up:count_5m{SEL}",
                     id="state is the value recorded now, whatever the window"),
        pytest.param(Recorded(q.ERROR_RATE, per=q.REQUEST_RATE), "30m",
                     f"avg_over_time(tier:vllm_request_error_or_abort:rate_5m{SEL}[30m]) / "
                     f"avg_over_time(tier:vllm_request_success:rate_5m{SEL}[30m])",
                     id="a ratio divides the window means of its two recorded rates"),
        pytest.param(Recorded(q.TTFT_BUCKETS), "6h",
                     f"avg_over_time(tier:vllm_time_to_first_token_seconds_bucket:rate_5m{SEL}[6h])",
                     id="a bucket vector is averaged per le"),
    ],
)  # fmt: skip
def test_readings_render_the_recorded_series_with_the_tier_escaped(
    reading: Recorded, window: str, expected: str
) -> None:
    assert reading.expr(TIER, window) == expected


def test_a_query_no_rule_records_cannot_be_read_from_recorded_series() -> None:
    with pytest.raises(ValueError, match="not recorded"):
        Recorded(q.REQUEST_RATE_PER_REPLICA)


def test_a_window_that_is_not_a_promql_duration_is_refused() -> None:
    with pytest.raises(ValueError, match="PromQL duration"):
        Recorded(q.REQUEST_RATE).expr(TIER, "1h] or vector(1)")


def test_the_probes_ask_for_the_presence_series_age_and_reach() -> None:
    assert freshness(TIER) == f"time() - timestamp(tier:vllm_replicas_up:count_5m{SEL})"
    assert earliest(TIER, "7d") == f"min_over_time(timestamp(tier:vllm_replicas_up:count_5m{SEL})[7d:5m])"
