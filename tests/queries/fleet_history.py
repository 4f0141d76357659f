"""A two-hour fleet history with known answers, backfilled into a real Prometheus for the catalog tests.

Tiers (label `tier`, plus the target labels job/instance/namespace/pod a Kubernetes scrape gives):
- a: vLLM V1, current names, 3 replicas; the production-stack router re-exports queue gauges into it
  (`server` label, no `model_name`) with absurd values that must not count; GPUs behind two dcgm-exporter
  label spellings; kube-state-metrics readiness and creation times; gateway counters.
- b: vLLM V0 (old names, no `engine` label), 2 replicas, b-1 down for the last 90 s.
- c: one replica exporting both generations (vLLM 0.9.2-0.11) with *different* values: only the new one
  may count.
- d: a fleet mid-upgrade, one replica on new names and one on old: both must count.
- e: traffic stopped: histograms and counters flat, so quantiles and ratios are NaN.
- f: two replicas behind one listener (one instance, two metrics paths, as fleetsim serves them): the pod
  label tells them apart; kube-state-metrics reports its pods as `exported_pod` (honor_labels false).
- g: speculative decoding; one replica without the per-request TPOT histogram.
- r: Ray Serve, two replicas behind one node's metrics agent (ReplicaId).
Tiers b-e and g have no kube-state-metrics series at all.
"""

from __future__ import annotations

from collections.abc import Callable

from tests.harness.history import History, times

__all__ = ["END", "MODEL_A", "START", "build"]

END = 1_790_000_000.0
START = END - 7200.0
STEP = 30.0
MODEL_A = "meta-llama/Llama-3.3-70B-Instruct"
MODEL_B = "mistralai/Mistral-7B-Instruct-v0.3"

TTFT_BUCKETS = ("0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1", "0.25", "0.5", "0.75", "1.0",
                "2.5", "5.0", "7.5", "10.0", "20.0", "40.0", "80.0", "160.0", "640.0", "2560.0", "+Inf")  # fmt: skip
ITL_BUCKETS = ("0.01", "0.025", "0.05", "0.075", "0.1", "0.15", "0.2", "0.3", "0.4", "0.5", "0.75", "1.0",
               "2.5", "5.0", "7.5", "10.0", "20.0", "40.0", "80.0", "+Inf")  # fmt: skip
TOKEN_BUCKETS = ("1", "2", "5", "10", "20", "50", "100", "200", "500", "1000", "2000", "5000", "10000", "20000",
                 "50000", "100000", "+Inf")  # fmt: skip


def _rates(bounds: tuple[str, ...], **rates: float) -> dict[str, float]:
    """Per-bucket (non-cumulative) observation rates; keys like `le_1_0` name `1.0`, `inf` names `+Inf`."""
    named = {k.removeprefix("le_").replace("_", "."): v for k, v in rates.items()}
    named = {("+Inf" if k == "inf" else k): v for k, v in named.items()}
    unknown = set(named) - set(bounds)
    assert not unknown, unknown
    return {le: named.get(le, 0.0) for le in bounds}


def _target(tier: str, pod: str, model: str, engine: bool = True) -> dict[str, str]:
    labels = {"job": "vllm", "instance": f"{pod}:8000", "namespace": "llm", "pod": pod, "tier": tier,
              "model_name": model}  # fmt: skip
    return labels | ({"engine": "0"} if engine else {})


def _up(h: History, labels: dict[str, str], down_from: float | None = None) -> None:
    target = {k: labels[k] for k in ("job", "instance", "namespace", "pod", "tier")}
    points = [(t, 0.0 if down_from is not None and t >= down_from else 1.0) for t in times(START, END, STEP)]
    h.raw("up", target, points)


def _tier_a(h: History) -> None:
    success = {"a-0": {"stop": 3.0, "error": 0.5}, "a-1": {"stop": 2.0, "abort": 0.5}, "a-2": {"stop": 1.0}}
    running = {"a-0": 10, "a-1": 6, "a-2": 2}
    tokens = {"a-0": 300, "a-1": 200, "a-2": 100}
    kv = {"a-0": 0.5, "a-1": 0.3, "a-2": 0.1}
    for pod in ("a-0", "a-1", "a-2"):
        t = _target("a", pod, MODEL_A)
        for reason in ("stop", "length", "abort", "error", "repetition"):
            h.counter("vllm:request_success", t | {"finished_reason": reason}, success[pod].get(reason, 0.0))
        h.gauge("vllm:num_requests_running", t, running[pod])
        h.counter("vllm:generation_tokens", t, tokens[pod])
        h.gauge("vllm:kv_cache_usage_perc", t, kv[pod])
        h.histogram("vllm:time_to_first_token_seconds", t,
                    _rates(TTFT_BUCKETS, le_0_1=4, le_0_5=4, le_1_0=1, le_2_5=1), sum_rate=5.0)  # fmt: skip
        h.histogram("vllm:inter_token_latency_seconds", t, _rates(ITL_BUCKETS, le_0_025=50, le_0_05=50))
        h.histogram("vllm:request_prompt_tokens", t, _rates(TOKEN_BUCKETS, le_1000=2, le_2000=2), sum_rate=6000)
        h.histogram("vllm:request_generation_tokens", t, _rates(TOKEN_BUCKETS, le_100=1, le_200=3), sum_rate=600)
        _up(h, t)
    a0, a1 = _target("a", "a-0", MODEL_A), _target("a", "a-1", MODEL_A)
    h.gauge("vllm:num_requests_waiting_by_reason", a0 | {"reason": "capacity"}, lambda t: 0.5 + 0.01 * (t - START))
    h.gauge("vllm:num_requests_waiting_by_reason", a0 | {"reason": "deferred"}, 4.0)
    h.gauge("vllm:num_requests_waiting", a0, lambda t: 4.5 + 0.01 * (t - START))
    h.gauge("vllm:num_requests_waiting", a1, 2.0)  # an older vLLM: no by-reason gauge
    h.gauge("vllm:num_requests_waiting", _target("a", "a-2", MODEL_A), 0.0)
    router = {"job": "router", "instance": "router:8001", "tier": "a", "server": "http://a-0:8000"}
    h.gauge("vllm:num_requests_waiting", router, 1000.0)
    h.gauge("vllm:num_requests_running", router, 1000.0)
    h.counter("gateway_user_requests", {"job": "gateway", "instance": "gw:80", "tier": "a"}, 2.0)
    h.counter("gateway_model_calls", {"job": "gateway", "instance": "gw:80", "tier": "a"}, 7.0)


def _kube(h: History) -> None:
    """a-0 is old; a-1 and a-2 were created inside the last hour with cold starts of 300 s and 500 s."""
    ksm = {"job": "kube-state-metrics", "instance": "ksm:8080", "namespace": "llm"}
    pods = {"a-0": (START - 1000, START - 700, 1.0), "a-1": (END - 2400, END - 2100, 1.0),
            "a-2": (END - 1800, END - 1300, 0.0)}  # fmt: skip
    for pod, (created, ready_at, ready_now) in pods.items():
        labels = ksm | {"pod": pod, "uid": f"uid-{pod}"}
        h.gauge("kube_pod_created", labels, created, start=max(START, created))
        h.gauge("kube_pod_status_ready_time", labels, ready_at, start=max(START, ready_at))
        ready = labels | {"condition": "true"}
        h.gauge(
            "kube_pod_status_ready",
            ready,
            _step_at(1.0, ready_now, END - 600),
            start=max(START, created),
        )
    # Tier f's pods through a scrape with honor_labels false: the workload's labels arrive as exported_*.
    scraped = {"job": "kube-state-metrics", "instance": "10.0.0.9:8080", "namespace": "monitoring", "pod": "ksm-7c9"}
    for pod, ready_now in (("f-0", 1.0), ("f-1", 0.0)):
        exported = scraped | {"exported_namespace": "llm", "exported_pod": pod, "uid": f"uid-{pod}"}
        h.gauge("kube_pod_status_ready", exported | {"condition": "true"}, ready_now)


def _step_at(before: float, after: float, at: float) -> Callable[[float], float]:
    """`before` until `at`, then `after`."""
    return lambda t: after if t >= at else before


def _dcgm(h: History) -> None:
    base = {"job": "dcgm", "modelName": "NVIDIA H100 80GB HBM3", "DCGM_FI_DRIVER_VERSION": "570.86"}
    gpus = [  # (labels, util, dram, used MiB, free MiB, power W, xid after END-100)
        (base | {"instance": "node1:9400", "gpu": "0", "pod": "dcgm-exporter-x1", "namespace": "gpu-operator",
                 "exported_pod": "a-0", "exported_namespace": "llm", "Hostname": "node1"}, 80, 0.6, 60000, 20000,
         500, 79.0),
        (base | {"instance": "node2:9400", "gpu": "0", "pod": "a-1", "namespace": "llm", "hostname": "node2"},
         60, 0.4, 40000, 40000, 300, 0.0),
        (base | {"instance": "node1:9400", "gpu": "1", "Hostname": "node1"}, 0, 0.0, 0, 80000, 70, 0.0),  # idle
        (base | {"instance": "node3:9400", "gpu": "0", "pod": "b-0", "namespace": "llm", "hostname": "node3"},
         10, 0.1, 10000, 70000, 100, 0.0),
    ]  # fmt: skip
    for labels, util, dram, used, free, power, xid in gpus:
        h.gauge("DCGM_FI_DEV_GPU_UTIL", labels, util)
        h.gauge("DCGM_FI_PROF_DRAM_ACTIVE", labels, dram)
        h.gauge("DCGM_FI_DEV_FB_USED", labels, used)
        h.gauge("DCGM_FI_DEV_FB_FREE", labels, free)
        h.gauge("DCGM_FI_DEV_POWER_USAGE", labels, power)
        h.gauge("DCGM_FI_DEV_XID_ERRORS", labels, _step_at(0.0, xid, END - 100))


def _mig(h: History) -> None:
    """MIG: d-0 holds two H100 slices (no GPU_UTIL, no framebuffer fields), d-1 a whole GPU reporting both
    GPU_UTIL and GR_ENGINE_ACTIVE; c-0 holds one slice only."""
    base = {"job": "dcgm", "modelName": "NVIDIA H100 80GB HBM3", "DCGM_FI_DRIVER_VERSION": "570.86",
            "namespace": "llm", "Hostname": "node4"}  # fmt: skip
    for gi, active, pod in (("1", 0.3, "d-0"), ("2", 0.5, "d-0"), ("3", 0.2, "c-0")):
        labels = base | {"instance": "node4:9400", "gpu": "0", "GPU_I_ID": gi, "GPU_I_PROFILE": "3g.40gb",
                         "device": "nvidia0", "pod": pod}  # fmt: skip
        h.gauge("DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels, active)
        h.gauge("DCGM_FI_DEV_POWER_USAGE", labels, 350)
    whole = base | {"instance": "node4:9400", "gpu": "1", "device": "nvidia1", "pod": "d-1"}
    h.gauge("DCGM_FI_DEV_GPU_UTIL", whole, 90)
    h.gauge("DCGM_FI_PROF_GR_ENGINE_ACTIVE", whole, 0.85)
    h.gauge("DCGM_FI_DEV_FB_USED", whole, 40000)
    h.gauge("DCGM_FI_DEV_FB_FREE", whole, 40000)
    h.gauge("DCGM_FI_DEV_POWER_USAGE", whole, 500)


def _tier_b(h: History) -> None:
    """vLLM V0: no engine label, old names; b-1 stops answering 90 s before the end."""
    b0, b1 = _target("b", "b-0", MODEL_B, engine=False), _target("b", "b-1", MODEL_B, engine=False)
    h.counter("vllm:request_success", b0 | {"finished_reason": "stop"}, 2.0)
    h.gauge("vllm:num_requests_running", b0, 3)
    h.gauge("vllm:num_requests_running", b1, 5, end=END - 120)
    h.gauge("vllm:gpu_cache_usage_perc", b0, 0.25)
    h.gauge("vllm:gpu_prefix_cache_hit_rate", b0, 0.4)  # V0: a lifetime hit-rate gauge, no counters
    h.histogram("vllm:time_per_output_token_seconds", b0, _rates(ITL_BUCKETS, le_0_05=10, le_0_1=10))
    _up(h, b0)
    _up(h, b1, down_from=END - 90)


def _tier_c(h: History) -> None:
    """Both generations on one target, with different values: the new name must win, nothing doubles."""
    c0 = _target("c", "c-0", MODEL_A)
    h.gauge("vllm:kv_cache_usage_perc", c0, 0.7)
    h.gauge("vllm:gpu_cache_usage_perc", c0, 0.2)
    h.counter("vllm:prefix_cache_hits", c0, 6.0)
    h.counter("vllm:prefix_cache_queries", c0, 10.0)
    h.counter("vllm:gpu_prefix_cache_hits", c0, 1.0)
    h.counter("vllm:gpu_prefix_cache_queries", c0, 10.0)
    h.histogram("vllm:inter_token_latency_seconds", c0, _rates(ITL_BUCKETS, le_0_05=10))
    h.histogram("vllm:time_per_output_token_seconds", c0, _rates(ITL_BUCKETS, le_0_5=10))
    h.gauge("vllm:num_requests_running", c0, 1)
    _up(h, c0)


def _tier_d(h: History) -> None:
    """Mid-upgrade: d-0 on new names, d-1 on old ones; a per-tier `or` would drop d-1 entirely."""
    d0, d1 = _target("d", "d-0", MODEL_A), _target("d", "d-1", MODEL_A)
    h.gauge("vllm:kv_cache_usage_perc", d0, 0.2)
    h.gauge("vllm:gpu_cache_usage_perc", d1, 0.6)
    h.histogram("vllm:inter_token_latency_seconds", d0, _rates(ITL_BUCKETS, le_0_05=10))
    h.histogram("vllm:time_per_output_token_seconds", d1, _rates(ITL_BUCKETS, le_0_1=10))
    for t in (d0, d1):
        h.gauge("vllm:num_requests_running", t, 1)
        _up(h, t)


def _tier_e(h: History) -> None:
    """No traffic: counters and histograms flat."""
    e0 = _target("e", "e-0", MODEL_A)
    h.histogram("vllm:time_to_first_token_seconds", e0, _rates(TTFT_BUCKETS))
    h.counter("vllm:request_success", e0 | {"finished_reason": "stop"}, 0.0)
    h.gauge("vllm:num_requests_running", e0, 0)
    h.gauge("vllm:gpu_prefix_cache_hit_rate", e0, -1.0)  # V0 with prefix caching off
    _up(h, e0)


def _tier_f(h: History) -> None:
    for pod, running, tokens in (("f-0", 4.0, 10.0), ("f-1", 6.0, 30.0)):
        t = _target("f", pod, MODEL_A) | {"instance": "fleetsim:9400"}
        h.gauge("vllm:num_requests_running", t, running)
        h.counter("vllm:generation_tokens", t, tokens)
        _up(h, t)


def _tier_g(h: History) -> None:
    """Speculative decoding: g-0 predates the per-request TPOT histogram (ITL only), g-1 has it."""
    g0, g1 = _target("g", "g-0", MODEL_A), _target("g", "g-1", MODEL_A)
    for t, accepted, drafts in ((g0, 4.0, 2.0), (g1, 2.0, 1.0)):
        h.counter("vllm:spec_decode_num_accepted_tokens", t, accepted)
        h.counter("vllm:spec_decode_num_drafts", t, drafts)
        h.counter("vllm:spec_decode_num_draft_tokens", t, 3 * drafts)
        h.histogram("vllm:inter_token_latency_seconds", t, _rates(ITL_BUCKETS, le_0_1=10))
        h.gauge("vllm:num_requests_running", t, 1)
        _up(h, t)
    h.histogram("vllm:request_time_per_output_token_seconds", g1, _rates(ITL_BUCKETS, le_0_05=10))


def _tier_r(h: History) -> None:
    """Ray Serve: one node's metrics agent exports two replicas, told apart by ReplicaId (names as the
    RESTORE_VLLM_COLONS scrape rule leaves them)."""
    node = {"job": "ray", "instance": "10.0.0.5:8080", "namespace": "llm", "pod": "ray-worker-0", "tier": "r",
            "model_name": MODEL_A, "engine": "0"}  # fmt: skip
    for replica, running in (("r1", 3.0), ("r2", 5.0)):
        h.gauge("vllm:num_requests_running", node | {"ReplicaId": replica, "WorkerId": f"w-{replica}"}, running)
    _up(h, node)


def hostile_tiers() -> dict[str, float]:
    """Tier names that try to break out of the string literal, each with its own running count."""
    return {
        'we"ird': 11.0,
        "back\\slash": 12.0,
        "new\nline": 13.0,
        '"} or vector(1) or {x="': 14.0,
        "tab\there": 15.0,
        "ünïcødé $tier": 16.0,
        "we": 17.0,  # a prefix of the first one: equality, not prefix matching
    }


def build() -> str:
    h = History(START, END, STEP)
    _tier_a(h)
    _kube(h)
    _dcgm(h)
    _mig(h)
    _tier_b(h)
    _tier_c(h)
    _tier_d(h)
    _tier_e(h)
    _tier_f(h)
    _tier_g(h)
    _tier_r(h)
    for i, (tier, running) in enumerate(hostile_tiers().items()):
        h.gauge("vllm:num_requests_running", _target(tier, f"h-{i}", MODEL_B), running)
    return h.text()
