"""Real /metrics bodies (tests/fixtures/expositions, sources in its README) served to a real Prometheus with
their counters advancing and the labels a Kubernetes scrape adds; `planwatch check` reads what each dump
implies and says why the rest is unknown."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from fleetsim.promstack import RESTORE_VLLM_COLONS, ScrapeJob
from monitor import queries as q
from monitor.queries import Query
from monitor.source import HttpPrometheusSource, SourceSettings, measurement
from tests.check.golden import PERIOD, check_tiers, scraping
from tests.harness.replay import ReplayExporter
from tests.harness.stack import api_query

pytestmark = pytest.mark.integration

AIBRIX, DOCS = "vllm-v0-aibrix-runtime.txt", "vllm-docs-usage-metrics.txt"
DCGM, KSM = "dcgm-exporter-h100-mig-kserve.txt", "kube-state-metrics-pod-status-ready.txt"
# The KServe pods the dcgm-exporter dump maps MIG slices 7 and 9 of GPU 0 to (slice 8 is allocated to none).
EMBEDDING = "text-embedding-predictor-00008-deployment-57946f6c67-vdtjl"
TTS = "tts-predictor-00011-deployment-5554f75554-8j8pl"
# (tier, vLLM dump, namespace, pod): the pods of the dcgm-exporter and kube-state-metrics dumps, each served
# the AIBrix vLLM dump, so the GPU and readiness joins have a replica to land on.
REPLICAS = (
    ("v0", AIBRIX, "llm", "v0-0"),
    ("docs", DOCS, "llm", "docs-0"),
    ("mig", AIBRIX, "model-playground-stg", EMBEDDING),
    ("mig", AIBRIX, "model-playground-stg", TTS),
    ("ready", AIBRIX, "ns1", "pod1"),
    ("unready", AIBRIX, "ns2", "pod2"),
)
TIERS = tuple(dict.fromkeys(tier for tier, *_ in REPLICAS))
# A Kubernetes scrape of a node or cluster exporter labels its series with the exporter's own pod; the
# workload's namespace/pod the exporter reports become exported_namespace/exported_pod (honor_labels false).
EXPORTERS = {
    "dcgm-exporter": (DCGM, {"namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-7kx2d"}),
    "kube-state-metrics": (KSM, {"namespace": "kube-system", "pod": "kube-state-metrics-6d4b9c7f5-x2x9q"}),
}


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One server per dump, one scrape job per replica and exporter, one Prometheus scraping them each second."""
    dumps = {name for _, name, *_ in REPLICAS} | {name for name, _ in EXPORTERS.values()}

    def jobs(servers: dict[str, ReplayExporter]) -> list[ScrapeJob]:
        return [ScrapeJob(f"vllm-{i}", targets=(servers[name].target,), metric_relabel_configs=[RESTORE_VLLM_COLONS],
                          labels={"tier": tier, "namespace": namespace, "pod": pod})
                for i, (tier, name, namespace, pod) in enumerate(REPLICAS)] + [
            ScrapeJob(job, targets=(servers[name].target,), labels=labels) for job, (name, labels) in EXPORTERS.items()
        ]  # fmt: skip

    with scraping(tmp_path_factory.mktemp("golden"), dumps, jobs) as url:
        yield url


@pytest.mark.parametrize(
    ("expr", "count"),
    [
        pytest.param('DCGM_FI_PROF_GR_ENGINE_ACTIVE{exported_pod!="", pod="nvidia-dcgm-exporter-7kx2d"}', 2,
                     id="the scrape renamed the pod of the two allocated slices to exported_pod"),
        pytest.param('DCGM_FI_PROF_GR_ENGINE_ACTIVE{exported_pod=""}', 1, id="the unallocated slice kept no pod"),
        pytest.param('kube_pod_status_ready{exported_namespace=~"ns1|ns2", namespace="kube-system"}', 6,
                     id="kube-state-metrics' pod labels were renamed too"),
    ],
)  # fmt: skip
def test_the_scrape_adds_the_labels_kubernetes_does(scraped: str, expr: str, count: int) -> None:
    assert len(api_query(scraped, expr)) == count


@pytest.fixture(scope="module")
def checked(scraped: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """One `planwatch check` per tier, at the same moment."""
    return check_tiers(scraped, TIERS, tmp_path_factory.mktemp("plans"))


# Why a GPU value is unknown: the GPUs this Prometheus holds (the MIG dump's and dcgm-exporter's, 3 in all) carry
# none of the tier's pods; or they do, and lack the field.
UNJOINED = "no GPU dcgm-exporter reports is labelled with a pod of the tier's replicas (%s): its 3 GPU(s)"
UNREPORTED = "no data: the tier's GPUs report no "


@pytest.mark.parametrize(
    ("tier", "field", "value", "reason"),
    [
        pytest.param("v0", "request_rate", 4 / PERIOD, None, id="V0: 4 finished requests per period"),
        pytest.param("v0", "prompt_tokens_rate", 148 / PERIOD, None, id="V0: 148 prompt tokens per period"),
        pytest.param("v0", "running", 0.0, None, id="V0: nothing running"),
        pytest.param("v0", "waiting", 0.0, None, id="V0: nothing waiting"),
        pytest.param("v0", "kv_occupancy_mean", 0.0, None, id="V0: gpu_cache_usage_perc is read as KV occupancy"),
        pytest.param("v0", "error_ratio", 0.0, None, id="V0: only stop requests, no errors"),
        pytest.param("v0", "replicas_up", 1.0, None, id="V0: one replica up"),
        pytest.param("v0", "replicas_ready", 1.0, "kube-state-metrics absent: replicas up",
                     id="V0: no kube-state-metrics, ready is the replica up"),
        pytest.param("v0", "prefix_hit_rate", None, "no data", id="V0: prefix caching off (-1) is unknown, not -1"),
        pytest.param("v0", "ttft_p95", None, "no observations", id="V0: the dump holds no TTFT histogram"),
        pytest.param("v0", "gpu_utilization", None, UNJOINED % "llm/v0-0", id="V0: no dcgm-exporter, no GPU values"),
        pytest.param("docs", "replicas_up", None, "no vllm:num_requests_running series",
                     id="docs: a dump without the key series says what keys on it"),
        pytest.param("docs", "request_rate", None, "no data", id="docs: no request counters, no request rate"),
        pytest.param("mig", "replicas_up", 2.0, None, id="MIG: the two KServe pods are the tier's replicas"),
        pytest.param("mig", "gpu_utilization", 0.0, None,
                     id="MIG: slices without GPU_UTIL read GR_ENGINE_ACTIVE x 100, here idle"),
        pytest.param("mig", "gpu_memory_used_fraction", None, UNREPORTED + "DCGM_FI_DEV_FB_USED",
                     id="MIG: H100 slices report no framebuffer, memory is unknown, not 0"),
        pytest.param("mig", "gpu_power_watts", None, UNREPORTED + "DCGM_FI_DEV_POWER_USAGE",
                     id="MIG: the dump holds no power field"),
        pytest.param("mig", "gpu_xid_errors", None, UNREPORTED + "DCGM_FI_DEV_XID_ERRORS",
                     id="MIG: no XID field in the dump, XID errors unknown, not 0"),
        pytest.param("mig", "replicas_ready", 2.0, "kube-state-metrics absent: replicas up",
                     id="MIG: kube-state-metrics knows other pods only, ready falls back to replicas up"),
        pytest.param("ready", "replicas_ready", 1.0, None, id="KSM: pod1's Ready=true reads one ready replica"),
        pytest.param("unready", "replicas_ready", 0.0, None,
                     id="KSM: pod2 is up but Ready=false, so no ready replica, not the replica up"),
        pytest.param("unready", "replicas_up", 1.0, None, id="KSM: the unready pod still serves its scrape"),
        pytest.param("ready", "cold_start_p95", None, "no replica started in 1h",
                     id="KSM: a pod ready since 2017 started no replica in the window"),
        pytest.param("ready", "gpu_utilization", None, UNJOINED % "ns1/pod1",
                     id="KSM: no dcgm-exporter series names pod1, no GPU values"),
    ],
)  # fmt: skip
def test_check_reads_what_a_real_dump_implies(
    checked: dict[str, dict[str, Any]], tier: str, field: str, value: float | None, reason: str | None
) -> None:
    m = checked[tier][field]
    if value is None:
        assert m["value"] is None and reason in m["reason"], m
    else:
        assert m["value"] == pytest.approx(value, rel=0.05, abs=1e-9), m
        if reason:
            assert reason in m["reason"], m


@pytest.mark.parametrize(
    ("query", "tier", "value"),
    [
        pytest.param(q.GPU_COUNT, "mig", 2.0, id="two MIG slices allocated to the tier's pods are two devices"),
        pytest.param(q.GPU_COUNT, "ready", None, id="a tier no dcgm-exporter series names has no GPU count"),
        pytest.param(q.XID_GPUS, "mig", None, id="GPUs without the XID field leave XID errors unknown"),
    ],
)  # fmt: skip
def test_catalog_counts_the_devices_a_real_dump_implies(
    scraped: str, query: Query, tier: str, value: float | None
) -> None:
    with HttpPrometheusSource(SourceSettings(url=scraped, retries=0)) as source:
        m = measurement(source.instant(query.for_tier({"tier": tier}, window="1m"), time.time()))
    assert m.value == value, m
