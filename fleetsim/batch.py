"""A batch-job workload: a plan's nightly job run through its own engines, as vLLM series with timestamps.

Each run starts when the job's window opens (plan timezone) and processes items at `replicas x items/s per
replica` until every item is done or the window closes. The true items/s is the sizing model's offline
throughput (monitor.sizing.batch) times `speed`, so production can disagree with the plan (speed 0.5: the
run takes twice as long as sized). The engines carry the job's selector labels and a `tier` label: the job's
own pool (`batch-<job>`) by default, or an online tier's name when the job's traffic lands there.

Written as OpenMetrics text (fleetsim.tsdb) for `promtool tsdb create-blocks-from openmetrics`, or for the
test harness's backfilled Prometheus: counters vllm:prompt_tokens, vllm:generation_tokens,
vllm:request_success (finished_reason stop) and the gauge vllm:num_requests_running, per replica.
"""

from __future__ import annotations

import io
import math
from collections.abc import Iterator
from dataclasses import dataclass

from fleetsim.fleet import NAMESPACE
from fleetsim.tsdb import OpenMetricsWriter
from monitor.plan.batch import BatchJob, current_run
from monitor.plan.model import Plan
from monitor.sizing.batch import size_batch_job
from monitor.sizing.plan_sizing import size_plan

__all__ = ["BatchRun", "batch_history", "batch_run"]


@dataclass(frozen=True)
class BatchRun:
    job: BatchJob
    timezone: str
    replicas: int
    items_per_second_per_replica: float
    tier_label: str
    model_name: str

    def items_done(self, t: float) -> float:
        """Items the latest run (the window that opened at or before `t`) had finished by `t`."""
        start, _, end = current_run(self.job, self.timezone, t)
        rate = self.replicas * self.items_per_second_per_replica
        return min(float(self.job.items), rate * (min(t, end) - start))


def batch_run(plan: Plan, job_name: str, speed: float = 1.0, tier_label: str = "") -> BatchRun:
    """The job on the pool the sizing holds for it: ceil(replica-hours / (hours to deadline - cold start))."""
    job = next((j for j in plan.batch_jobs if j.name == job_name), None)
    if job is None:
        known = ", ".join(j.name for j in plan.batch_jobs) or "none"
        raise ValueError(f"no batch job {job_name!r} in the plan; batch jobs: {known}")
    sized = size_batch_job(plan, size_plan(plan), job)
    cold = plan.tier(sized.host).cold_start_seconds / 3600
    replicas = max(1, math.ceil(sized.replica_hours_per_run / max(job.window.hours_to_deadline - cold, 1e-9)))
    model = plan.models[job.model]
    return BatchRun(job, plan.workload.business_hours.timezone, replicas,
                    sized.items_per_second_per_replica * speed, tier_label or f"batch-{job.name}",
                    model.served_name or job.model)  # fmt: skip


def _times(start: float, end: float, step: float) -> Iterator[float]:
    for i in range(round((end - start) / step) + 1):
        yield start + i * step


def batch_history(run: BatchRun, start: float, end: float, step: float = 60.0, instance: str = "") -> str:
    """OpenMetrics text of the run's engines over [start, end]. The counters carry what earlier runs did and grow
    with each run's items (a counter never drops), starting at what the run in progress at `start` had done."""
    job = run.job
    prompt, output = job.input_tokens_per_run / job.items, job.output_tokens_per_run / job.items
    stamps = list(_times(start, end, step))
    cumulative = _cumulative(run, stamps)
    out = io.StringIO()
    with OpenMetricsWriter(out) as writer:
        for family, per_item in (
            ("vllm:prompt_tokens", prompt),
            ("vllm:generation_tokens", output),
            ("vllm:request_success", 1.0),
        ):
            writer.family(family, "counter")
            for r in range(run.replicas):
                extra = {"finished_reason": "stop"} if family == "vllm:request_success" else {}
                series = writer.series(f"{family}_total", _labels(run, r, instance) | extra)
                for t, items in zip(stamps, cumulative, strict=True):
                    series.add(t, items * per_item / run.replicas)
        writer.family("vllm:num_requests_running", "gauge")
        for r in range(run.replicas):
            series = writer.series("vllm:num_requests_running", _labels(run, r, instance))
            for t in stamps:
                series.add(t, 1.0 if run.items_done(t) < job.items and _in_window(run, t) else 0.0)
    return out.getvalue()


def _cumulative(run: BatchRun, stamps: list[float]) -> list[float]:
    """Items done since the history began: each run's items added when its window comes round again."""
    total, last_start, carried, out = 0.0, None, 0.0, []
    for t in stamps:
        start, _, _ = current_run(run.job, run.timezone, t)
        if last_start is not None and start != last_start:
            carried = total
        last_start = start
        total = carried + run.items_done(t)
        out.append(total)
    return out


def _in_window(run: BatchRun, t: float) -> bool:
    start, _, end = current_run(run.job, run.timezone, t)
    return start <= t < end


def _labels(run: BatchRun, replica: int, instance: str) -> dict[str, str]:
    pod = f"{run.job.name}-{replica}"
    return {"job": "vllm", "instance": instance or f"{pod}:8000", "tier": run.tier_label, "pod": pod,
            "namespace": NAMESPACE, "model_name": run.model_name, **run.job.label_selector}  # fmt: skip
