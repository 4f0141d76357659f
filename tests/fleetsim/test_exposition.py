"""The exposition parses with prometheus_client and matches the metric catalog (reference §1-§4)."""

from __future__ import annotations

import random

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from fleetsim.exposition import render_vllm
from fleetsim.metrics import Generation, VllmMetrics, build_1_2_5_buckets, families_for
from fleetsim.server import dcgm_text, gateway_text, ksm_text, vllm_text

from .helpers import START, parse, run_fleet, tiny_plan

BASE_V1 = {"model_name", "engine"}
BASE_LEGACY = {"model_name"}
# Written from the reference tables (§1.2, §1.6, §1.7), not from fleetsim.metrics: name -> (type, extra labels).
V1_FAMILIES = {
    "vllm:num_requests_running": ("gauge", set()),
    "vllm:num_requests_waiting": ("gauge", set()),
    "vllm:num_requests_waiting_by_reason": ("gauge", {"reason"}),
    "vllm:kv_cache_usage_perc": ("gauge", set()),
    "vllm:prefix_cache_queries": ("counter", set()),
    "vllm:prefix_cache_hits": ("counter", set()),
    "vllm:num_preemptions": ("counter", set()),
    "vllm:prompt_tokens": ("counter", set()),
    "vllm:prompt_tokens_by_source": ("counter", {"source"}),
    "vllm:prompt_tokens_cached": ("counter", set()),
    "vllm:generation_tokens": ("counter", set()),
    "vllm:request_success": ("counter", {"finished_reason"}),
    "vllm:request_prompt_tokens": ("histogram", set()),
    "vllm:request_generation_tokens": ("histogram", set()),
    "vllm:request_prefill_kv_computed_tokens": ("histogram", set()),
    "vllm:iteration_tokens_total": ("histogram", set()),
    "vllm:request_max_num_generation_tokens": ("histogram", set()),
    "vllm:request_params_n": ("histogram", set()),
    "vllm:request_params_max_tokens": ("histogram", set()),
    "vllm:time_to_first_token_seconds": ("histogram", set()),
    "vllm:inter_token_latency_seconds": ("histogram", set()),
    "vllm:request_time_per_output_token_seconds": ("histogram", set()),
    "vllm:e2e_request_latency_seconds": ("histogram", set()),
    "vllm:request_queue_time_seconds": ("histogram", set()),
    "vllm:request_inference_time_seconds": ("histogram", set()),
    "vllm:request_prefill_time_seconds": ("histogram", set()),
    "vllm:request_decode_time_seconds": ("histogram", set()),
    "vllm:engine_sleep_state": ("gauge", {"sleep_state"}),
}
LEGACY_RENAMES = {
    "vllm:kv_cache_usage_perc": "vllm:gpu_cache_usage_perc",
    "vllm:prefix_cache_queries": "vllm:gpu_prefix_cache_queries",
    "vllm:prefix_cache_hits": "vllm:gpu_prefix_cache_hits",
    "vllm:inter_token_latency_seconds": "vllm:time_per_output_token_seconds",
}
LEGACY_ABSENT = {
    "vllm:num_requests_waiting_by_reason",
    "vllm:prompt_tokens_by_source",
    "vllm:prompt_tokens_cached",
    "vllm:request_prefill_kv_computed_tokens",
    "vllm:request_time_per_output_token_seconds",
    "vllm:engine_sleep_state",
}
TTFT = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
        80.0, 160.0, 640.0, 2560.0]  # fmt: skip
TPOT = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0]
LATENCY = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
           960.0, 1920.0, 7680.0]  # fmt: skip
ITERATION = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
TOKENS_32K = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000]


def expected_families(generation: Generation) -> dict[str, tuple[str, set[str]]]:
    base = BASE_V1 if generation == "v1" else BASE_LEGACY
    out = {}
    for name, (kind, extra) in V1_FAMILIES.items():
        if generation == "legacy" and name in LEGACY_ABSENT:
            continue
        out[LEGACY_RENAMES.get(name, name) if generation == "legacy" else name] = (kind, base | extra)
    return out


@pytest.fixture(scope="module")
def fleet_v1():
    return run_fleet(tiny_plan(rps=6.0), 120)


@pytest.fixture(scope="module")
def fleet_legacy():
    return run_fleet(tiny_plan(rps=6.0), 120, generation="legacy")


@pytest.mark.parametrize(
    "generation",
    [pytest.param("v1", id="V1 exposes the HEAD names with model_name and engine labels"),
     pytest.param("legacy", id="legacy exposes the older names with model_name only")],
)  # fmt: skip
def test_every_family_has_the_catalog_name_type_and_labels(generation, fleet_v1, fleet_legacy):
    fleet = fleet_v1 if generation == "v1" else fleet_legacy
    families = parse(vllm_text(fleet, "fast-0"))
    seen = {}
    for name, family in families.items():
        if name.endswith("_created") or name in ("process_start_time_seconds", "vllm:cache_config_info"):
            continue
        labels = {k for s in family.samples for k in s.labels} - {"le"}
        seen[name] = (family.type, labels)
    assert seen == expected_families(generation)
    assert "process_start_time_seconds" in families
    info = families["vllm:cache_config_info"].samples[0]
    assert {"block_size", "num_gpu_blocks", "gpu_memory_utilization", "enable_prefix_caching"} <= info.labels.keys()
    assert ("engine" in info.labels) == (generation == "v1") and "model_name" not in info.labels


@pytest.mark.parametrize(
    ("family", "buckets"),
    [
        pytest.param("vllm:time_to_first_token_seconds", TTFT, id="TTFT buckets run from 1 ms to 2560 s"),
        pytest.param("vllm:inter_token_latency_seconds", TPOT, id="ITL buckets run from 10 ms to 80 s"),
        pytest.param("vllm:request_time_per_output_token_seconds", TPOT, id="per-request TPOT shares them"),
        pytest.param("vllm:e2e_request_latency_seconds", LATENCY, id="latency buckets run to 7680 s"),
        pytest.param("vllm:request_queue_time_seconds", LATENCY, id="queue time uses the latency buckets"),
        pytest.param("vllm:iteration_tokens_total", ITERATION, id="iteration tokens are powers of two to 16384"),
        pytest.param("vllm:request_prompt_tokens", TOKENS_32K, id="prompt tokens are 1-2-5 up to max_model_len"),
        pytest.param("vllm:request_params_n", [1, 2, 5, 10, 20], id="n has its own five buckets"),
    ],
)
def test_histogram_buckets_match_the_catalog(family, buckets, fleet_v1):
    parsed = parse(vllm_text(fleet_v1, "fast-0"))[family]
    les = [s.labels["le"] for s in parsed.samples if s.name.endswith("_bucket")]
    assert les == [str(float(b)) for b in buckets] + ["+Inf"]


def test_token_buckets_follow_max_model_len():
    assert build_1_2_5_buckets(100) == (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)  # vLLM's own docstring example
    assert build_1_2_5_buckets(8192)[-3:] == (1000.0, 2000.0, 5000.0)
    assert build_1_2_5_buckets(131072)[-2:] == (50000.0, 100000.0)


@pytest.mark.parametrize(
    "max_model_len",
    [
        pytest.param(1, id="a one-token model has the single bucket 1"),
        pytest.param(4096, id="a 4k context stops at 2000"),
        pytest.param(131_072, id="a 128k context stops at 100000"),
        pytest.param(1_000_000, id="a bound equal to max_model_len is kept"),
    ],
)
def test_the_monitor_reads_the_token_buckets_fleetsim_serves(max_model_len):
    """Two independent copies of vLLM's builder (the simulator's and the monitor's) agree."""
    from monitor.sizing.buckets import build_1_2_5_buckets as monitors

    assert build_1_2_5_buckets(max_model_len) == monitors(max_model_len)


@pytest.mark.parametrize("generation", [pytest.param("v1", id="V1"), pytest.param("legacy", id="legacy")])
def test_histograms_are_cumulative_and_count_equals_the_inf_bucket(generation, fleet_v1, fleet_legacy):
    fleet = fleet_v1 if generation == "v1" else fleet_legacy
    checked = 0
    for family in parse(vllm_text(fleet, "fast-0")).values():
        if family.type != "histogram":
            continue
        buckets = [s.value for s in family.samples if s.name.endswith("_bucket")]
        count = next(s.value for s in family.samples if s.name.endswith("_count"))
        assert buckets == sorted(buckets) and buckets[-1] == count, family.name
        checked += 1
    assert checked >= 12
    finished = parse(vllm_text(fleet, "fast-0"))["vllm:request_success"].samples
    assert sum(s.value for s in finished) > 0


def test_the_text_is_what_prometheus_client_would_print_for_the_same_values():
    """Golden check: replay one random history into VllmMetrics and into a prometheus_client registry
    declared as vLLM's loggers.py declares its metrics; the two texts are identical."""
    rng = random.Random(7)
    m = VllmMetrics(max_model_len=32768, created_unix=START)
    registry = CollectorRegistry()
    base, base_values = ["model_name", "engine"], ["m", "0"]
    clients = {}
    for f in families_for("v1"):
        names = [*base, f.label] if f.label else base
        if f.kind == "counter":
            clients[f.key] = Counter(f.key, f.help, names, registry=registry)
        elif f.kind == "gauge":
            clients[f.key] = Gauge(f.key, f.help, names, registry=registry)
        else:
            clients[f.key] = Histogram(f.key, f.help, names, buckets=f.bucket_bounds(32768), registry=registry)
        for value in f.values_for("v1") if f.label else [None]:
            child = clients[f.key].labels(*base_values, *([value] if value else []))
            if f.key == "vllm:engine_sleep_state" and value == "awake":
                child.set(1)
    for _ in range(2000):
        f = rng.choice(families_for("v1"))
        label = rng.choice(f.values_for("v1")) if f.label else None
        child = clients[f.key].labels(*base_values, *([label] if label else []))
        x = rng.choice([0.0, 0.004, 1.0, 3.0, 250.0, 4096.0, rng.random() * 100])
        if f.kind == "counter":
            m.inc(f.key, x, label)
            child.inc(x)
        elif f.kind == "gauge":
            m.set(f.key, x, label)
            child.set(x)
        else:
            m.observe(f.key, x)
            child.observe(x)
    ours = render_vllm(m, "m", "v1", {"block_size": "16"}, START)
    theirs = generate_latest(registry).decode()
    strip = lambda text: [ln for ln in text.splitlines() if "_created" not in ln]  # noqa: E731
    assert strip(ours)[3:-3] == strip(theirs)


def test_counters_never_decrease_between_scrapes_but_reset_on_a_restart():
    fleet = run_fleet(tiny_plan(rps=6.0), 30, restart_after=5.0)
    before = counters(vllm_text(fleet, "fast-1"))
    fleet.advance_to(fleet.now + 30)
    after = counters(vllm_text(fleet, "fast-1"))
    assert all(after[k] >= v for k, v in before.items()) and after != before
    fleet.fail("fast-1")
    fleet.advance_to(fleet.now + 5.0 + 130.0)  # restart after 5 s, then the 2-minute cold start
    restarted = counters(vllm_text(fleet, "fast-1"))
    key = "vllm:generation_tokens_total" + repr([("engine", "0"), ("model_name", "meta-llama/Llama-3.1-8B-Instruct")])
    assert restarted[key] < after[key]
    starts = [s.value for s in parse(vllm_text(fleet, "fast-1"))["process_start_time_seconds"].samples]
    assert starts[0] > START + 60


def counters(text: str) -> dict[str, float]:
    out = {}
    for family in text_string_to_metric_families(text):
        if family.type in ("counter", "histogram"):
            for s in family.samples:
                out[s.name + repr(sorted(s.labels.items()))] = s.value
    return out


DCGM_ORDER = ["gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION",
              "container", "namespace", "pod"]  # fmt: skip


def test_dcgm_fields_carry_the_exporter_labels_in_template_order_and_sane_values(fleet_v1):
    text = dcgm_text(fleet_v1, "fast-0")
    line = next(ln for ln in text.splitlines() if ln.startswith("DCGM_FI_DEV_GPU_UTIL{"))
    assert [kv.split("=")[0] for kv in line[line.index("{") + 1 : line.index("}")].split(",")] == DCGM_ORDER
    fams = parse(text)
    assert fams["DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"].type == "counter"
    value = {name: f.samples[0].value for name, f in fams.items()}
    assert 0 < value["DCGM_FI_DEV_GPU_UTIL"] <= 100
    assert 0 < value["DCGM_FI_PROF_DRAM_ACTIVE"] <= 1 and 0 <= value["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"] <= 1
    assert 70 <= value["DCGM_FI_DEV_POWER_USAGE"] <= 700
    total = value["DCGM_FI_DEV_FB_USED"] + value["DCGM_FI_DEV_FB_FREE"] + value["DCGM_FI_DEV_FB_RESERVED"]
    assert total == pytest.approx(80e9 / 2**20, abs=1)
    assert value["DCGM_FI_DEV_FB_USED"] == pytest.approx(0.9 * 80e9 / 2**20, rel=0.02)
    assert fams["DCGM_FI_DEV_GPU_UTIL"].samples[0].labels["pod"] == "fast-0"


def test_kube_state_metrics_show_created_ready_and_ready_time(fleet_v1):
    fams = parse(ksm_text(fleet_v1))
    created = {s.labels["pod"]: s.value for s in fams["kube_pod_created"].samples}
    ready_time = {s.labels["pod"]: s.value for s in fams["kube_pod_status_ready_time"].samples}
    ready = {(s.labels["pod"], s.labels["condition"]): s.value for s in fams["kube_pod_status_ready"].samples}
    assert set(created) == {"fast-0", "fast-1"}
    assert ready_time["fast-0"] - created["fast-0"] == pytest.approx(120.0)
    assert ready[("fast-0", "true")] == 1.0 and ready[("fast-0", "false")] == 0.0
    assert {k for s in fams["kube_pod_created"].samples for k in s.labels} == {"namespace", "pod", "uid"}


def test_gateway_counts_user_requests_and_model_calls_by_tier(fleet_v1):
    fams = parse(gateway_text(fleet_v1))
    users = fams["gateway_user_requests"].samples[0]
    calls = fams["gateway_model_calls"].samples[0]
    assert users.name == "gateway_user_requests_total" and users.labels == {"tier": "fast"}
    assert users.value == calls.value > 500


def test_every_generation_declares_some_families():
    assert len(families_for("legacy")) < len(families_for("v1"))


def test_gpu_fields_follow_the_replicas_busy_memory_and_compute_time():
    """Over a 30 s window with 15 s of steps, 12 s of them moving memory and 3 s computing: GPU_UTIL 50,
    DRAM_ACTIVE = 12 x 0.7 (bandwidth efficiency) / 30, TENSOR_ACTIVE = 3 x 0.4 (compute efficiency) / 30."""
    fleet = run_fleet(tiny_plan(rps=0.001), 1)
    pod = fleet.pods["fast-0"]
    act = pod.replica.activity
    act.busy, act.memory, act.compute, act.tokens = 15.0, 12.0, 3.0, 0.0
    pod.sample_gpus(fleet.now, 30.0, 0.7, 0.4)
    values = pod.gpus[0].values
    assert values["DCGM_FI_DEV_GPU_UTIL"] == 50
    assert values["DCGM_FI_PROF_DRAM_ACTIVE"] == pytest.approx(0.28)
    assert values["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"] == pytest.approx(0.04)
    idle, tdp = 70.0, 700.0
    assert idle < values["DCGM_FI_DEV_POWER_USAGE"] < tdp
    pod.sample_gpus(fleet.now, 30.0, 0.7, 0.4)  # nothing ran since: idle power, 0% utilisation
    assert pod.gpus[0].values["DCGM_FI_DEV_GPU_UTIL"] == 0 and pod.gpus[0].values["DCGM_FI_DEV_POWER_USAGE"] == idle
