"""Cross-checks of a plan's batch jobs against the rest of the plan: models, tiers, GPUs and prices they name."""

from __future__ import annotations

from collections.abc import Iterator

from monitor.plan.batch import BatchJob
from monitor.plan.catalog import BUILTIN_GPUS
from monitor.plan.model import Plan, Tier

__all__ = ["batch_job_problems", "host_tier", "pool_gpu"]

_SURFACES = ("batch-api", "pool")


def host_tier(plan: Plan, job: BatchJob) -> Tier | None:
    """The online tier whose quiet hours could run the job: the one named, else the first serving its model."""
    if job.online_tier:
        return next((t for t in plan.tiers if t.name == job.online_tier), None)
    return next((t for t in plan.tiers if t.model == job.model and t.routing.share > 0), None)


def pool_gpu(plan: Plan, job: BatchJob) -> str:
    tier = host_tier(plan, job)
    return job.pool_gpu or (tier.gpu if tier else "")


def batch_job_problems(plan: Plan) -> Iterator[tuple[str, str]]:
    names = [t.name for t in plan.tiers]
    seen: set[str] = set()
    for i, job in enumerate(plan.batch_jobs):
        at = f"batch_jobs[{i}]"
        if job.name in seen:
            yield f"{at}.name", f"batch job name {job.name!r} is used twice"
        seen.add(job.name)
        if job.model not in plan.models:
            yield f"{at}.model", f"unknown model {job.model!r}; models: {', '.join(plan.models)}"
        if job.online_tier and job.online_tier not in names:
            yield f"{at}.online_tier", f"no tier named {job.online_tier!r}; tiers: {', '.join(names)}"
        elif host_tier(plan, job) is None:
            yield f"{at}.online_tier", f"no tier serves model {job.model!r}: name the tier it would share"
        if job.runs_on not in (*_SURFACES, *names):
            yield f"{at}.runs_on", f"{job.runs_on!r} is none of {', '.join((*_SURFACES, *names))}"
        gpu = pool_gpu(plan, job)
        if gpu and gpu not in plan.gpus and gpu not in BUILTIN_GPUS:
            yield f"{at}.pool_gpu", f"unknown GPU {gpu!r}"
        elif gpu and job.pool_gpu_hour_usd is None and gpu not in plan.costs.gpu_hour_usd:
            yield f"{at}.pool_gpu_hour_usd", f"no price for {gpu!r}: set pool_gpu_hour_usd or costs.gpu_hour_usd"
