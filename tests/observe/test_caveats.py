"""Pure rules about what a measurement means: history coverage, speculative decoding, and why GPU values are unknown."""

from __future__ import annotations

import pytest

from monitor.observe.caveats import GPU_FIELDS, Pods, explain_gpus, gpus_unexplained, speculative_decoding
from monitor.observe.fleet import covered, history_gate
from monitor.observe.model import Measurement

WEEK = 2016  # 5-minute steps in 7 days


@pytest.mark.parametrize(
    ("series", "share"),
    [
        pytest.param([1.0] * WEEK, 1.0, id="a full week of rates covers the week"),
        pytest.param([None] * (WEEK - 1) + [3.0], 1 / WEEK, id="one step of a week covers a 2016th of it"),
        pytest.param([0.0, None, 0.0, None], 0.5, id="zero traffic is history, a missing step is not"),
        pytest.param([], 0.0, id="no series covers nothing"),
    ],
)
def test_covered_is_the_share_of_steps_with_a_value(series: list[float | None], share: float) -> None:
    assert covered(series) == pytest.approx(share)


@pytest.mark.parametrize(
    ("share", "known", "reason"),
    [
        pytest.param(0.95, True, "", id="95% of the window is judged"),
        pytest.param(0.9, True, "", id="exactly the stated share is judged"),
        pytest.param(0.5, False, "history covers 50.0% of 7d (3.5 days)", id="half a week is not a week"),
        pytest.param(150 / 604_800, False, "(2 min)", id="2.5 minutes of a fresh Prometheus say nothing of a week"),
    ],
)
def test_a_long_window_statistic_needs_the_stated_share_of_history(share: float, known: bool, reason: str) -> None:
    m = history_gate(Measurement.of(4.35, "q", "7d"), share, "7d")
    assert m.known is known
    assert reason in m.reason


def test_the_history_reason_replaces_a_plainer_unknown() -> None:
    m = history_gate(Measurement.unknown("no data: the query matched no series"), 0.0, "7d")
    assert m.reason.startswith("history covers 0.0% of 7d")


@pytest.mark.parametrize(
    ("tokens_per_step", "field", "before", "after"),
    [
        pytest.param(Measurement.of(2.5), "itl_p95", Measurement.of(0.1), "once per streamed output of 2.50 tokens",
                     id="under speculative decoding the ITL says it is per step"),
        pytest.param(Measurement.of(2.5), "tpot_p95", Measurement.unknown("no observations in the window"),
                     "ITL counts steps of 2.50 tokens", id="a missing TPOT says why ITL cannot stand in"),
        pytest.param(Measurement.of(2.5), "tpot_p95", Measurement.unknown("too few requests: 3"), "too few requests",
                     id="another reason for an unknown TPOT is kept"),
        pytest.param(Measurement.unknown("no data"), "itl_p95", Measurement.of(0.1), "",
                     id="without speculative decoding nothing changes"),
    ],
)  # fmt: skip
def test_speculative_decoding_explains_itl_and_tpot(
    tokens_per_step: Measurement, field: str, before: Measurement, after: str
) -> None:
    out = speculative_decoding({field: before}, tokens_per_step)
    assert out[field].value == before.value
    assert after in out[field].reason


NO_DATA = Measurement.unknown("no data: the query matched no series", "q", "5m")
EXPORTER = ({"namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-x"}, 8.0)
HELD = ({"namespace": "llm", "pod": "other-0"}, 2.0)
REPLICAS = [({"namespace": "llm", "pod": "chat-0"}, 1.0), ({"namespace": "llm", "pod": "chat-1"}, 1.0)]
NO_GPU_VALUE = dict.fromkeys(GPU_FIELDS, NO_DATA)


@pytest.mark.parametrize(
    ("values", "gpus", "replicas", "field", "reason"),
    [
        pytest.param(NO_GPU_VALUE, [], REPLICAS, "gpu_utilization",
                     "no data: Prometheus holds no dcgm-exporter series (DCGM_FI_DEV_GPU_UTIL (or DCGM_FI_PROF_GR_"
                     "ENGINE_ACTIVE)) in the last 5m: scrape dcgm-exporter to read GPU values",
                     id="no dcgm-exporter series at all: scrape it"),
        pytest.param(NO_GPU_VALUE, [EXPORTER], [({}, 2.0)], "gpu_power_watts",
                     "no data: the tier's vLLM targets carry no pod label",
                     id="vLLM targets without a pod label cannot join GPUs (Docker, static targets)"),
        pytest.param(NO_GPU_VALUE, [EXPORTER, HELD], REPLICAS, "gpu_xid_errors",
                     "no GPU dcgm-exporter reports is labelled with a pod of the tier's replicas (llm/chat-0, "
                     "llm/chat-1): its 10 GPU(s) carry gpu-operator/nvidia-dcgm-exporter-x, llm/other-0;",
                     id="GPUs under the exporter's pod and another workload's name both sides of the join"),
        pytest.param({**NO_GPU_VALUE, "gpu_utilization": Measurement.of(40.0, "q", "5m")}, [EXPORTER], REPLICAS,
                     "gpu_memory_used_fraction",
                     "no data: the tier's GPUs report no DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_FB_FREE, so it is unknown",
                     id="a joined tier whose GPUs lack a field (MIG framebuffer) says the field is not reported"),
    ],
)  # fmt: skip
def test_an_unknown_gpu_value_says_which_side_of_the_join_is_missing(
    values: dict[str, Measurement], gpus: list[tuple[dict[str, str], float]],
    replicas: list[tuple[dict[str, str], float]], field: str, reason: str,
) -> None:  # fmt: skip
    assert gpus_unexplained(values)
    out = explain_gpus(values, Pods.of(gpus), Pods.of(replicas))
    assert out[field].value is None and reason in out[field].reason, out[field].reason
    assert out[field].query == "q", "the reason changes, the query that was run stays"


@pytest.mark.parametrize(
    "values",
    [
        pytest.param({"gpu_utilization": Measurement.of(40.0, "q", "5m")}, id="known GPU values need no reason"),
        pytest.param({"gpu_utilization": Measurement.unknown("stale: sample is 900s old", "q", "5m")},
                     id="a stale GPU value keeps its own reason"),
        pytest.param({"request_rate": NO_DATA}, id="no data outside the GPU fields is not a GPU question"),
    ],
)  # fmt: skip
def test_only_no_data_gpu_values_are_explained(values: dict[str, Measurement]) -> None:
    assert not gpus_unexplained(values)
    assert explain_gpus(values, Pods.of([EXPORTER]), Pods.of(REPLICAS)) == values


def test_many_pods_are_named_up_to_three() -> None:
    pods = Pods.of([({"namespace": "n", "pod": f"p{i}"}, 1.0) for i in range(5)])
    assert (pods.named(), pods.total) == ("n/p0, n/p1, n/p2 and 2 more", 5)
