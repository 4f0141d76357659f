"""The batch-job part of `planwatch size`: each job priced three ways, and whether it puts the online SLO at risk."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from monitor.cli.tables import print_table
from monitor.sizing.batch import BatchOption, BatchSizing, size_batch_jobs
from monitor.sizing.plan_sizing import PlanSizing

__all__ = ["batch_to_dict", "print_batch_jobs"]


def batch_to_dict(sizing: PlanSizing) -> list[dict[str, Any]]:
    return [_job(b) for b in size_batch_jobs(sizing.plan, sizing)]


def _job(b: BatchSizing) -> dict[str, Any]:
    cheapest = b.cheapest
    return {
        "name": b.job.name,
        "online_tier": b.host,
        "item_prompt_tokens": b.item_prompt_tokens,
        "item_output_tokens": b.item_output_tokens,
        "cached_share": b.cached_share,
        "offline_batch": b.offline_batch,
        "items_per_second_per_replica": b.items_per_second_per_replica,
        "replica_hours_per_run": b.replica_hours_per_run,
        "options": [_option(b, o) for o in b.options],
        "cheapest": cheapest.name if cheapest else None,
        "online_slo_at_risk": b.online_slo_at_risk,
        "risks": list(b.risks),
    }


def _option(b: BatchSizing, o: BatchOption) -> dict[str, Any]:
    return {
        "name": o.name,
        "usd_per_run": o.usd_per_run,
        "usd_per_month": b.usd_per_month(o),
        "feasible": o.feasible,
        "formula": list(o.formula),
        "note": o.note or None,
    }


def print_batch_jobs(sizing: PlanSizing, console: Console) -> None:
    for b in size_batch_jobs(sizing.plan, sizing):
        j = b.job
        console.print(
            f"[bold]batch job {j.name}[/]: {j.items:,} items of {b.item_prompt_tokens:,.0f} input "
            f"({b.cached_share:.0%} cached instruction block) + {b.item_output_tokens:,.0f} output tokens, "
            f"{j.runs_per_day:g} run(s)/day, window {j.window.start}-{j.window.end}; one replica does "
            f"{b.items_per_second_per_replica:.2f} items/s at batch {b.offline_batch} ({b.offline_batch_constraint}"
            f" binds) = {b.replica_hours_per_run:,.2f} replica-hours per run",
            highlight=False,
        )
        table = Table(title_justify="left", expand=True, show_lines=True)
        for col, ratio in (("Where", 3), ("$ per run", 1), ("$ per month", 1), ("Formula", 10)):
            table.add_column(col, ratio=ratio, overflow="fold")
        for o in b.options:
            usd, month = o.usd_per_run, b.usd_per_month(o)
            table.add_row(
                o.name + ("" if o.feasible else " (not feasible)"),
                "-" if usd is None else f"{usd:,.2f}",
                "-" if month is None else f"{month:,.0f}",
                "\n".join([*o.formula, *([o.note] if o.note else [])]),
            )
        print_table(console, table)
        cheapest = b.cheapest
        console.print(f"  cheapest: {cheapest.name if cheapest else 'none feasible'}", highlight=False)
        verdict = "at risk" if b.online_slo_at_risk else "not at risk"
        console.print(f"  running it on {b.host}: the online SLO is {verdict}", highlight=False)
        for risk in b.risks:
            console.print(f"    [yellow]risk:[/] {risk}", highlight=False)
