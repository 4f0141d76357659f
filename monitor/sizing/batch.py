"""A batch job sized apart from the online path and priced three ways, formulas visible.

One item of the job is a request of input/items prompt tokens (the instruction block cached after the first
item on a replica) and output/items output tokens. A replica's throughput on it comes from the same roofline
and capacity model as the online tiers (`ReplicaModel.requests_per_second`), at two batches:

    offline batch    the largest batch whose KV fits and whose prefill fits the chunk budget (no TPOT limit)
    shared batch     the largest batch that also keeps the online tier's TPOT SLO (it shares the replica)

and is priced

    quiet hours      on the online tier's off-peak floor, in the capacity it leaves below 80% of saturation:
                     off-peak rate = (average x 24 - peak x peak hours) / (24 - peak hours); $0 while it fits
                     (those GPU-hours are paid for already), extra replicas for the window when it does not
    pool             replicas = ceil(replica-hours / hours to deadline); GPU-hours = (replica-hours +
                     replicas x cold start) x TP; x the pool's (spot) price per GPU-hour
    batch API        (input + output tokens) / 1e6 x the batch price (cached-prefix discounts not counted)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from monitor.plan.batch import BatchJob, clock_hours
from monitor.plan.batch_checks import host_tier, pool_gpu
from monitor.plan.model import BusinessHours, Plan, Tier
from monitor.sizing.capacity import ReplicaModel, max_batch_at_slo
from monitor.sizing.plan_sizing import PlanSizing
from monitor.sizing.tier import replica_model
from monitor.sizing.workload import TierWorkload

__all__ = ["BatchOption", "BatchSizing", "size_batch_job", "size_batch_jobs"]

# The qualification seed's Step 6: keep replicas below roughly 80% of saturation so queueing stays bounded.
HEADROOM = 0.8


@dataclass(frozen=True)
class BatchOption:
    name: str
    usd_per_run: float | None
    feasible: bool
    formula: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True)
class BatchSizing:
    job: BatchJob
    host: str
    item_prompt_tokens: float
    item_output_tokens: float
    cached_share: float
    offline_batch: float
    offline_batch_constraint: str
    items_per_second_per_replica: float
    replica_hours_per_run: float
    options: tuple[BatchOption, ...]
    online_slo_at_risk: bool
    risks: tuple[str, ...]

    @property
    def cheapest(self) -> BatchOption | None:
        priced = [o for o in self.options if o.feasible and o.usd_per_run is not None]
        return min(priced, key=lambda o: o.usd_per_run or 0.0) if priced else None

    def usd_per_month(self, option: BatchOption) -> float | None:
        return None if option.usd_per_run is None else option.usd_per_run * self.job.runs_per_day * 30


def size_batch_jobs(plan: Plan, sizing: PlanSizing) -> list[BatchSizing]:
    return [size_batch_job(plan, sizing, job) for job in plan.batch_jobs]


def job_workload(job: BatchJob) -> TierWorkload:
    prompt, output = job.input_tokens_per_run / job.items, job.output_tokens_per_run / job.items
    return TierWorkload(0.0, 0.0, 0.0, prompt, prompt, prompt, output, output, output,
                        job.shared_prefix_tokens / prompt)  # fmt: skip


def _replica(plan: Plan, tier: Tier, job: BatchJob, gpu: str) -> ReplicaModel:
    t = tier.model_copy(update={"model": job.model, "gpu": gpu})
    eff = t.efficiency
    return replace(replica_model(plan, t, eff.bandwidth.expected, eff.compute.expected), workload=job_workload(job))


def size_batch_job(plan: Plan, sizing: PlanSizing, job: BatchJob) -> BatchSizing:
    tier = host_tier(plan, job)
    if tier is None:  # refused at load; kept total for plans built in code
        raise ValueError(f"batch job {job.name}: no online tier serves model {job.model}")
    pool = _replica(plan, tier, job, pool_gpu(plan, job))
    limit = max_batch_at_slo(pool, math.inf)
    per_second = pool.requests_per_second(limit.batch) if limit.batch else 0.0
    replica_hours = job.items / per_second / 3600 if per_second else math.inf
    quiet, risks = _quiet_hours(plan, sizing, tier, job)
    options = (quiet, _pool(plan, tier, job, replica_hours), _batch_api(job))
    wl = pool.workload
    return BatchSizing(
        job=job,
        host=tier.name,
        item_prompt_tokens=wl.prompt_mean,
        item_output_tokens=wl.output_mean,
        cached_share=wl.prefix_hit_rate,
        offline_batch=limit.batch,
        offline_batch_constraint=limit.constraint,
        items_per_second_per_replica=per_second,
        replica_hours_per_run=replica_hours,
        options=options,
        online_slo_at_risk=bool(risks),
        risks=tuple(risks),
    )


@dataclass(frozen=True)
class _Sharing:
    """The job on the online tier's off-peak floor, at the batch that keeps the tier's TPOT SLO."""

    tier: Tier
    average_rps: float
    peak_rps: float
    peak_hours: float
    off_peak_rps: float
    floor: int
    rps_per_replica: float
    used: float
    hours: float
    idle_replica_hours: float
    batch: float
    items_per_second: float
    need: float
    extra: int | None
    gpu_hour_usd: float
    item_tokens: float

    @property
    def usd(self) -> float | None:
        return None if self.extra is None else self.extra * self.tier.tensor_parallel * self.gpu_hour_usd * self.hours


def _sharing(plan: Plan, sizing: PlanSizing, tier: Tier, job: BatchJob) -> _Sharing:
    sized = sizing.tier(tier.name)
    wl, cost, ph = sized.sizing.workload, sized.cost, plan.workload.arrival.peak_hours_per_day
    off_peak = max(0.0, (wl.average_rps * 24 - wl.peak_rps * ph) / (24 - ph))
    floor, rps = cost.replicas_at_average, sized.sizing.expected.requests_per_second_per_replica
    used = off_peak / (floor * rps) if floor and rps else math.inf
    hours = job.window.hours_to_deadline
    idle = max(0.0, HEADROOM - used) * floor * hours
    shared = _replica(plan, tier, job, tier.gpu)
    batch = max_batch_at_slo(shared, plan.slo_for(tier)[1]).batch
    per_second = shared.requests_per_second(batch) if batch else 0.0
    need = job.items / per_second / 3600 if per_second else math.inf
    extra = math.ceil(max(0.0, need - idle) / hours - 1e-9) if math.isfinite(need) else None
    item_tokens = shared.workload.prompt_mean + shared.workload.output_mean
    return _Sharing(tier, wl.average_rps, wl.peak_rps, ph, off_peak, floor, rps, used, hours, idle, batch,
                    per_second, need, extra, cost.gpu_hour_usd, item_tokens)  # fmt: skip


def _quiet_hours(plan: Plan, sizing: PlanSizing, tier: Tier, job: BatchJob) -> tuple[BatchOption, list[str]]:
    name = f"online tier {tier.name} in its quiet hours"
    if tier.model != job.model:
        return BatchOption(name, None, False, (), f"{tier.name} serves {tier.model}, not {job.model}"), []
    sh = _sharing(plan, sizing, tier, job)
    note = "paid for already: the floor is held for online traffic" if sh.extra == 0 else ""
    return BatchOption(name, sh.usd, sh.extra is not None, _quiet_formula(sh, job), note), _risks(plan, sh, job)


def _quiet_formula(sh: _Sharing, job: BatchJob) -> tuple[str, ...]:
    return (
        f"off-peak rate = ({sh.average_rps:.2f} x 24 - {sh.peak_rps:.2f} x {sh.peak_hours:g}) / "
        f"{24 - sh.peak_hours:g} = {sh.off_peak_rps:.2f} req/s on a floor of {sh.floor} replicas x "
        f"{sh.rps_per_replica:.2f} req/s = {sh.used:.0%} used",
        f"idle below {HEADROOM:.0%} = ({HEADROOM:g} - {sh.used:.2f}) x {sh.floor} x {sh.hours:g} h = "
        f"{sh.idle_replica_hours:,.1f} replica-hours before the deadline",
        f"needed at the online TPOT SLO (batch {sh.batch:g}) = {job.items:,} items / {sh.items_per_second:.3f} "
        f"items/s = {sh.need:,.1f} replica-hours",
        f"extra = ceil(max(0, {sh.need:,.1f} - {sh.idle_replica_hours:,.1f}) / {sh.hours:g} h) = {sh.extra} "
        f"replicas x {sh.tier.tensor_parallel} GPUs x ${sh.gpu_hour_usd:.2f} x {sh.hours:g} h = "
        f"${sh.usd or 0:,.0f} per run",
    )


def _risks(plan: Plan, sh: _Sharing, job: BatchJob) -> list[str]:
    """Why running the job on the online tier would put the online SLO at risk (none: it would not)."""
    name, risks = sh.tier.name, []
    if sh.extra is None:
        risks.append(f"no batch of this job's items keeps {name}'s TPOT SLO: it cannot share the tier")
    elif sh.extra > 0:
        risks.append(
            f"the job needs {sh.need:,.1f} replica-hours, the quiet hours leave {sh.idle_replica_hours:,.1f}: it "
            f"would run {name} above {HEADROOM:.0%} of saturation unless {sh.extra} replicas are added"
        )
    if _overlaps(plan.workload.business_hours, job.window.start, sh.hours):
        risks.append(f"the window {job.window.start}-{job.window.end} overlaps business hours, when the floor "
                     "assumption does not hold")  # fmt: skip
    limit = sh.tier.max_model_len
    if limit and sh.item_tokens > limit:
        risks.append(f"an item's {sh.item_tokens:,.0f} tokens exceed {name}'s max_model_len {limit:,}")
    return risks


def _pool(plan: Plan, tier: Tier, job: BatchJob, replica_hours: float) -> BatchOption:
    gpu = pool_gpu(plan, job)
    price = job.pool_gpu_hour_usd or plan.costs.gpu_hour_usd[gpu]
    name = f"dedicated or spot pool of {gpu}"
    if not math.isfinite(replica_hours):
        return BatchOption(name, None, False, (), "an item does not fit one replica's KV budget")
    hours, tp, cold = job.window.hours_to_deadline, tier.tensor_parallel, tier.cold_start_seconds / 3600
    replicas = max(1, math.ceil(replica_hours / max(hours - cold, 1e-9) - 1e-9))
    gpu_hours = (replica_hours + replicas * cold) * tp
    formula = (
        f"replicas = ceil({replica_hours:,.2f} replica-hours / ({hours:g} h - {cold * 60:g} min cold start)) = "
        f"{replicas} of TP{tp}",
        f"GPU-hours = ({replica_hours:,.2f} + {replicas} x {cold:.2f} h) x {tp} = {gpu_hours:,.1f} x ${price:.2f} = "
        f"${gpu_hours * price:,.0f} per run",
    )
    return BatchOption(name, gpu_hours * price, True, formula)


def _batch_api(job: BatchJob) -> BatchOption:
    tokens = job.input_tokens_per_run + job.output_tokens_per_run
    usd = tokens / 1e6 * job.batch_usd_per_million_tokens
    formula = (
        f"({job.input_tokens_per_run / 1e6:,.1f} M input + {job.output_tokens_per_run / 1e6:,.1f} M output) x "
        f"${job.batch_usd_per_million_tokens:.2f} per 1M = ${usd:,.0f} per run",
    )
    note = "" if job.window.hours_to_deadline >= 24 else (
        f"the API's turnaround (often up to 24 h) must fit the {job.window.hours_to_deadline:g} h to the deadline"
    )  # fmt: skip
    return BatchOption("batch API", usd, True, formula, note)


def _overlaps(business: BusinessHours, start: str, hours: float) -> bool:
    """Does [start, start + hours) touch the business day's clock hours (on any day: nightly jobs run daily)?"""
    steps = max(1, math.ceil(hours * 4))
    clocks = ((clock_hours(start) + i * hours / steps) % 24 for i in range(steps))
    return any(business.start_hour <= c < business.end_hour for c in clocks)
