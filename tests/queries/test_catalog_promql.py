"""Catalog queries against a real Prometheus serving a history with known answers (`fleet_history`)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pytest

from monitor import queries as q
from monitor.queries import Query, Selector, fraction_over_groups
from monitor.queries.cost import GPUS_MEAN
from monitor.source import HttpPrometheusSource, measurement
from tests.queries.fleet_history import END, MODEL_A, hostile_tiers

pytestmark = pytest.mark.integration

A, B, C, D, E, F, G, R = ({"tier": t} for t in "abcdefgr")


def value(source: HttpPrometheusSource, query: Query, selector: Mapping[str, str], at: float = END) -> float:
    result = source.instant(query.for_tier(selector), at)
    assert len(result.samples) == 1, (query.name, result.samples)
    return result.samples[0].value


@pytest.mark.parametrize(
    ("query", "selector", "expected"),
    [
        pytest.param(q.REQUEST_RATE, A, 7.0, id="request rate adds every finished reason of every replica"),
        pytest.param(q.ERROR_RATE, A, 1.0, id="error rate counts error and abort only"),
        pytest.param(q.ERROR_RATIO, A, 1 / 7, id="error ratio is errors over all finished"),
        pytest.param(q.DEMAND_RATE, A, 7.01, id="demand adds the capacity queue's growth to the served rate"),
        pytest.param(q.PEAK_REQUEST_RATE, A, 7.0, id="peak of 1-minute rates over the hour of a flat load"),
        pytest.param(q.RUNNING, A, 18.0, id="running sums engines and ignores the router's re-export"),
        pytest.param(q.WAITING, A, 74.5, id="waiting takes reason=capacity where present, else num_requests_waiting"),
        pytest.param(q.BATCH_PER_REPLICA, A, 6.0, id="mean running batch per replica"),
        pytest.param(q.GENERATION_TOKENS_RATE, A, 600.0, id="output tokens per second of the tier"),
        pytest.param(q.GENERATION_TOKENS_PER_REPLICA, A, 200.0, id="output tokens per second per replica"),
        pytest.param(q.KV_USAGE_MEAN, A, 0.3, id="KV occupancy mean over engines"),
        pytest.param(q.KV_USAGE_MAX, A, 0.5, id="KV occupancy max over engines"),
        pytest.param(q.TTFT_P50, A, 0.3125, id="TTFT p50 interpolates inside the (0.25, 0.5] bucket"),
        pytest.param(q.TTFT_P95, A, 1.75, id="TTFT p95 interpolates inside the (1.0, 2.5] bucket"),
        pytest.param(q.TTFT_P99, A, 2.35, id="TTFT p99 from the same buckets"),
        pytest.param(q.ITL_P50, A, 0.025, id="ITL p50 on current names"),
        pytest.param(q.PROMPT_TOKENS_P50, A, 1000.0, id="prompt length p50 at a 1-2-5 bucket bound"),
        pytest.param(q.PROMPT_TOKENS_P95, A, 1900.0, id="prompt length p95 inside the (1000, 2000] bucket"),
        pytest.param(q.OUTPUT_TOKENS_P50, A, 100 + 100 / 3, id="output length p50 inside (100, 200]"),
        pytest.param(q.PROMPT_TOKENS_MEAN, A, 1500.0, id="mean prompt length is _sum over _count"),
        pytest.param(q.OUTPUT_TOKENS_MEAN, A, 150.0, id="mean output length is _sum over _count"),
        pytest.param(q.CALLS_PER_USER_REQUEST, A, 3.5, id="gateway fan-out is model calls per user request"),
        pytest.param(q.REPLICAS_UP, A, 3.0, id="every replica of tier a is up"),
        pytest.param(q.REPLICAS_DOWN, A, 0.0, id="no replica down reads 0 for a tier that exists"),
        pytest.param(q.REPLICAS_READY, A, 2.0, id="ready pods come from kube-state-metrics"),
        pytest.param(q.REPLICAS_READY, F, 1.0, id="ready pods join through exported_pod when KSM labels were renamed"),
        pytest.param(q.COLD_START_P95, A, 490.0, id="cold start p95 of pods created within the hour"),
        pytest.param(q.GPU_UTIL_MEAN, A, 70.0, id="GPU util joins both dcgm pod spellings, idle GPUs left out"),
        pytest.param(q.DRAM_ACTIVE_MEAN, A, 0.5, id="DRAM activity mean over the tier's GPUs"),
        pytest.param(q.GPU_MEMORY_USED_RATIO, A, 0.75, id="framebuffer used share, worst GPU"),
        pytest.param(q.GPU_POWER_MEAN, A, 400.0, id="power per GPU"),
        pytest.param(q.GPU_COUNT, A, 2.0, id="GPUs allocated to the tier"),
        pytest.param(q.XID_GPUS, A, 1.0, id="a GPU whose last XID changed counts once"),
        pytest.param(q.XID_GPUS, B, 0.0, id="no XID change reads 0 where the tier has GPUs"),
        pytest.param(q.ITL_P50, B, 0.05, id="V0's time_per_output_token stands in for inter_token_latency"),
        pytest.param(q.KV_USAGE_MEAN, B, 0.25, id="V0's gpu_cache_usage_perc stands in for kv_cache_usage_perc"),
        pytest.param(q.REPLICAS_UP, B, 1.0, id="a replica whose scrape fails is not up"),
        pytest.param(q.PREFIX_CACHE_HIT_RATIO, B, 0.4, id="V0 has no prefix counters: its hit-rate gauge, averaged"),
        pytest.param(q.REPLICAS_DOWN, B, 1.0, id="a replica seen in the window and failing now is down"),
        pytest.param(q.KV_USAGE_MEAN, C, 0.7, id="a target exporting both KV names counts the new one once"),
        pytest.param(q.PREFIX_CACHE_HIT_RATIO, C, 0.6, id="both prefix-cache generations on one target: new only"),
        pytest.param(q.ITL_P50, C, 0.0375, id="both ITL generations on one target: buckets not added up"),
        pytest.param(q.KV_USAGE_MEAN, D, 0.4, id="a mixed-generation tier averages old and new replicas"),
        pytest.param(q.ITL_P50, D, 0.05, id="a mixed-generation tier merges old and new buckets"),
        pytest.param(q.GPU_COUNT, D, 3.0, id="MIG slices count as devices, a GPU reporting two fields once"),
        pytest.param(q.GPU_UTIL_MEAN, D, (30 + 50 + 90) / 3, id="MIG slices' utilization is GR_ENGINE_ACTIVE x 100"),
        pytest.param(q.GPU_MEMORY_USED_RATIO, D, 0.5, id="memory is judged on the devices that report framebuffer"),
        pytest.param(q.GPU_COUNT, C, 1.0, id="a tier on one MIG slice has one device"),
        pytest.param(q.GPU_UTIL_MEAN, C, 20.0, id="a tier on MIG slices only still has a utilization"),
        pytest.param(
            q.GPU_POWER_MEAN,
            D,
            (350 + 500) / 2,
            id="a GPU's power counts once however many of the tier's MIG slices repeat it",
        ),
        pytest.param(q.GPU_POWER_MEAN, C, 350.0, id="a tier on one MIG slice reads its whole GPU's draw"),
        pytest.param(GPUS_MEAN, D, 3.0, id="GPU-hours count MIG slices as the GPU count does"),
        pytest.param(GPUS_MEAN, C, 1.0, id="a tier on one MIG slice holds one device's GPU-hours"),
        pytest.param(q.SPEC_DECODE_TOKENS_PER_STEP, G, 3.0, id="speculative decoding emits 1 + accepted per draft"),
        pytest.param(q.TPOT_P50, G, 0.0375, id="under speculative decoding only per-request TPOT counts as TPOT"),
        pytest.param(q.ITL_P50, G, 0.0875, id="the ITL histogram is still read as it is (once per output)"),
        pytest.param(q.TPOT_P50, A, 0.025, id="without speculative decoding ITL stands in for per-request TPOT"),
        pytest.param(q.REPLICAS_UP, F, 2.0, id="replicas sharing one listener are told apart by pod"),
        pytest.param(q.REPLICAS_UP, R, 2.0, id="Ray Serve replicas behind one metrics agent are told apart"),
        pytest.param(q.BATCH_PER_REPLICA, R, 4.0, id="batch per Ray Serve replica"),
        pytest.param(q.BATCH_PER_REPLICA, F, 5.0, id="batch per replica with replicas sharing a listener"),
        pytest.param(q.GENERATION_TOKENS_PER_REPLICA, F, 20.0, id="tokens per replica sharing a listener"),
    ],
)
def test_catalog_query_reads_the_known_answer(
    fleet_source: HttpPrometheusSource, query: Query, selector: Mapping[str, str], expected: float
) -> None:
    assert value(fleet_source, query, selector) == pytest.approx(expected, rel=1e-6)


def test_xid_evidence_names_the_gpu_with_a_normalised_hostname(fleet_source: HttpPrometheusSource) -> None:
    result = fleet_source.instant(q.XID_BY_GPU.for_tier(A), END)
    assert [dict(s.labels) for s in result.samples] == [{"hostname": "node1", "gpu": "0", "pod": "a-0"}]


def test_model_name_and_namespace_can_select_a_tier(fleet_source: HttpPrometheusSource) -> None:
    selector = {"model_name": MODEL_A, "namespace": "llm", "tier": "a"}
    assert value(fleet_source, q.RUNNING, selector) == 18.0
    assert value(fleet_source, q.GPU_UTIL_MEAN, selector) == 70.0


@pytest.mark.parametrize(
    ("tier", "running"), [pytest.param(t, r, id=f"tier {t!r} matches only itself") for t, r in hostile_tiers().items()]
)
def test_hostile_label_values_select_exactly_their_tier(
    fleet_source: HttpPrometheusSource, tier: str, running: float
) -> None:
    assert value(fleet_source, q.RUNNING, {"tier": tier}) == running


def test_recording_rendering_gives_every_tier_its_own_series(fleet_source: HttpPrometheusSource) -> None:
    result = fleet_source.instant(q.RUNNING.for_all_tiers(), END)
    by_tier = {s.labels["tier"]: s.value for s in result.samples}
    # b-1 stopped 120 s before the end: a live scrape failure writes a staleness marker, a backfill cannot, so
    # its last value stays visible for the 5-minute lookback (DATA_AGE is how planwatch notices such series).
    assert {k: by_tier[k] for k in "abcdef"} == {"a": 18.0, "b": 3.0 + 5.0, "c": 1.0, "d": 2.0, "e": 0.0, "f": 10.0}
    assert set(by_tier) == set("abcdefgr") | set(hostile_tiers())


def test_a_quantile_over_no_traffic_is_unknown_not_zero(fleet_source: HttpPrometheusSource) -> None:
    for query in (q.TTFT_P95, q.ERROR_RATIO):
        m = measurement(fleet_source.instant(query.for_tier(E), END))
        assert m.value is None
        # Prometheus returns NaN; VictoriaMetrics drops NaN results, so the series is absent: unknown either way.
        assert "NaN" in m.reason or m.reason == "no data: the query matched no series"


@pytest.mark.parametrize(
    ("query", "selector"),
    [
        pytest.param(q.REPLICAS_READY, B, id="ready replicas are no data, not 0, without kube-state-metrics"),
        pytest.param(q.COLD_START_P95, B, id="cold start is no data without kube-state-metrics"),
        pytest.param(
            q.GPU_MEMORY_USED_RATIO, C, id="memory is no data on H100 MIG slices, which report no framebuffer"
        ),
        pytest.param(q.XID_GPUS, C, id="XID errors are no data, not 0, where the tier's GPUs report no XID field"),
    ],
)
def test_what_an_exporter_does_not_report_is_no_data(
    fleet_source: HttpPrometheusSource, query: Query, selector: Mapping[str, str]
) -> None:
    m = measurement(fleet_source.instant(query.for_tier(selector), END))
    assert (m.value, m.reason) == (None, "no data: the query matched no series")


def test_a_selector_matching_nothing_is_unknown_not_zero(fleet_source: HttpPrometheusSource) -> None:
    for query in (q.RUNNING, q.REPLICAS_DOWN, q.XID_GPUS, q.REQUEST_RATE):
        m = measurement(fleet_source.instant(query.for_tier({"tier": "no-such-tier"}), END))
        assert (m.value, m.reason) == (None, "no data: the query matched no series"), query.name


def test_share_over_a_threshold_interpolates_bucket_rates(fleet_source: HttpPrometheusSource) -> None:
    result = fleet_source.instant(q.TTFT_BUCKETS.for_tier(A), END)
    share = fraction_over_groups(((s.labels, s.value) for s in result.samples), 1.2)
    assert share.total == pytest.approx(30.0)
    assert share.fraction == pytest.approx(1 - (9 + 1 * 0.2 / 1.5) / 10)


def test_data_age_shows_a_series_that_stopped(fleet_source: HttpPrometheusSource) -> None:
    assert value(fleet_source, q.DATA_AGE, A, at=END + 200) == pytest.approx(200.0)


@pytest.mark.parametrize("query", [pytest.param(x, id=x.name) for x in q.ALL])
def test_every_rendering_parses_in_prometheus(fleet_source: HttpPrometheusSource, query: Query) -> None:
    grafana = query.for_grafana().replace("$__rate_interval", "1m").replace("$__interval", "30s")
    grafana = grafana.replace('"$tier"', '"a|b"')
    for text in (query.for_tier(Selector({"tier": 'x"y'})), query.for_all_tiers("service_tier"), grafana):
        result = fleet_source.instant(text, END)  # a syntax or execution error raises QueryError
        assert all(isinstance(s.value, float) for s in result.samples)
        assert not any(math.isinf(s.value) for s in result.samples)
