"""Scenarios starting partway through a backfill change what the live fleet would show, from their start.

Checked on the text handed to promtool (no Prometheus needed): every sample is `name{labels} value stamp`.
"""

from __future__ import annotations

import io
from collections import defaultdict

import numpy as np
import pytest

from fleetsim.backfill_run import history_text
from fleetsim.scenarios import SLOW_TP, parse_scenarios

from .helpers import WEDNESDAY_NOON_UTC, diurnal_plan, spec_for

START = WEDNESDAY_NOON_UTC - 4 * 3600
FAIL_AT = WEDNESDAY_NOON_UTC - 2 * 3600


def samples(scenario: str, replicas: int = 2) -> tuple[dict[str, list[tuple[float, float]]], object]:
    """series text -> [(stamp, value)], and the end state."""
    plan = diurnal_plan(peak=6.0, average=6.0, replicas=replicas)
    spec = spec_for(plan, START, WEDNESDAY_NOON_UTC, step=60, scenarios=parse_scenarios(scenario))
    out = io.BytesIO()
    report = history_text(spec, out)
    series: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for line in out.getvalue().decode().splitlines():
        if not line.startswith("#"):
            name, value, stamp = line.rsplit(" ", 2)
            series[name].append((float(stamp), float(value)))
    return series, report.state


def matching(series: dict[str, list[tuple[float, float]]], *parts: str) -> list[tuple[float, float]]:
    found = [v for k, v in series.items() if all(p in k for p in parts)]
    assert len(found) == 1, (parts, len(found))
    return found[0]


def test_replica_down_stops_the_failed_pods_metrics_and_marks_it_everywhere() -> None:
    series, state = samples(f"replica-down@{FAIL_AT:.0f}")
    prompt = matching(series, "vllm:prompt_tokens_total{", 'pod="fast-1"')
    assert max(t for t, _ in prompt) < FAIL_AT, "a failed pod's /metrics answers 503: no samples"
    up = dict(matching(series, "up{", 'job="vllm"', 'pod="fast-1"'))
    assert up[FAIL_AT - 60] == 1.0 and up[FAIL_AT] == 0.0 and up[WEDNESDAY_NOON_UTC] == 0.0
    xid = dict(matching(series, "DCGM_FI_DEV_XID_ERRORS{", 'exported_pod="fast-1"'))
    assert xid[FAIL_AT - 60] == 0.0 and xid[FAIL_AT] == 79.0
    ready = dict(matching(series, "kube_pod_status_ready{", 'condition="false"', 'pod="fast-1"'))
    assert ready[FAIL_AT - 60] == 0.0 and ready[FAIL_AT] == 1.0
    assert state.pods["fast-1"].ready_unix is None and state.pods["fast-0"].ready_unix is not None  # type: ignore[attr-defined]


def test_replica_down_moves_the_failed_pods_load_to_the_rest_of_its_tier() -> None:
    series, _ = samples(f"replica-down@{FAIL_AT:.0f}")
    served = dict(matching(series, "vllm:request_success_total{", 'finished_reason="stop"', 'pod="fast-0"'))
    before = served[FAIL_AT - 60] - served[FAIL_AT - 3660]
    after = served[WEDNESDAY_NOON_UTC] - served[WEDNESDAY_NOON_UTC - 3600]
    assert after / before == pytest.approx(2.0, rel=0.1)


@pytest.mark.parametrize(
    ("scenario", "series_parts", "expected_ratio"),
    [
        pytest.param(
            "tool-calls", ("gateway_model_calls_total{",), 5.0, id="tool-calls: five model calls per user request"
        ),
        pytest.param("over-peak", ("gateway_user_requests_total{",), 1.4, id="over-peak: 40% more user requests"),
    ],
)
def test_a_scenario_changes_its_counter_only_from_its_start(
    scenario: str, series_parts: tuple[str, ...], expected_ratio: float
) -> None:
    series, _ = samples(f"{scenario}@{FAIL_AT:.0f}")
    values = dict(matching(series, *series_parts))
    before = values[FAIL_AT - 60] - values[FAIL_AT - 3660]
    after = values[WEDNESDAY_NOON_UTC] - values[WEDNESDAY_NOON_UTC - 3600]
    assert after / before == pytest.approx(expected_ratio, rel=0.1)


def test_slow_tp_raises_inter_token_latency_from_its_start() -> None:
    series, _ = samples(f"slow-tp@{FAIL_AT:.0f}", replicas=1)
    total = dict(matching(series, "vllm:inter_token_latency_seconds_sum{"))
    count = dict(matching(series, "vllm:inter_token_latency_seconds_count{"))

    def mean(a: float, b: float) -> float:
        return (total[b] - total[a]) / (count[b] - count[a])

    before = mean(FAIL_AT - 3660, FAIL_AT - 60)
    after = mean(WEDNESDAY_NOON_UTC - 3600, WEDNESDAY_NOON_UTC)
    assert after / before == pytest.approx(1 / SLOW_TP, rel=0.15)
    assert np.isfinite(before)
