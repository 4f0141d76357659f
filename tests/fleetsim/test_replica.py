"""Engine physics: vLLM's observation counts, the roofline step time, queueing and KV preemption."""

from __future__ import annotations

import numpy as np
import pytest

from fleetsim.fleet import engine_config
from fleetsim.metrics import VllmMetrics
from fleetsim.replica import Replica
from fleetsim.scenarios import Effects
from fleetsim.workload import Call

from .helpers import START, hist_count, run_fleet, tiny_plan, total


def replica(effects: Effects = Effects(), **tier: object) -> Replica:  # noqa: B008
    plan = tiny_plan(**tier)
    config = engine_config(plan, plan.tiers[0], effects)
    return Replica(config, VllmMetrics(config.max_model_len, START), START, np.random.default_rng(0))


def call(at: float, prompt: int = 500, output: int = 20, cacheable: int = 0, max_tokens: int = 4096) -> Call:
    return Call(arrival=at, prompt_tokens=prompt, output_tokens=output, max_tokens=max_tokens, tier="fast",
                cacheable_tokens=cacheable)  # fmt: skip


def test_sequential_requests_are_counted_as_vllm_counts_them():
    """§1.4: N requests of M output tokens one after another: TTFT N, ITL N(M-1), iteration_tokens N*M
    observations summing to N (prompt + M)."""
    r = replica()
    n, m, prompt = 5, 20, 500
    for i in range(n):
        r.submit(call(START + 10.0 * i, prompt, m))
    finished = r.advance(START + 60.0)
    metrics = r.metrics
    assert len(finished) == n
    assert metrics.count("vllm:time_to_first_token_seconds") == n
    assert metrics.count("vllm:inter_token_latency_seconds") == n * (m - 1)
    assert metrics.count("vllm:iteration_tokens_total") == n * m
    assert metrics.sums["vllm:iteration_tokens_total"] == n * (prompt + m)
    assert metrics.value("vllm:request_success", "stop") == n
    assert metrics.value("vllm:generation_tokens") == n * m
    assert metrics.value("vllm:prompt_tokens") == n * prompt


def test_a_lone_decode_step_takes_the_roofline_step_time():
    r = replica()
    r.submit(call(START, prompt=1000, output=2))
    r.advance(START + 5.0)
    engine = r.config.engine
    expected = engine.step(1000, 1, 1000).seconds  # the second token reads 1000 cached tokens
    assert r.metrics.sums["vllm:inter_token_latency_seconds"] == pytest.approx(
        expected, rel=1e-4
    )  # Unix-time subtraction: ~1e-7 s


def test_slower_hardware_lowers_tokens_per_second_at_equal_batch():
    rates = []
    for multiplier in (1.0, 0.7):
        r = replica(Effects(efficiency_multiplier=multiplier))
        for _ in range(32):
            r.submit(call(START, prompt=200, output=400))
        finished = r.advance(START + 120.0)
        decode = sum(q.last_token_at - q.first_token_at for q in finished) / len(finished)
        rates.append(399 / decode)
    assert rates[1] / rates[0] == pytest.approx(0.7, rel=0.02)


def test_the_prefix_cache_serves_the_shared_prefix_in_whole_blocks():
    r = replica()
    r.submit(call(START, prompt=2000, output=5, cacheable=600))
    r.submit(call(START + 5.0, prompt=2000, output=5, cacheable=600))
    r.advance(START + 10.0)
    assert r.metrics.value("vllm:prefix_cache_queries") == 4000
    assert r.metrics.value("vllm:prefix_cache_hits") == 592  # 37 blocks of 16; the first request missed
    assert r.metrics.value("vllm:prompt_tokens_by_source", "local_cache_hit") == 592


@pytest.mark.parametrize(
    ("rps", "grows"),
    [pytest.param(3.0, False, id="under capacity the queue stays empty"),
     pytest.param(80.0, True, id="above capacity the queue and TTFT grow")],
)  # fmt: skip
def test_arrivals_above_capacity_grow_the_queue_and_ttft(rps, grows):
    fleet = run_fleet(tiny_plan(rps=rps, replicas=1), 60)
    pod = fleet.pods["fast-0"]
    waiting_early = len(pod.replica.waiting)
    ttft_early = pod.metrics.sums["vllm:time_to_first_token_seconds"] / pod.metrics.count(
        "vllm:time_to_first_token_seconds"
    )
    fleet.advance_to(fleet.now + 60)
    waiting_late = len(pod.replica.waiting)
    ttft_late = pod.metrics.sums["vllm:time_to_first_token_seconds"] / pod.metrics.count(
        "vllm:time_to_first_token_seconds"
    )
    if grows:
        assert waiting_late > waiting_early > 50 and ttft_late > 2 * ttft_early
        assert pod.metrics.value("vllm:num_requests_waiting") == waiting_late
    else:
        assert waiting_late < 5 and ttft_late < 0.5


def test_a_full_kv_cache_preempts_under_load():
    roomy = run_fleet(tiny_plan(rps=4.0, replicas=1), 120)
    tight = run_fleet(tiny_plan(rps=4.0, replicas=1, gpu_memory_utilization=0.13125), 0)  # 476 blocks
    kv = []
    for _ in range(24):
        tight.advance_to(tight.now + 5.0)
        kv.append(tight.pods["fast-0"].metrics.value("vllm:kv_cache_usage_perc"))
    assert total(roomy, "vllm:num_preemptions") == 0
    assert total(tight, "vllm:num_preemptions") > 10
    assert 0.9 < max(kv) <= 1.0


def test_preempted_requests_are_recomputed_and_their_tpot_degrades():
    """8 sequences growing to 2,000 tokens need 1,000 blocks; 476 hold 3-4: the rest are preempted,
    wait, recompute prompt + generated tokens and finish later per token."""
    tpot = []
    for utilization in (0.9, 0.13125):  # 0.13125: 476 blocks beside 8 GB of weights and 2 GB overhead
        r = replica(gpu_memory_utilization=utilization)
        for _ in range(8):
            r.submit(call(START, prompt=500, output=1500))
        finished = r.advance(START + 120.0)
        assert len(finished) == 8 and all(q.generated == 1500 for q in finished)
        tpot.append([(q.last_token_at - q.first_token_at) / 1499 for q in finished])
        preemptions = r.metrics.value("vllm:num_preemptions")
    assert preemptions >= 3
    assert np.mean(tpot[1]) > 1.15 * np.mean(tpot[0]) and max(tpot[1]) > 1.4 * max(tpot[0])


def test_requests_that_wait_past_the_client_timeout_are_aborted():
    fleet = run_fleet(tiny_plan(rps=80.0, replicas=1), 90, client_timeout=20.0)
    assert total(fleet, "vllm:request_success", "abort") > 0
    assert hist_count(fleet, "vllm:e2e_request_latency_seconds") == sum(
        total(fleet, "vllm:request_success", reason) for reason in ("stop", "length", "abort", "error")
    )


def test_outputs_reaching_max_tokens_finish_with_reason_length():
    r = replica()
    r.submit(call(START, output=300, max_tokens=100))
    r.advance(START + 30.0)
    assert r.metrics.value("vllm:request_success", "length") == 1
    assert r.metrics.sums["vllm:request_generation_tokens"] == 100
