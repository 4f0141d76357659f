"""Batch jobs held against their plan: will this run finish by its deadline, and is its traffic landing on an
online tier it was not given? (qualification seed, Key Takeaways: size and run offline work apart)

Progress is the tokens the job's own engines processed since its window began, against the run's input plus
output tokens; the finish is projected at the current rate. Unknown progress or rate is no finding.
"""

from __future__ import annotations

import math

from monitor.batch_progress import batch_key, batch_progress
from monitor.plan.batch import BatchJob, current_run
from monitor.plan.model import FLEET
from monitor.triggers.model import Evidence, TriggerInputs
from monitor.units import format_seconds

__all__ = ["batch_misses_deadline", "batch_on_online_tier"]

# A run that has processed nothing this long after its window opened counts as stalled.
_STALLED_AFTER_SECONDS = 600.0


def batch_misses_deadline(inputs: TriggerInputs, tier: str) -> Evidence | None:
    if tier != FLEET:
        return None
    late = [e for e in (_late(inputs, job) for job in inputs.plan.batch_jobs) if e is not None]
    if not late:
        return None
    return Evidence(
        "; ".join(e.summary for e in late),
        observed={k: v for e in late for k, v in e.observed.items()},
        plan={k: v for e in late for k, v in e.plan.items()},
        queries=tuple(q for e in late for q in e.queries),
    )


def _late(inputs: TriggerInputs, job: BatchJob) -> Evidence | None:
    observations = {name: t.observation for name, t in inputs.tiers.items()}
    (p,) = [p for p in batch_progress(inputs.plan, observations, inputs.now) if p.job.name == job.name]
    finish, done, left = p.projected_finish, p.done.value, p.remaining
    if finish is None or done is None or left is None or left == 0:
        return None
    now, deadline = inputs.now, p.deadline
    if now >= deadline:
        verdict = f"missed its deadline {job.window.deadline or job.window.end}"
    elif math.isinf(finish):
        if now - p.start < _STALLED_AFTER_SECONDS:
            return None
        verdict = "is stalled (no tokens processed in the last 5 minutes)"
    elif finish <= deadline:
        return None
    else:
        verdict = f"will miss its deadline by {format_seconds(finish - deadline)} at {p.rate.value:,.0f} tokens/s"
    needed = left / (deadline - now) if deadline > now else math.inf
    return Evidence(
        f"batch job {job.name} {verdict}: {done / p.total_tokens:.0%} done ({done / 1e6:,.1f} M of "
        f"{p.total_tokens / 1e6:,.1f} M tokens), {format_seconds(max(0.0, deadline - now))} to the deadline, "
        f"needing {needed:,.0f} tokens/s",
        observed={f"{job.name}:tokens_done": done, f"{job.name}:tokens_per_second": p.rate.value},
        plan={f"{job.name}:tokens_per_run": p.total_tokens, f"{job.name}:deadline": deadline},
        queries=tuple(m.query for m in (p.done, p.rate) if m.query),
    )


def batch_on_online_tier(inputs: TriggerInputs, tier: str) -> Evidence | None:
    if tier == FLEET:
        return None
    obs = inputs.tiers[tier].observation
    found = []
    for job in inputs.plan.batch_jobs:
        rate = obs.extra.get(batch_key(job.name, "rate"))
        if rate is None or rate.value is None or rate.value <= 0 or _allowed(inputs, job, tier):
            continue
        where = "outside its window" if job.runs_on == tier else f"though the plan runs it on {job.runs_on}"
        found.append((job.name, rate.value, rate.query, where))
    if not found:
        return None
    return Evidence(
        "; ".join(
            f"batch job {name} sends {value:,.0f} tokens/s to online tier {tier} {where}"
            for name, value, _, where in found
        ),
        observed={f"{name}:tokens_per_second": value for name, value, _, _ in found},
        plan={},
        queries=tuple(q for _, _, q, _ in found if q),
    )


def _allowed(inputs: TriggerInputs, job: BatchJob, tier: str) -> bool:
    """Only a job the plan runs on this tier, inside its window."""
    start, _, end = current_run(job, inputs.plan.workload.business_hours.timezone, inputs.now)
    return job.runs_on == tier and start <= inputs.now < end
