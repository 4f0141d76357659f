"""Steps 2-6 of the seeds for one tier: compute need, concurrency, KV memory, batch, replicas, TTFT.

Every figure is kept with its formula and inputs so the table and the JSON can show the working.
The replica count is a range: `low` at the optimistic end of the efficiency assumptions, `high` at
the pessimistic end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from monitor.memo import IdentityMemo
from monitor.plan.model import Plan, Tier
from monitor.sizing.capacity import CurvePoint, ReplicaModel, capacity_curve, max_batch_at_slo
from monitor.sizing.latency import TTFTEstimate, ttft_p95
from monitor.sizing.memory import kv_budget_bytes, kv_bytes_per_token, weights_bytes
from monitor.sizing.roofline import Engine
from monitor.sizing.workload import TierWorkload, tier_workload

__all__ = [
    "MAX_REPLICAS",
    "OperatingPoint",
    "TierSizing",
    "operating_point",
    "replica_model",
    "replicas_for_ttft",
    "size_tier",
    "ttft_floor_seconds",
]

# The largest count a search tries: past any fleet (a guard; the search ends well before it whenever the SLO
# is above the TTFT floor, and an unbounded doubling once reached counts whose Erlang C overflowed).
MAX_REPLICAS = 2**20


@dataclass(frozen=True)
class OperatingPoint:
    """The tier at one efficiency assumption: the batch the SLO allows and the replicas it takes."""

    bandwidth_efficiency: float
    compute_efficiency: float
    max_batch: float  # the mean running batch the SLO allows (monitor.sizing.capacity.max_batch_at_slo)
    batch_constraint: str
    decode_step_seconds: float
    tpot_seconds: float  # mean: what throughput follows
    requests_per_second_per_replica: float
    replicas_for_throughput: int
    replicas: int
    ttft: TTFTEstimate
    ttft_feasible: bool
    tpot_p95_seconds: float = 0.0  # what the (p95) SLO is held against
    chunk_step_seconds: float = 0.0
    chunk_share: float = 0.0  # of steps that carry a prompt chunk
    ttft_floor_seconds: float = 0.0  # the TTFT p95 no replica count goes below (feasible iff the SLO is above)

    @property
    def binding_constraint(self) -> str:
        if not self.ttft_feasible or self.replicas > self.replicas_for_throughput:
            return "TTFT"
        return self.batch_constraint


@dataclass(frozen=True)
class TierSizing:
    tier: Tier
    workload: TierWorkload
    ttft_slo_seconds: float
    tpot_slo_seconds: float
    weights_bytes: float
    kv_bytes_per_token: float
    kv_budget_bytes: float
    prefill_tokens_per_second: float
    uncached_prefill_tokens_per_second: float
    decode_tokens_per_second: float
    compute_flops_per_second: float
    compute_flops_per_second_without_prefix_cache: float
    gpus_of_pure_compute: float
    concurrency_at_peak: float
    time_in_system_seconds: float
    kv_bytes_at_peak_mean: float
    kv_bytes_at_peak_p95: float
    expected: OperatingPoint
    optimistic: OperatingPoint
    pessimistic: OperatingPoint
    capacity_curve: tuple[CurvePoint, ...]

    @property
    def kv_budget_tokens(self) -> float:
        return max(0.0, self.kv_budget_bytes) / self.kv_bytes_per_token

    @property
    def replicas_range(self) -> tuple[int | None, int, int | None]:
        """(low, expected, high): the counts at the optimistic and pessimistic efficiencies around the expected
        one. An end is None when no count meets the SLO there (its TTFT floor is above the SLO, or no batch meets
        the TPOT SLO): the search's fallback at such a point is the throughput count, which can fall below the
        expected count and would read as "needs at most 11" where no count suffices. The expected count stays a
        number (cost needs one); its infeasibility is a finding of its own."""
        return (_count(self.optimistic), self.expected.replicas, _count(self.pessimistic))

    @property
    def standby(self) -> bool:
        """A tier with no routed traffic (a fallback): sized for nothing, costed at its minimum."""
        return self.workload.peak_rps <= 0


def _count(point: OperatingPoint) -> int | None:
    if point.replicas == 0:  # a standby tier: nothing to meet
        return 0
    return point.replicas if point.ttft_feasible and point.max_batch > 0 else None


_MODELS: IdentityMemo[ReplicaModel] = IdentityMemo(256)


def replica_model(plan: Plan, tier: Tier, bandwidth_eff: float, compute_eff: float) -> ReplicaModel:
    """The tier's replica at these efficiencies, remembered per (plan, tier) object: drift and advice ask
    for the same one at every evaluation (a replay evaluates every minute). The entry holds the plan and
    tier, so their ids are not reused while it is cached."""
    return _MODELS.get(
        (plan, tier), (bandwidth_eff, compute_eff), lambda: _replica_model(plan, tier, bandwidth_eff, compute_eff)
    )


def _replica_model(plan: Plan, tier: Tier, bandwidth_eff: float, compute_eff: float) -> ReplicaModel:
    model, gpu = plan.model_of(tier), plan.gpu(tier.gpu)
    engine = Engine.for_tier(tier, model, gpu, bandwidth_eff, compute_eff)
    budget = max(0.0, kv_budget_bytes(tier, model, gpu))
    return ReplicaModel(
        engine=engine,
        workload=tier_workload(plan, tier),
        kv_budget_tokens=budget / engine.kv_bytes_per_token,
        chunk_budget_tokens=tier.chunked_prefill_tokens,
        max_num_seqs=tier.max_num_seqs,
    )


def size_tier(plan: Plan, tier: Tier) -> TierSizing:
    model, gpu = plan.model_of(tier), plan.gpu(tier.gpu)
    ttft_slo, tpot_slo = plan.slo_for(tier)
    eff = tier.efficiency
    points = {
        name: operating_point(replica_model(plan, tier, bw, c), tpot_slo, ttft_slo)
        for name, bw, c in (
            ("expected", eff.bandwidth.expected, eff.compute.expected),
            ("optimistic", eff.bandwidth.high, eff.compute.high),
            ("pessimistic", eff.bandwidth.low, eff.compute.low),
        )
    }
    expected_model = replica_model(plan, tier, eff.bandwidth.expected, eff.compute.expected)
    wl, engine = expected_model.workload, expected_model.engine
    flops = _compute_flops(engine, wl, wl.uncached_prompt_mean)
    time_in_system = ttft_slo + wl.output_mean * tpot_slo
    concurrency = wl.peak_rps * time_in_system
    kvbpt = kv_bytes_per_token(model, tier.kv_cache_dtype)
    return TierSizing(
        tier=tier,
        workload=wl,
        ttft_slo_seconds=ttft_slo,
        tpot_slo_seconds=tpot_slo,
        weights_bytes=weights_bytes(model, tier.weight_dtype),
        kv_bytes_per_token=kvbpt,
        kv_budget_bytes=kv_budget_bytes(tier, model, gpu),
        prefill_tokens_per_second=wl.peak_rps * wl.prompt_mean,
        uncached_prefill_tokens_per_second=wl.peak_rps * wl.uncached_prompt_mean,
        decode_tokens_per_second=wl.peak_rps * wl.output_mean,
        compute_flops_per_second=flops,
        compute_flops_per_second_without_prefix_cache=_compute_flops(engine, wl, wl.prompt_mean),
        gpus_of_pure_compute=flops / (engine.peak_flops * engine.compute_efficiency),
        concurrency_at_peak=concurrency,
        time_in_system_seconds=time_in_system,
        kv_bytes_at_peak_mean=concurrency * (wl.context_mean - wl.cached_prompt_mean) * kvbpt,
        kv_bytes_at_peak_p95=concurrency * wl.context_p95 * kvbpt,
        expected=points["expected"],
        optimistic=points["optimistic"],
        pessimistic=points["pessimistic"],
        capacity_curve=tuple(capacity_curve(expected_model, (points["expected"].max_batch,))),
    )


def _compute_flops(engine: Engine, wl: TierWorkload, prefill_tokens_per_request: float) -> float:
    """Peak FLOP/s: (prefill tokens x (2N + attention) + decode tokens x (2N + attention)) per second."""
    prefill_pairs = prefill_tokens_per_request * (wl.prompt_mean - prefill_tokens_per_request / 2)
    decode_pairs = wl.output_mean * (wl.prompt_mean + wl.output_mean / 2)
    tokens = prefill_tokens_per_request + wl.output_mean
    per_request = tokens * engine.flops_per_token + (prefill_pairs + decode_pairs) * engine.attention_flops_per_pair
    return wl.peak_rps * per_request


def operating_point(
    replica: ReplicaModel, tpot_slo: float, ttft_slo: float, demand_rps: float | None = None
) -> OperatingPoint:
    """Batch at the SLO -> requests/s per replica -> replicas for throughput, then for TTFT.

    The demand defaults to the tier's planned peak; the advisor passes observed or forecast demand.
    """
    limit = max_batch_at_slo(replica, tpot_slo)
    # where no batch meets the TPOT SLO, the replicas that run the demand at batch 1: the least an engine
    # runs, still over the SLO (flagged infeasible), so the count and its cost say what the tier would take
    batch = max(limit.batch, 1)
    rps = replica.requests_per_second(batch)
    tpot = replica.tpot_step(batch)
    demand = replica.workload.peak_rps if demand_rps is None else demand_rps
    for_throughput = math.ceil(demand / rps - 1e-9) if demand > 0 and rps > 0 else (0 if demand <= 0 else 1)
    replicas, ttft, feasible = replicas_for_ttft(replica, batch, demand, ttft_slo, None if limit.batch else False)
    return OperatingPoint(
        bandwidth_efficiency=replica.engine.bandwidth_efficiency,
        compute_efficiency=replica.engine.compute_efficiency,
        max_batch=limit.batch,
        batch_constraint=limit.constraint,
        decode_step_seconds=tpot.decode.seconds,
        tpot_seconds=tpot.seconds,
        requests_per_second_per_replica=rps,
        replicas_for_throughput=for_throughput,
        replicas=replicas if demand > 0 else 0,
        ttft=ttft,
        ttft_feasible=feasible,
        tpot_p95_seconds=replica.tpot_p95(batch),
        chunk_step_seconds=tpot.chunk.seconds,
        chunk_share=tpot.chunk_share,
        ttft_floor_seconds=ttft_floor_seconds(replica, batch),
    )


def ttft_floor_seconds(replica: ReplicaModel, batch: float) -> float:
    """The TTFT p95 no replica count goes below: with replicas enough, no request queues for a slot or
    behind other prompts and the batch runs at 1, which is the estimate at zero demand (the step in flight
    and the p95 prompt's prefill). The one feasibility test: the SLO is met by some count iff it is >= this."""
    return ttft_p95(replica, 1, batch, 0.0).seconds


def replicas_for_ttft(
    replica: ReplicaModel, batch: float, demand: float, ttft_slo: float, feasible: bool | None = None
) -> tuple[int, TTFTEstimate, bool]:
    """The one replicas-for-demand search (sizing and advice both call it): the fewest replicas, at least
    the throughput count ceil(demand / requests per replica), whose TTFT p95 estimate at `demand` meets the
    SLO. TTFT falls as replicas are added, so doubling then bisection. Infeasible (the throughput count,
    flagged) when the SLO is below the TTFT floor, since then no count meets it. `feasible`, when the caller
    has already made that test (the advice's capacity table, thousands of searches per replay), skips it."""
    rps = replica.requests_per_second(batch) if batch else 0.0
    start = max(1, math.ceil(demand / rps - 1e-9)) if demand > 0 and rps > 0 else 1
    estimate = ttft_p95(replica, start, batch, demand)
    if feasible is None:
        feasible = batch > 0 and ttft_floor_seconds(replica, batch) <= ttft_slo
    if not feasible:
        return start, estimate, False
    if estimate.seconds <= ttft_slo:
        return start, estimate, True
    low, high = start, 2 * start  # the estimate misses at low
    while (found := ttft_p95(replica, high, batch, demand)).seconds > ttft_slo:
        if high >= MAX_REPLICAS:  # a guard: above the floor some finite count meets it, far below this
            return high, found, False
        low, high = high, 2 * high
    while high - low > 1:
        mid = (low + high) // 2
        at_mid = ttft_p95(replica, mid, batch, demand)
        if at_mid.seconds <= ttft_slo:
            high, found = mid, at_mid
        else:
            low = mid
    return high, found, True
