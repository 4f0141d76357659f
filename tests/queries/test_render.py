"""The catalog's shape and its three renderings (pure: checked on the text, no Prometheus)."""

from __future__ import annotations

import re

import pytest

from monitor import queries as q
from monitor.queries import ALL, Query, Selector, catalog

NAME = re.compile(r"^tier:[a-zA-Z_][a-zA-Z0-9_]*:[a-z0-9_]+$")
EACH = [pytest.param(x, id=x.name) for x in ALL]


@pytest.mark.parametrize("query", EACH)
def test_names_follow_level_metric_operation(query: Query) -> None:
    assert NAME.match(query.name), query.name
    if query.window is not None and "{window}" in query.template:
        assert query.name.endswith(f"_{query.window}")


def test_names_are_unique_and_looked_up_by_name() -> None:
    assert len({x.name for x in ALL}) == len(ALL)
    assert catalog.get("tier:vllm_time_to_first_token_seconds:p95_5m") is q.TTFT_P95
    with pytest.raises(KeyError, match="no catalog query named"):
        catalog.get("tier:nope:p95_5m")


@pytest.mark.parametrize("query", EACH)
def test_every_vllm_selector_skips_the_router_and_other_tiers(query: Query) -> None:
    text = query.for_tier({"tier": "standard"})
    for name, selector in re.findall(r"(vllm:[a-z_]+)(\{[^}]*\})?", text):
        if name == "vllm:cache_config_info":  # exports no model_name (an info gauge per engine): tier only
            assert 'tier="standard"' in selector, text
            continue
        assert 'model_name!=""' in selector and 'tier="standard"' in selector, text


@pytest.mark.parametrize("query", EACH)
def test_histograms_are_aggregated_by_le_and_model_before_the_quantile(query: Query) -> None:
    text = query.for_all_tiers()
    for grouping in re.findall(r"histogram_quantile\([0-9.]+, sum by \(([^)]*)\)", text):
        assert [g.strip() for g in grouping.split(",")] == ["tier", "le", "model_name"]
    assert "sum by (le)" not in text


@pytest.mark.parametrize("query", EACH)
def test_the_three_renderings_fill_every_placeholder(query: Query) -> None:
    per_tier = query.for_tier({"tier": "a"})
    grouped = query.for_all_tiers("service_tier")
    grafana = query.for_grafana("service_tier", "tier")
    for text in (per_tier, grouped, grafana):
        assert not re.search(r"\{(sel|vsel|window|step|by)[}:]", text), text
    assert 'service_tier!=""' in grouped and "tier!=" not in per_tier
    assert 'service_tier=~"$tier"' in grafana
    if "{window}" in query.template:
        assert "$__rate_interval" in grafana and "[$__rate_interval" in grafana


@pytest.mark.parametrize(
    ("query", "per_tier"),
    [
        pytest.param(q.REQUEST_RATE, 'sum by () (rate(vllm:request_success_total{model_name!="",tier="a"}[5m]))',
                     id="a rate for one tier has no grouping left"),
        pytest.param(q.TTFT_P95, 'histogram_quantile(0.95, sum by (le, model_name) '
                     '(rate(vllm:time_to_first_token_seconds_bucket{model_name!="",tier="a"}[5m])))',
                     id="a quantile for one tier keeps le and model_name"),
        pytest.param(q.KV_USAGE_MEAN, 'avg by () (avg_over_time(vllm:kv_cache_usage_perc{model_name!="",tier="a"}[5m])'
                     ' or avg_over_time(vllm:gpu_cache_usage_perc{model_name!="",tier="a"}[5m]))',
                     id="KV usage falls back to the V0 name per series"),
    ],
)  # fmt: skip
def test_known_per_tier_renderings(query: Query, per_tier: str) -> None:
    assert query.for_tier(Selector({"tier": "a"})) == per_tier


def test_grouped_rendering_groups_by_the_chosen_tier_label() -> None:
    assert q.REQUEST_RATE.for_all_tiers("pool") == (
        'sum by (pool) (rate(vllm:request_success_total{model_name!="",pool!=""}[5m]))'
    )


def test_grafana_rendering_uses_the_dashboard_variable_and_intervals() -> None:
    assert q.PEAK_REQUEST_RATE.for_grafana() == (
        'max_over_time((sum by (tier) (rate(vllm:request_success_total{model_name!="",tier=~"$tier"}'
        "[$__interval])))[$__rate_interval:$__interval])"
    )


def test_windows_are_parameters_and_rename_the_query() -> None:
    hourly = q.TTFT_P95.with_window("1h")
    assert hourly.name == "tier:vllm_time_to_first_token_seconds:p95_1h"
    assert "[1h]" in hourly.for_tier({"tier": "a"})
    assert "[30m]" in q.TTFT_P95.for_tier({"tier": "a"}, window="30m")
    assert q.RUNNING.name == "tier:vllm_num_requests_running:sum"


@pytest.mark.parametrize(
    "window",
    [
        pytest.param("5 m", id="a space"),
        pytest.param("5m] or vector(1) [5m", id="an injection through the window"),
        pytest.param("", id="nothing"),
        pytest.param("m5", id="unit before number"),
    ],
)
def test_windows_must_be_promql_durations(window: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        q.REQUEST_RATE.with_window(window)


def test_the_recorded_series_of_a_tier() -> None:
    assert q.TTFT_P95.recorded({"tier": 'a"b'}) == 'tier:vllm_time_to_first_token_seconds:p95_5m{tier="a\\"b"}'


def test_an_unknown_placeholder_is_an_error() -> None:
    with pytest.raises(KeyError, match="unknown placeholder"):
        Query("x", "sum", "sum(x{tier})", "u", "d").for_tier({"tier": "a"})
