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
from monitor.sizing.latency import first_token_seconds, ttft_p95
from monitor.sizing.tier import replica_model

__all__ = ["LoadPrediction", "Prediction", "predict_load", "predict_run", "verdict"]

AGREEMENT = 0.25  # formulas and emulator agree when their p95s are within 25%


@dataclass(frozen=True)
class Prediction:
    batch: float
    kv_capacity_sequences: float
    itl_seconds: float
    ttft_seconds: float
    output_tokens_per_second: float


def predict_run(plan: Plan, tier: Tier, concurrency: float | None) -> Prediction:
    """`concurrency` None is a saturated run (every request queued at once)."""
    eff = tier.efficiency
    replica = replica_model(plan, tier, eff.bandwidth.expected, eff.compute.expected)
    wl = replica.workload
    users = math.inf if concurrency is None else concurrency
    batch = max(1.0, min(users, float(replica.admission_limit)))
    itl = replica.tpot_step(batch).seconds
    rate = replica.requests_per_second(batch)
    ttft = first_token_seconds(replica, wl.uncached_prompt_mean, wl.cached_prompt_mean, batch, rate)
    queued = 0.0 if math.isinf(users) else max(0.0, users - batch) / rate
    return Prediction(batch, replica.kv_sequences, itl, ttft + queued, replica.output_tokens_per_second(batch))


@dataclass(frozen=True)
class LoadPrediction:
    """What the formulas say a tier does with `replicas` replicas at `demand_rps` model calls/s."""

    batch: float
    batch_limit: int  # max_num_seqs or the sequences whose KV fits, whichever is lower
    ttft_p95_seconds: float  # inf past saturation
    tpot_p95_seconds: float
    kv_occupancy: float
    saturated: bool


def predict_load(plan: Plan, tier: Tier, replicas: int, demand_rps: float) -> LoadPrediction:
    """The operating batch solves B = rate per replica x slot time(B) (Little's law), up to the engine's
    limit; past it the queue grows without bound."""
    eff = tier.efficiency
    replica = replica_model(plan, tier, eff.bandwidth.expected, eff.compute.expected)
    limit = replica.admission_limit
    per_replica = demand_rps / replicas if replicas else math.inf
    saturated = per_replica >= replica.requests_per_second(limit)
    batch = float(limit)
    if not saturated:
        batch = 1.0
        for _ in range(100):
            batch = min(float(limit), max(1.0, per_replica * replica.slot_seconds(batch)))
    ttft = math.inf if saturated else ttft_p95(replica, replicas, limit, demand_rps).seconds
    return LoadPrediction(batch, limit, ttft, replica.tpot_p95(batch), replica.kv_occupancy(batch), saturated)


def verdict(
    predicted: LoadPrediction,
    emulated: tuple[tuple[float, tuple[float, float]], tuple[float, tuple[float, float]]],
    ttft_slo: float,
    tpot_slo: float,
) -> str:
    """ "agree", or what disagrees: one side meets an SLO the other misses, or the p95s are over 25% apart
    and the formula's value lies outside the histogram bucket the emulated p95 was read from (its
    resolution). `emulated` is ((TTFT p95, its bucket), (TPOT p95, its bucket))."""
    problems = []
    for what, formula, (value, (low, high)), slo in (
        ("TTFT", predicted.ttft_p95_seconds, emulated[0], ttft_slo),
        ("TPOT", predicted.tpot_p95_seconds, emulated[1], tpot_slo),
    ):
        if math.isnan(value):
            continue
        if (formula <= slo) != (value <= slo):
            side = "formulas" if formula <= slo else "emulator"
            problems.append(f"{what}: only the {side} meet the {slo:g} s SLO")
        elif (
            math.isfinite(formula) and value > 0 and abs(formula / value - 1) > AGREEMENT and not low <= formula <= high
        ):
            problems.append(f"{what} p95 {formula:.3g} s by the formulas, {value:.3g} s emulated")
    return "agree" if not problems else "DISAGREE: " + "; ".join(problems)
