"""`planwatch size PLAN`: the seeds' hypothesis table per tier, then the fleet, or the same as JSON."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from monitor.cli.common import json_dumps, load_plan_or_exit, out_console
from monitor.cli.size_batch import batch_to_dict, print_batch_jobs
from monitor.cli.size_surface import gpu_ranges_to_dict, print_gpu_ranges, print_surfaces, surfaces_to_dict
from monitor.cli.tables import print_table
from monitor.sizing.capacity import CurvePoint
from monitor.sizing.explain import findings, format_range, hypothesis_rows
from monitor.sizing.export import sizing_to_dict
from monitor.sizing.measured import predict_load, verdict
from monitor.sizing.plan_sizing import PlanSizing, size_plan
from monitor.units import format_seconds

__all__ = ["register"]

VERIFY_LOADS = (1.0, 2.0, 3.0)  # the seed's measurement plan: TTFT and TPOT at 1x, 2x and 3x expected peak


def register(app: typer.Typer) -> None:
    app.command("size")(size)


def size(
    plan_path: Annotated[Path, typer.Argument(metavar="PLAN", help="Capacity plan YAML file.")],
    fmt: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    verify: Annotated[
        bool, typer.Option("--verify", help="Also run the planned replicas at 1x, 2x and 3x peak through fleetsim.")
    ] = False,
    minutes: Annotated[float, typer.Option("--minutes", min=1, help="Emulated minutes per load (--verify).")] = 20.0,
) -> None:
    """Size every tier of a plan: memory, decode step, batch, replicas, TTFT and cost, formulas shown."""
    if fmt not in ("table", "json"):
        raise typer.BadParameter(f"{fmt!r} is not one of table, json", param_hint="--format")
    sizing = size_plan(load_plan_or_exit(plan_path))
    if fmt == "json":
        out = {
            **sizing_to_dict(sizing),
            "surfaces": surfaces_to_dict(sizing),
            "batch_jobs": batch_to_dict(sizing),
            "gpu_ranges": gpu_ranges_to_dict(sizing),
        }
        if verify:
            out["verify"] = _verify(sizing, minutes, None)
        typer.echo(json_dumps(out))
    else:
        console = out_console()
        _print_tables(sizing, console)
        if verify:
            _verify(sizing, minutes, console)


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
        print_table(console, table)
        for finding in findings(sized):
            console.print(f"  [yellow]finding:[/] {finding}", highlight=False)
        _print_curve(sized.sizing.capacity_curve, sized.sizing.expected.max_batch, console)
    _print_fleet(sizing, console)
    print_gpu_ranges(sizing, console)
    print_batch_jobs(sizing, console)
    print_surfaces(sizing, console)


def _print_curve(curve: tuple[CurvePoint, ...], slo_batch: float, console: Console) -> None:
    table = Table(title="capacity curve per replica (expected efficiency)", title_justify="left")
    for col in ("batch", "decode step", "TPOT", "TPOT p95", "output tok/s", "req/s", "KV occupancy", "bound"):
        table.add_column(col, justify="right")
    for p in curve:
        style = "bold" if p.batch == slo_batch else ""
        table.add_row(
            f"{p.batch:g}",
            format_seconds(p.decode_step_seconds),
            format_seconds(p.tpot_seconds),
            format_seconds(p.tpot_p95_seconds),
            f"{p.output_tokens_per_second:,.0f}",
            f"{p.requests_per_second:.2f}",
            f"{p.kv_occupancy:.0%}",
            p.bound,
            style=style,
        )
    print_table(console, table)


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
            format_range(low, mid, high),
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
    print_table(console, table)
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


def _verify(sizing: PlanSizing, minutes: float, console: Console | None) -> list[dict[str, object]]:
    """The plan at 1x, 2x and 3x its peak through fleetsim's aggregate model, beside the formulas."""
    from fleetsim.verify import emulate_load

    plan, rows = sizing.plan, []
    for load in VERIFY_LOADS:
        for em in emulate_load(plan, load, minutes):
            tier = plan.tier(em.tier)
            sized = sizing.tier(em.tier).sizing
            if sized.standby:
                continue
            formula = predict_load(plan, tier, tier.replicas.planned, load * sized.workload.peak_rps)
            ttft_slo, tpot_slo = plan.slo_for(tier)
            rows.append(
                {
                    "tier": em.tier,
                    "load": load,
                    "replicas": tier.replicas.planned,
                    "emulated": {
                        "requests": em.requests,
                        "ttft_seconds": dict(zip(("p50", "p95", "p99"), em.ttft, strict=True)),
                        "tpot_seconds": dict(zip(("p50", "p95", "p99"), em.tpot, strict=True)),
                        "goodput": em.goodput,
                        "kv_occupancy": em.kv_occupancy,
                        "preemptions_per_minute": em.preemptions_per_minute,
                    },
                    "formulas": {
                        "ttft_p95_seconds": formula.ttft_p95_seconds,
                        "tpot_p95_seconds": formula.tpot_p95_seconds,
                        "batch": formula.batch,
                        "kv_occupancy": formula.kv_occupancy,
                        "saturated": formula.saturated,
                    },
                    "verdict": verdict(
                        formula,
                        ((em.ttft[1], em.ttft_p95_bucket), (em.tpot[1], em.tpot_p95_bucket)),
                        ttft_slo,
                        tpot_slo,
                    ),
                }
            )
    if console is not None:
        _print_verify(rows, minutes, console)
    return rows


def _print_verify(rows: list[dict[str, Any]], minutes: float, console: Console) -> None:
    table = Table(
        title=f"verify: planned replicas at 1x / 2x / 3x peak, {minutes:g} min through fleetsim's aggregate model",
        title_justify="left",
    )
    for col in ("tier", "load", "source", "TTFT p50/p95/p99", "TPOT p50/p95/p99", "goodput", "KV", "preempt/min"):
        table.add_column(col, justify="right")
    table.add_column("verdict", justify="left", overflow="fold")
    for r in rows:
        e, f = r["emulated"], r["formulas"]
        t, p = e["ttft_seconds"], e["tpot_seconds"]
        table.add_row(
            r["tier"],
            f"{r['load']:g}x",
            "emulator",
            " / ".join(format_seconds(t[k]) for k in ("p50", "p95", "p99")),
            " / ".join(format_seconds(p[k]) for k in ("p50", "p95", "p99")),
            f"{e['goodput']:.1%}",
            f"{e['kv_occupancy']:.0%}",
            f"{e['preemptions_per_minute']:.1f}",
            r["verdict"],
        )
        table.add_row(
            "",
            "",
            "formulas",
            f"p95 {format_seconds(f['ttft_p95_seconds'])}" if math.isfinite(f["ttft_p95_seconds"]) else "unbounded",
            f"p95 {format_seconds(f['tpot_p95_seconds'])}",
            "",
            f"{f['kv_occupancy']:.0%}",
            "",
            "saturated" if f["saturated"] else f"batch {f['batch']:.0f}",
        )
    print_table(console, table)
