"""`planwatch check`'s batch-job lines: each job's run against its deadline, and where its traffic lands."""

from __future__ import annotations

import math
from datetime import datetime
from zoneinfo import ZoneInfo

from rich.console import Console

from monitor.batch_progress import BatchProgress, batch_progress
from monitor.evaluation import Evaluation

__all__ = ["print_batch_jobs"]


def print_batch_jobs(ev: Evaluation, console: Console) -> None:
    observations = {s.tier: s.observation for s in ev.sections}
    zone = ZoneInfo(ev.plan.workload.business_hours.timezone)
    for p in batch_progress(ev.plan, observations, ev.evaluated_at):
        console.print(_line(p, zone), highlight=False)


def _line(p: BatchProgress, zone: ZoneInfo) -> str:
    def clock(t: float) -> str:
        return datetime.fromtimestamp(t, zone).strftime("%H:%M")

    head = f"batch job {p.job.name} (run from {clock(p.start)}, deadline {clock(p.deadline)}): "
    share, finish = p.share_done, p.projected_finish
    if share is None or p.done.value is None:
        return head + f"progress unknown ({p.done.reason})"
    text = f"{share:.0%} done ({p.done.value / 1e6:,.1f} M of {p.total_tokens / 1e6:,.1f} M tokens)"
    if p.rate.value is not None:
        text += f" at {p.rate.value:,.0f} tokens/s"
    if finish is not None and share < 1:
        text += ", not running" if math.isinf(finish) else f", projected finish {clock(finish)}"
        text += " (late)" if finish > p.deadline else " (on pace)"
    for tier, rate in p.on_tiers.items():
        text += f"; {rate:,.0f} tokens/s on online tier {tier}"
    return head + text
