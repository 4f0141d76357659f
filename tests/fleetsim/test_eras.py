"""fleetsim's modes match real eras of vLLM and of the cluster around it (reference §1.1, §1.3, §1.6, §5).

Expectations are written from the reference and upstream, not from fleetsim.metrics: which names a target
serves, with which labels and buckets, in which order, and what a cluster without kube-state-metrics lacks.
"""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from fleetsim.server import fleet_targets, ksm_text, vllm_text

from .helpers import run_fleet, tiny_plan


def _names(text: str) -> set[str]:
    return {s.name for f in text_string_to_metric_families(text) for s in f.samples}


def _labels(text: str, name: str) -> set[str]:
    return {k for f in text_string_to_metric_families(text) for s in f.samples if s.name == name for k in s.labels}


def _le(text: str, name: str) -> list[str]:
    return [ln.split('le="')[1].split('"')[0] for ln in text.splitlines() if ln.startswith(f"{name}_bucket")]


@pytest.fixture(scope="module")
def texts() -> dict[tuple[str, bool], str]:
    out = {}
    for generation in ("v1", "legacy", "v0", "overlap"):
        for multiprocess in (False, True):
            fleet = run_fleet(tiny_plan(rps=6.0), 20, generation=generation, multiprocess=multiprocess)
            out[(generation, multiprocess)] = vllm_text(fleet, next(iter(fleet.pods)))
    return out


@pytest.mark.parametrize(
    ("generation", "present", "absent"),
    [
        pytest.param("v0", {"vllm:gpu_prefix_cache_hit_rate", "vllm:gpu_cache_usage_perc",
                            "vllm:time_per_output_token_seconds_count"},
                     {"vllm:gpu_prefix_cache_hits_total", "vllm:prefix_cache_hits_total",
                      "vllm:request_time_per_output_token_seconds_count", "vllm:kv_cache_usage_perc"},
                     id="V0 has a prefix hit-rate gauge and no prefix counters, old names only"),
        pytest.param("legacy", {"vllm:gpu_prefix_cache_hits_total", "vllm:gpu_cache_usage_perc"},
                     {"vllm:gpu_prefix_cache_hit_rate", "vllm:prefix_cache_hits_total"},
                     id="V1 0.8-0.10 counts prefix hits under the old names"),
        pytest.param("overlap", {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc",
                                 "vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total",
                                 "vllm:inter_token_latency_seconds_count", "vllm:time_per_output_token_seconds_count",
                                 "vllm:request_time_per_output_token_seconds_count"},
                     {"vllm:num_requests_waiting_by_reason", "vllm:gpu_prefix_cache_hit_rate"},
                     id="0.9.2-0.11 serve old and new names on one target"),
        pytest.param("v1", {"vllm:kv_cache_usage_perc", "vllm:num_requests_waiting_by_reason"},
                     {"vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds_count"},
                     id="V1 at HEAD has the new names only"),
    ],
)  # fmt: skip
def test_each_era_serves_its_names(
    texts: dict[tuple[str, bool], str], generation: str, present: set[str], absent: set[str]
) -> None:
    names = _names(texts[(generation, False)])
    assert present <= names
    assert not absent & names


@pytest.mark.parametrize(
    ("generation", "engine"),
    [
        pytest.param("v0", False, id="V0 labels series with model_name only"),
        pytest.param("overlap", True, id="V1 labels every series with its engine"),
    ],
)
def test_the_engine_label_follows_the_engine(texts: dict[tuple[str, bool], str], generation: str, engine: bool) -> None:
    assert ("engine" in _labels(texts[(generation, False)], "vllm:num_requests_running")) is engine


@pytest.mark.parametrize(
    ("generation", "family", "last"),
    [
        pytest.param("v0", "vllm:time_to_first_token_seconds", "10.0", id="V0's TTFT buckets stop at 10 s"),
        pytest.param("v0", "vllm:time_per_output_token_seconds", "2.5", id="V0's TPOT buckets stop at 2.5 s"),
        pytest.param("v0", "vllm:e2e_request_latency_seconds", "60.0", id="V0's latency buckets stop at 60 s"),
        pytest.param("v0", "vllm:iteration_tokens_total", "256.0", id="V0's iteration buckets are CUDA-graph sizes"),
        pytest.param("v1", "vllm:time_to_first_token_seconds", "2560.0", id="current TTFT buckets reach 2560 s"),
    ],
)
def test_bucket_sets_follow_the_era(
    texts: dict[tuple[str, bool], str], generation: str, family: str, last: str
) -> None:
    assert _le(texts[(generation, False)], family)[-2:] == [last, "+Inf"]


def test_the_v0_gauge_is_the_hit_rate_since_the_engine_started() -> None:
    fleet = run_fleet(tiny_plan(rps=6.0), 60, generation="v0")
    metrics = next(iter(fleet.pods.values())).metrics
    expected = metrics.value("vllm:prefix_cache_hits") / metrics.value("vllm:prefix_cache_queries")
    sample = next(s for f in text_string_to_metric_families(vllm_text(fleet, next(iter(fleet.pods)))) for s in f.samples
                  if s.name == "vllm:gpu_prefix_cache_hit_rate")  # fmt: skip
    assert 0 < sample.value == pytest.approx(expected)


def test_overlap_serves_the_same_value_under_both_names(texts: dict[tuple[str, bool], str]) -> None:
    values: dict[str, Any] = {
        s.name: s.value for f in text_string_to_metric_families(texts[("overlap", False)]) for s in f.samples
    }
    assert values["vllm:prefix_cache_hits_total"] == values["vllm:gpu_prefix_cache_hits_total"]
    assert values["vllm:kv_cache_usage_perc"] == values["vllm:gpu_cache_usage_perc"]


@pytest.mark.parametrize("generation", ["v1", "v0"])
def test_multiprocess_output_has_no_created_or_process_series_and_sums_first(
    texts: dict[tuple[str, bool], str], generation: str
) -> None:
    text = texts[(generation, True)]
    assert not any(n.endswith("_created") or n.startswith("process_") for n in _names(text))
    lines = [ln for ln in text.splitlines() if ln.startswith("vllm:time_to_first_token_seconds")]
    assert lines[0].startswith("vllm:time_to_first_token_seconds_sum") and "_count" in lines[-1]
    assert any(n.endswith("_created") for n in _names(texts[(generation, False)]))


def test_a_cluster_without_kube_state_metrics_has_no_target_and_no_series() -> None:
    fleet = run_fleet(tiny_plan(rps=6.0), 5, kube_state_metrics=False)
    jobs = {g["labels"]["job"] for g in fleet_targets(fleet, "127.0.0.1:9400")}
    assert "kube-state-metrics" not in jobs and "vllm" in jobs
    with_ksm = run_fleet(tiny_plan(rps=6.0), 5)
    assert "kube_pod_status_ready" in ksm_text(with_ksm)
