"""The observer against a real Prometheus holding what real exporters expose and fleetsim did not: no
kube-state-metrics, V0's prefix-cache gauge, speculative decoding, buckets other than the plan's, misspelt key
series, and a history far shorter than the long window. Each row names the observation and what it must read.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.observe.model import TierObservation
from monitor.observer import PrometheusObserver
from monitor.plan import Plan, parse_plan
from monitor.plan.model import FLEET
from monitor.source import HttpPrometheusSource, SourceSettings
from tests.harness.history import History, times
from tests.harness.stack import BACKENDS, Stack

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
END = 1_790_000_000.0
START = END - 7200.0
MODEL = "meta-llama/Llama-3.3-70B-Instruct"
ITL = ("0.01", "0.025", "0.05", "0.075", "0.1", "0.15", "0.2", "0.3", "0.4", "0.5", "0.75", "1.0", "2.5", "+Inf")
TOKENS_8K = ("1", "2", "5", "10", "20", "50", "100", "200", "500", "1000", "2000", "5000", "+Inf")
TOKENS_32K = (*TOKENS_8K[:-1], "10000", "20000", "+Inf")


def _target(tier: str, pod: str, engine: bool = True) -> dict[str, str]:
    labels = {"job": "vllm", "instance": f"{pod}:8000", "namespace": "llm", "pod": pod, "tier": tier,
              "model_name": MODEL}  # fmt: skip
    return labels | ({"engine": "0"} if engine else {})


def _replica(h: History, labels: dict[str, str], tokens: tuple[str, ...] = TOKENS_8K, start: float | None = None,
             key: str = "vllm:num_requests_running") -> None:  # fmt: skip
    """A serving replica: up, running, finishing 1 request/s of 1000-2000 prompt and 100-200 output tokens."""
    h.gauge(key, labels, 4, start=start)
    h.counter("vllm:request_success", labels | {"finished_reason": "stop"}, 1.0, start=start)
    h.histogram("vllm:request_prompt_tokens", labels, dict.fromkeys(tokens, 0.0) | {"2000": 1.0}, 1500.0, start=start)
    h.histogram("vllm:request_generation_tokens", labels, dict.fromkeys(tokens, 0.0) | {"200": 1.0}, 150.0,
                start=start)  # fmt: skip
    target = {k: labels[k] for k in ("job", "instance", "namespace", "pod", "tier")}
    h.raw("up", target, [(t, 1.0) for t in times(start or START, END, 15.0)])


def history() -> str:
    h = History(START, END, 15.0)
    for pod in ("noksm-0", "noksm-1"):
        _replica(h, _target("noksm", pod))
    v0 = _target("v0", "v0-0", engine=False)
    _replica(h, v0)
    h.gauge("vllm:gpu_prefix_cache_hit_rate", v0, 0.4)
    spec = _target("spec", "spec-0")
    _replica(h, spec)
    h.counter("vllm:spec_decode_num_accepted_tokens", spec, 4.0)
    h.counter("vllm:spec_decode_num_drafts", spec, 2.0)
    h.counter("vllm:spec_decode_num_draft_tokens", spec, 6.0)
    h.histogram("vllm:inter_token_latency_seconds", spec, dict.fromkeys(ITL, 0.0) | {"0.1": 50.0})
    _replica(h, _target("long", "long-0"), tokens=TOKENS_32K)
    _replica(h, _target("colonless", "colonless-0"), key="vllm_num_requests_running")
    _replica(h, _target("short", "short-0"), start=END - 150.0)
    return h.text()


def _plan(tiers: tuple[str, ...]) -> Plan:
    data: dict[str, Any] = yaml.safe_load((REPO / "examples" / "support-copilot.yaml").read_text())
    template = data["tiers"][0]
    share = {"share": 1 / len(tiers)}
    data["tiers"] = [copy.deepcopy(template) | {"name": name, "routing": share} for name in tiers]
    return parse_plan(yaml.safe_dump(data))


@pytest.fixture(scope="module", params=BACKENDS)
def source(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[HttpPrometheusSource]:
    """The history in Prometheus, then in VictoriaMetrics: the observer must read the same from both."""
    stack = Stack(tmp_path_factory.mktemp("real-exporters"))
    try:
        prom = stack.backend(request.param, openmetrics=history())
        with HttpPrometheusSource(SourceSettings(url=prom.url, retries=0)) as s:
            yield s
    finally:
        stack.close()


@pytest.fixture(scope="module")
def observed(source: HttpPrometheusSource) -> dict[str, TierObservation]:
    plan = _plan(("noksm", "v0", "spec", "long", "colonless"))
    return PrometheusObserver(source, long_window="1h", recording_rules=False).collect(plan, END, "5m")


@pytest.mark.parametrize(
    ("tier", "field", "value", "reason"),
    [
        pytest.param("noksm", "replicas_ready", 2.0, "kube-state-metrics absent: replicas up",
                     id="without kube-state-metrics ready replicas are the replicas up, not 0"),
        pytest.param("noksm", "cold_start_p95", None, "no data",
                     id="without kube-state-metrics cold start is unknown"),
        pytest.param("v0", "prefix_hit_rate", 0.4, "", id="a V0 engine's prefix-cache hit rate comes from its gauge"),
        pytest.param("spec", "tpot_p95", None, "speculative decoding without the per-request TPOT histogram",
                     id="speculative decoding without per-request TPOT leaves TPOT unknown, not ITL"),
        pytest.param("spec", "itl_p95", 0.09875, "once per streamed output of 3.00 tokens",
                     id="under speculative decoding the ITL is kept and said to be per step"),
        pytest.param("colonless", "replicas_up", None, "found vllm_num_requests_running instead",
                     id="a scrape that stripped vLLM's colons is named as the reason"),
        pytest.param("colonless", "request_rate", None, "no vllm:num_requests_running series",
                     id="every value keyed on the missing series says which series is missing"),
    ],
)  # fmt: skip
def test_observer_reads_what_real_exporters_expose(
    observed: dict[str, TierObservation], tier: str, field: str, value: float | None, reason: str
) -> None:
    m = getattr(observed[tier], field)
    assert m.value == (pytest.approx(value) if value is not None else None), m
    assert reason in m.reason, m


def test_speculative_decoding_reports_tokens_per_step(observed: dict[str, TierObservation]) -> None:
    assert observed["spec"].extra["spec_decode_tokens_per_step"].value == pytest.approx(3.0)
    assert "spec_decode_tokens_per_step" not in observed["noksm"].extra


@pytest.mark.parametrize(
    ("tier", "family", "highest"),
    [
        pytest.param("long", "prompt", 20000.0, id="a server with max_model_len 32768 exposes buckets to 20000"),
        pytest.param("noksm", "output", 5000.0, id="one with 8192 exposes buckets to 5000"),
        pytest.param(FLEET, "prompt", 20000.0, id="the fleet reads the plan through the union of exposed bounds"),
    ],
)
def test_observation_carries_the_bucket_bounds_the_server_exposes(
    observed: dict[str, TierObservation], tier: str, family: str, highest: float
) -> None:
    assert observed[tier].token_buckets[family][-1] == highest


@pytest.mark.parametrize(
    ("tiers", "field", "reason"),
    [
        pytest.param((FLEET,), "peak_to_average", "history covers",
                     id="2.5 minutes of history give no weekly burstiness"),
        pytest.param((FLEET, "short"), "peak_rate", "a statistic over 7d is judged from 90%", id="nor a weekly peak"),
        pytest.param((FLEET, "short"), "average_rate", "history covers 0.0% of 7d", id="nor a weekly mean"),
    ],
)  # fmt: skip
def test_a_short_history_leaves_week_long_statistics_unknown(
    source: HttpPrometheusSource, tiers: tuple[str, ...], field: str, reason: str
) -> None:
    observations = PrometheusObserver(source, long_window="7d", recording_rules=False).collect(
        _plan(("short",)), END, "5m"
    )
    for tier in tiers:
        m = observations[tier].measurements()[field]
        assert m.value is None and reason in m.reason, (tier, m)
