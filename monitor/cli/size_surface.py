"""The surface-decision part of `planwatch size`: each path's walk through the flowchart, then its breakeven."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.table import Table

from monitor.cli.tables import print_table
from monitor.sizing.decide import decision_to_dict, gpu_ranges, plan_decisions
from monitor.sizing.explain import format_range
from monitor.sizing.plan_sizing import PlanSizing

__all__ = ["gpu_ranges_to_dict", "print_gpu_ranges", "print_surfaces", "surfaces_to_dict"]


def surfaces_to_dict(sizing: PlanSizing) -> list[dict[str, Any]]:
    return [decision_to_dict(d, b) for d, b in plan_decisions(sizing.plan, sizing)]


def print_surfaces(sizing: PlanSizing, console: Console) -> None:
    for decision, breakeven in plan_decisions(sizing.plan, sizing):
        table = Table(title=f"surface for {decision.path}: {decision.label}", title_justify="left", expand=True)
        for col, ratio in (("", 0), ("Question", 5), ("Answer", 1), ("Reason", 9), ("Leads to", 3)):
            table.add_column(col, ratio=ratio, overflow="fold")
        for b in decision.branches:
            table.add_row(b.node, b.question, b.answer, b.reason, b.leads_to)
        print_table(console, table)
        if decision.mismatch:
            console.print(f"  [yellow]finding:[/] {decision.mismatch}", highlight=False)
        if breakeven is not None:
            console.print(f"  dedicated against serverless for {decision.path}:", highlight=False)
            for line in breakeven.lines():
                console.print(f"    {line}", highlight=False)


def gpu_ranges_to_dict(sizing: PlanSizing) -> list[dict[str, Any]]:
    return [asdict(r) for r in gpu_ranges(sizing)]


def print_gpu_ranges(sizing: PlanSizing, console: Console) -> None:
    for r in gpu_ranges(sizing):
        console.print(
            f"GPUs at peak for {r.tier}: {format_range(r.low, r.high)} (expected {r.expected}); to narrow it, "
            f"{r.benchmark}",
            highlight=False,
        )
