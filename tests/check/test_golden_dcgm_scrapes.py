"""Complete real dcgm-exporter scrapes (tests/fixtures/expositions, sources in its README: an idle L4 and a busy
T4, both under the NVIDIA GPU operator) served to a real Prometheus beside a real vLLM dump, with the labels a
Kubernetes scrape adds; `planwatch check` reads the GPU values each dump implies, and says why they are unknown
where the GPU cannot be joined to a tier.

Neither dump carries `pod`/`namespace` labels: no GPU workload ran, and dcgm-exporter labels a GPU with the pod
only while one holds it. The L4 is served as published, so its GPU joins no tier. The T4 is served as the
exporter would report it with the GPU allocated to the tier's pod: the scrape adds the workload's labels under the
names Prometheus gives them (`exported_namespace`/`exported_pod`, honor_labels false), every other label and
value as published.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from fleetsim.promstack import RESTORE_VLLM_COLONS, ScrapeJob
from monitor import queries as q
from monitor.observer import PrometheusObserver
from monitor.plan import Plan, parse_plan
from monitor.queries import Query
from monitor.source import HttpPrometheusSource, InstantResult, SourceSettings, measurement
from tests.check.golden import REPO, check_tiers, scraping
from tests.harness.replay import ReplayExporter
from tests.harness.stack import api_query

pytestmark = pytest.mark.integration

VLLM = "vllm-v0-aibrix-runtime.txt"
L4, T4 = "dcgm-exporter-l4-gpu-operator.txt", "dcgm-exporter-t4-gpu-operator-loaded.txt"
# (tier, namespace, pod) of the vLLM replica each tier has.
REPLICAS = (("l4", "llm", "l4-0"), ("t4", "llm", "t4-0"))
TIERS = tuple(tier for tier, *_ in REPLICAS)
# The exporter's own pod: the target labels a Kubernetes scrape of the dcgm-exporter daemon set adds.
EXPORTER = {"l4": "nvidia-dcgm-exporter-l4x7q", "t4": "nvidia-dcgm-exporter-t4m2c"}
# What dcgm-exporter's pod mapping adds to a GPU a pod holds, as Prometheus renames it on the scrape.
T4_HELD_BY = [{"target_label": "exported_namespace", "replacement": "llm"},
              {"target_label": "exported_pod", "replacement": "t4-0"}]  # fmt: skip

# Known answers, read off the T4 dump by hand.
T4_UTIL = 91.0  # DCGM_FI_DEV_GPU_UTIL (percent); GR_ENGINE_ACTIVE 0.156205 is not used where GPU_UTIL is reported
T4_FB_SHARE = 5120 / (5120 + 9791)  # FB_USED / (FB_USED + FB_FREE) in MiB = 0.343371; FB_RESERVED 447 left out
T4_POWER = 68.244  # DCGM_FI_DEV_POWER_USAGE, W
T4_DRAM = 0.092781  # DCGM_FI_PROF_DRAM_ACTIVE, ratio


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One server per dump, one scrape job per replica and per exporter, one Prometheus scraping them each second."""

    def jobs(servers: dict[str, ReplayExporter]) -> list[ScrapeJob]:
        return [ScrapeJob(f"vllm-{tier}", targets=(servers[VLLM].target,), metric_relabel_configs=[RESTORE_VLLM_COLONS],
                          labels={"tier": tier, "namespace": namespace, "pod": pod})
                for tier, namespace, pod in REPLICAS] + [
            ScrapeJob("dcgm-l4", targets=(servers[L4].target,),
                      labels={"namespace": "gpu-operator", "pod": EXPORTER["l4"]}),
            ScrapeJob("dcgm-t4", targets=(servers[T4].target,), metric_relabel_configs=T4_HELD_BY,
                      labels={"namespace": "gpu-operator", "pod": EXPORTER["t4"]}),
        ]  # fmt: skip

    with scraping(tmp_path_factory.mktemp("golden-dcgm"), (VLLM, L4, T4), jobs) as url:
        yield url


@pytest.mark.parametrize(
    ("expr", "count"),
    [
        pytest.param('{job="dcgm-l4", pod="nvidia-dcgm-exporter-l4x7q", Hostname="i-030791dc5a37cd257"}', 23,
                     id="the L4 scrape holds all 23 families, labelled with the exporter's own pod"),
        pytest.param('{job="dcgm-l4", exported_pod!=""}', 0, id="the L4 dump names no workload pod"),
        pytest.param('{job="dcgm-t4", exported_pod="t4-0", modelName="Tesla T4"}', 20,
                     id="every T4 series carries the pod holding the GPU as exported_pod"),
        pytest.param('rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{job="dcgm-l4"}[10s]) > 0', 1,
                     id="the L4's typed energy counter advances"),
    ],
)  # fmt: skip
def test_the_scrape_adds_the_labels_kubernetes_does(scraped: str, expr: str, count: int) -> None:
    assert len(api_query(scraped, expr)) == count


@pytest.fixture(scope="module")
def checked(scraped: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """One `planwatch check` per tier, at the same moment."""
    return check_tiers(scraped, TIERS, tmp_path_factory.mktemp("plans"))


# The two GPUs the Prometheus holds by their pods (the L4 under its exporter's, the T4 under the tier's), and the
# L4 tier's one replica: the reason names both sides of the join.
NO_POD = (
    "no GPU dcgm-exporter reports is labelled with a pod of the tier's replicas (llm/l4-0): its 2 GPU(s) carry "
    "gpu-operator/nvidia-dcgm-exporter-l4x7q, llm/t4-0"
)


@pytest.mark.parametrize(
    ("tier", "field", "value", "reason"),
    [
        pytest.param("t4", "gpu_utilization", T4_UTIL, None, id="T4: GPU_UTIL 91 is the tier's mean utilization"),
        pytest.param("t4", "gpu_memory_used_fraction", T4_FB_SHARE, None,
                     id="T4: 5120 MiB used of 5120 + 9791, reserved left out"),
        pytest.param("t4", "gpu_power_watts", T4_POWER, None, id="T4: 68.244 W of its one GPU"),
        pytest.param("t4", "gpu_dram_active", T4_DRAM, None, id="T4: DRAM_ACTIVE as a 0-1 ratio"),
        pytest.param("t4", "gpu_xid_errors", None, "the tier's GPUs report no DCGM_FI_DEV_XID_ERRORS",
                     id="T4: the dump has no XID field, so XID errors are unknown, not 0"),
        pytest.param("t4", "replicas_up", 1.0, None, id="T4: the vLLM replica holding the GPU is up"),
        pytest.param("l4", "replicas_up", 1.0, None, id="L4: the tier's vLLM replica is up"),
        pytest.param("l4", "gpu_utilization", None, NO_POD,
                     id="L4: a GPU no pod holds joins no tier, utilization unknown, not 0"),
        pytest.param("l4", "gpu_memory_used_fraction", None, NO_POD,
                     id="L4: FB_USED 0 of an unheld GPU is not the tier's memory"),
        pytest.param("l4", "gpu_power_watts", None, NO_POD, id="L4: 16.365 W of an unheld GPU is not the tier's"),
        pytest.param("l4", "gpu_xid_errors", None, NO_POD, id="L4: no XID field and no join, XID unknown"),
    ],
)  # fmt: skip
def test_check_reads_what_a_real_dcgm_dump_implies(
    checked: dict[str, dict[str, Any]], tier: str, field: str, value: float | None, reason: str | None
) -> None:
    m = checked[tier][field]
    if value is None:
        assert m["value"] is None and reason in m["reason"], m
    else:
        assert m["value"] == pytest.approx(value, rel=1e-6), m


@pytest.mark.parametrize(
    ("query", "tier", "value"),
    [
        pytest.param(q.GPU_COUNT, "t4", 1.0, id="the T4 held by the tier's pod is one GPU"),
        pytest.param(q.GPU_COUNT, "l4", None, id="the L4 no pod holds is no GPU of the tier"),
        pytest.param(q.XID_GPUS, "t4", None, id="a GPU without the XID field leaves XID errors unknown"),
    ],
)  # fmt: skip
def test_catalog_counts_the_devices_a_real_dcgm_dump_implies(
    scraped: str, query: Query, tier: str, value: float | None
) -> None:
    with HttpPrometheusSource(SourceSettings(url=scraped, retries=0)) as source:
        m = measurement(source.instant(query.for_tier({"tier": tier}, window="1m"), time.time()))
    assert m.value == value, m


class _Counting(HttpPrometheusSource):
    """The real source, counting the queries it sends."""

    def __init__(self, settings: SourceSettings) -> None:
        super().__init__(settings)
        self.sent: list[str] = []

    def instant(self, query: str, at: float | None = None) -> InstantResult:
        self.sent.append(query)
        return super().instant(query, at)


def _both_tiers() -> Plan:
    """The copilot plan with the two tiers the scrape labels (half the traffic each)."""
    data = yaml.safe_load((REPO / "examples" / "support-copilot.yaml").read_text())
    tier = data["tiers"][0]
    data["tiers"] = [{**tier, "name": name, "routing": {"share": 0.5}} for name in TIERS]
    return parse_plan(yaml.safe_dump(data))


def test_every_gpu_by_pod_is_read_once_a_cycle_whatever_number_of_tiers_need_it(scraped: str) -> None:
    """Both tiers have a GPU value that is "no data" (the L4's join, the T4's XID field), so both want the
    fleet-wide side of the join: one query serves them, and each tier's reason still names its own side."""
    with _Counting(SourceSettings(url=scraped, retries=0)) as source:
        observed = PrometheusObserver(source, long_window="1h").collect(_both_tiers(), time.time(), "10s")
    gpu_pods = q.GPU_PODS.for_tier({"tier": "l4"}, window="10s")
    assert source.sent.count(gpu_pods) == 1
    assert NO_POD in observed["l4"].gpu_utilization.reason
    assert "report no DCGM_FI_DEV_XID_ERRORS" in observed["t4"].gpu_xid_errors.reason
