"""A real Prometheus scrapes the emulator through file_sd at 1 s, time compressed 10x (--speed 10):
PromQL sees the generated workload. Rates are per wall second, so they read `speed` x the simulated rate."""

from __future__ import annotations

import httpx
import pytest

from tests.harness.stack import wait_for

from .conftest import LiveFleet

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RPS = 5.0  # the plan's flat rate (tiny_plan_data)
WINDOW = "15s"


def wait_for_scrapes(live: LiveFleet, scrapes: int = 14) -> LiveFleet:
    """Wait until Prometheus holds `scrapes` scrapes of both vLLM targets in the window."""

    def scraped(n: int) -> bool:
        got = live.query(f"count_over_time(up{{job='vllm'}}[{WINDOW}])")
        return len(got) == 2 and min(float(r["value"][1]) for r in got) >= n

    wait_for(lambda: scraped(scrapes), 60, f"{scrapes} scrapes of both vLLM targets", interval=1.0)
    # Two more scrapes of both targets (1 s apart) after the window first fills.
    filled = _last_scrape(live)
    wait_for(lambda: _last_scrape(live) >= filled + 2, 30, "two more scrapes of both vLLM targets", interval=0.5)
    return live


def _last_scrape(live: LiveFleet) -> float:
    """When the target scraped least recently was last scraped."""
    got = live.query("min(timestamp(up{job='vllm'}))")
    return float(got[0]["value"][1]) if got else float("-inf")


@pytest.fixture(scope="module")
def warm(live_fleet: LiveFleet) -> LiveFleet:
    return wait_for_scrapes(live_fleet)


def test_every_target_is_up_and_selectable_by_tier(warm: LiveFleet) -> None:
    ups = {(r["metric"]["job"], r["metric"]["pod"]): r["value"][1] for r in warm.query('up{tier="fast"}')}
    assert ups == {(job, pod): "1" for job in ("vllm", "dcgm-exporter") for pod in ("fast-0", "fast-1")}
    assert warm.scalar('count(up{job=~"gateway|kube-state-metrics"} == 1)') == 2


def test_request_rate_matches_the_plan(warm: LiveFleet) -> None:
    rate = warm.scalar(f'sum(rate(vllm:request_success_total{{tier="fast"}}[{WINDOW}]))') / warm.speed
    assert rate == pytest.approx(RPS, rel=0.2)
    users = warm.scalar(f"sum(rate(gateway_user_requests_total[{WINDOW}]))") / warm.speed
    assert users == pytest.approx(RPS, rel=0.2)
    fan_out = warm.scalar(
        f"sum(rate(gateway_model_calls_total[{WINDOW}])) / sum(rate(gateway_user_requests_total[{WINDOW}]))"
    )
    assert fan_out == 1.0


@pytest.mark.parametrize(
    ("metric", "q", "low", "high"),
    [
        pytest.param("vllm:request_prompt_tokens", 0.5, 1000, 2000, id="prompt p50 (1,500) lands in its bucket"),
        pytest.param("vllm:request_prompt_tokens", 0.95, 5000, 10000, id="prompt p95 (6,000) lands in its bucket"),
        pytest.param("vllm:request_generation_tokens", 0.5, 100, 200, id="output p50 (150) lands in its bucket"),
        pytest.param("vllm:time_to_first_token_seconds", 0.95, 0.0, 0.5, id="TTFT p95 is short under light load"),
    ],
)
def test_quantiles_through_promql_match_the_workload(warm: LiveFleet, metric: str, q: float, low: float,
                                                     high: float) -> None:  # fmt: skip
    expr = f'histogram_quantile({q}, sum by (le) (rate({metric}_bucket{{tier="fast"}}[{WINDOW}])))'
    assert low <= warm.scalar(expr) <= high


def test_prefix_hit_rate_through_promql_matches_the_plan(warm: LiveFleet) -> None:
    expr = f"sum(rate(vllm:prefix_cache_hits_total[{WINDOW}])) / sum(rate(vllm:prefix_cache_queries_total[{WINDOW}]))"
    assert warm.scalar(expr) == pytest.approx(0.30, abs=0.05)


def test_cold_start_and_gpu_series_are_joinable_by_pod(warm: LiveFleet) -> None:
    cold = warm.query("kube_pod_status_ready_time - on (pod) kube_pod_created")
    assert sorted(float(r["value"][1]) for r in cold) == [120.0, 120.0]
    gpu = warm.query('DCGM_FI_DEV_GPU_UTIL{tier="fast"}')
    assert {(r["metric"]["pod"], r["metric"]["exported_pod"]) for r in gpu} == {
        ("fast-0", "fast-0"),
        ("fast-1", "fast-1"),
    }
    assert all(0 < float(r["value"][1]) <= 100 for r in gpu)
    kv = warm.query('max by (pod) (vllm:kv_cache_usage_perc{tier="fast"})')
    assert len(kv) == 2 and all(0 <= float(r["value"][1]) < 1 for r in kv)


def test_the_legacy_generation_is_scraped_under_its_own_names(live_legacy: LiveFleet) -> None:
    live = wait_for_scrapes(live_legacy, 6)
    names = {r["metric"]["__name__"] for r in live.query('{job="vllm", __name__=~"vllm:.*"}')}
    assert {"vllm:gpu_cache_usage_perc", "vllm:gpu_prefix_cache_hits_total"} <= names
    assert "vllm:time_per_output_token_seconds_bucket" in names
    assert not names & {"vllm:kv_cache_usage_perc", "vllm:inter_token_latency_seconds_bucket"}
    assert live.query('vllm:num_requests_running{engine!=""}') == []


def test_a_scenario_posted_at_run_time_shows_in_promql(live_legacy: LiveFleet) -> None:
    """POST /scenario tool-calls: the gateway's model calls per user request go from 1 to 5."""
    response = httpx.post(f"http://{live_legacy.address}/scenario", json={"scenarios": ["tool-calls"]}, timeout=10)
    assert response.status_code == 200 and response.json()["scenarios"] == "tool-calls"
    fan_out = "sum(rate(gateway_model_calls_total[8s])) / sum(rate(gateway_user_requests_total[8s]))"
    wait_for(lambda: live_legacy.scalar(fan_out) == pytest.approx(5.0, rel=0.12), 30, "five calls per request")
