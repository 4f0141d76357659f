"""`planwatch size PLAN`: the seeds' hypothesis table per tier, then the fleet, or the same as JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from monitor.cli.common import json_dumps, load_plan_or_exit, out_console
from monitor.sizing.capacity import CurvePoint
from monitor.sizing.explain import findings, hypothesis_rows
from monitor.sizing.export import sizing_to_dict
from monitor.sizing.plan_sizing import PlanSizing, size_plan
from monitor.units import format_seconds

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("size")(size)


def size(
    plan_path: Annotated[Path, typer.Argument(metavar="PLAN", help="Capacity plan YAML file.")],
    fmt: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
) -> None:
    """Size every tier of a plan: memory, decode step, batch, replicas, TTFT and cost, formulas shown."""
    if fmt not in ("table", "json"):
        raise typer.BadParameter(f"{fmt!r} is not one of table, json", param_hint="--format")
    sizing = size_plan(load_plan_or_exit(plan_path))
    if fmt == "json":
        typer.echo(json_dumps(sizing_to_dict(sizing)))
    else:
        _print_tables(sizing, out_console())


def _print_tables(sizing: PlanSizing, console: Console) -> None:
    plan = sizing.plan
    console.print(f"[bold]{plan.name}[/]: {plan.description.strip()}", highlight=False)
    for sized in sizing.tiers:
        t = sized.sizing.tier
        table = Table(title=f"tier {t.name}", title_justify="left", show_lines=True, expand=True)
        for col, ratio in (
            ("Decision", 2),
            ("Proposal", 4),
            ("Why (formula with numbers)", 7),
            ("Risk to test", 3),
        ):
            table.add_column(col, ratio=ratio, overflow="fold")
        for row in hypothesis_rows(plan, sized):
            table.add_row(row.decision, row.proposal, row.why, row.risk)
        console.print(table)
        for finding in findings(sized):
            console.print(f"  [yellow]finding:[/] {finding}", highlight=False)
        _print_curve(sized.sizing.capacity_curve, sized.sizing.expected.max_batch, console)
    _print_fleet(sizing, console)


def _print_curve(curve: tuple[CurvePoint, ...], slo_batch: int, console: Console) -> None:
    table = Table(title="capacity curve per replica (expected efficiency)", title_justify="left")
    for col in ("batch", "decode step", "TPOT", "output tok/s", "req/s", "KV occupancy", "bound"):
        table.add_column(col, justify="right")
    for p in curve:
        style = "bold" if p.batch == slo_batch else ""
        table.add_row(
            str(p.batch),
            format_seconds(p.decode_step_seconds),
            format_seconds(p.tpot_seconds),
            f"{p.output_tokens_per_second:,.0f}",
            f"{p.requests_per_second:.2f}",
            f"{p.kv_occupancy:.0%}",
            p.bound,
            style=style,
        )
    console.print(table)


def _print_fleet(sizing: PlanSizing, console: Console) -> None:
    f = sizing.fleet
    table = Table(title="fleet", title_justify="left")
    for col in (
        "tier",
        "replicas at peak (low-exp-high)",
        "planned",
        "GPUs at peak",
        "binding",
        "$/h at peak",
        "$/month",
        "$ per request",
    ):
        table.add_column(col, justify="right")
    for sized in sizing.tiers:
        s, c = sized.sizing, sized.cost
        low, mid, high = s.replicas_range
        binding = "standby" if s.standby else s.expected.binding_constraint
        per_request = f"{c.cost_per_request_usd:.5f}" if c.requests_per_month else "-"
        table.add_row(
            s.tier.name,
            f"{low}-{mid}-{high}",
            str(s.tier.replicas.planned),
            str(c.gpus_at_peak),
            binding,
            f"{c.cost_per_hour_usd_at_peak:,.2f}",
            f"{c.cost_per_month_usd:,.0f}",
            per_request,
        )
    table.add_row(
        "[bold]fleet",
        "",
        "",
        f"[bold]{f.gpus_at_peak}",
        "",
        f"[bold]{f.cost_per_hour_usd_at_peak:,.2f}",
        f"[bold]{f.cost_per_month_usd:,.0f}",
        f"{f.cost_per_user_request_usd:.5f} per user request",
    )
    console.print(table)
    console.print(
        f"monthly tokens {f.tokens_per_month / 1e9:,.1f} B; dedicated ${f.cost_per_million_tokens_usd:.2f} per 1M "
        f"tokens ({f.gpu_hours_per_day:,.0f} GPU-h/day)",
        highlight=False,
    )
    if f.serverless_cost_per_month_usd is not None and f.breakeven_tokens_per_month is not None:
        console.print(
            f"serverless at ${f.serverless_usd_per_million_tokens:.2f} per 1M: ${f.serverless_cost_per_month_usd:,.0f}"
            f"/month; breakeven at {f.breakeven_tokens_per_month / 1e9:,.1f} B tokens/month",
            highlight=False,
        )
