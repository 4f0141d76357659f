"""What the sizing model predicts for one benchmark run: a fixed prompt and output length at a fixed
concurrency (a closed loop, as `vllm bench serve --max-concurrency`, GuideLLM's concurrent profile and
AIPerf's --concurrency run it) or at an unbounded request rate (saturated).

The running batch is min(concurrency, max_num_seqs, the sequences whose KV fits); clients beyond it
queue. The served rate is the replica's requests/s at that batch, and in a closed loop of C clients a
queued client waits (C - B) / rate on average before its prefill starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from monitor.plan.model import Plan, Tier
from monitor.sizing.capacity import ReplicaModel
from monitor.sizing.latency import first_token_seconds
from monitor.sizing.tier import replica_model

__all__ = ["Prediction", "kv_capacity_sequences", "predict_run"]


@dataclass(frozen=True)
class Prediction:
    batch: float
    kv_capacity_sequences: float
    itl_seconds: float
    ttft_seconds: float
    output_tokens_per_second: float


def kv_capacity_sequences(replica: ReplicaModel) -> float:
    """Sequences whose KV fits the replica's budget at the workload's KV size per sequence."""
    one = replica.kv_tokens(1.0)
    return replica.kv_budget_tokens / one if one > 0 else math.inf


def predict_run(plan: Plan, tier: Tier, concurrency: float | None) -> Prediction:
    """`concurrency` None is a saturated run (every request queued at once)."""
    eff = tier.efficiency
    replica = replica_model(plan, tier, eff.bandwidth.expected, eff.compute.expected)
    wl = replica.workload
    capacity = kv_capacity_sequences(replica)
    users = math.inf if concurrency is None else concurrency
    batch = max(1.0, min(users, float(tier.max_num_seqs), math.floor(capacity)))
    itl = replica.tpot_step(batch).seconds
    rate = replica.requests_per_second(batch)
    ttft = first_token_seconds(replica, wl.uncached_prompt_mean, wl.cached_prompt_mean, batch, rate)
    queued = 0.0 if math.isinf(users) else max(0.0, users - batch) / rate
    return Prediction(batch, capacity, itl, ttft + queued, rate * wl.output_mean)
