"""`planwatch calibrate PLAN --benchmark FILE...`: fit a tier's efficiencies and per-step overhead to
serving benchmark results (vllm bench serve, GuideLLM, AIPerf/genai-perf), write the calibrated plan and
print the fit's residuals. Drift then compares production with the calibrated model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from rich.console import Console
from rich.table import Table

from monitor.calibrate.fit import Fit, calibrated_efficiency, fit_runs
from monitor.calibrate.results import BenchmarkRun, ResultFileError, read_results
from monitor.cli.common import fail, load_plan_or_exit, out_console
from monitor.cli.tables import print_table
from monitor.plan.model import Efficiency

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate)


def calibrate(
    plan_path: Annotated[Path, typer.Argument(metavar="PLAN", help="Capacity plan YAML file.")],
    benchmark: Annotated[
        list[Path], typer.Option("--benchmark", help="A vllm bench serve, GuideLLM or AIPerf result file (repeat).")
    ],
    tier_name: Annotated[str | None, typer.Option("--tier", help="The tier benchmarked (default: the only).")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Where to write the calibrated plan.")] = None,
) -> None:
    """Fit a tier's bandwidth and GEMM efficiencies and its per-step overhead to benchmark results."""
    plan = load_plan_or_exit(plan_path)
    routed = [t.name for t in plan.tiers]
    if tier_name is None and len(routed) != 1:
        fail(f"{plan_path}: the plan has tiers {', '.join(routed)}: say which was benchmarked with --tier")
    name = tier_name or routed[0]
    if name not in routed:
        fail(f"{plan_path}: no tier {name!r} (tiers: {', '.join(routed)})")
    runs: list[BenchmarkRun] = []
    for path in benchmark:
        try:
            runs.extend(read_results(path))
        except ResultFileError as exc:
            fail(str(exc))
    if not runs:
        fail("no benchmark runs in the files given")
    tier = plan.tier(name)
    fit = fit_runs(plan, tier, runs)
    target = out or plan_path.with_name(f"{plan_path.stem}.calibrated.yaml")
    target.write_text(_calibrated_yaml(plan_path, name, calibrated_efficiency(tier, fit)))
    _print(fit, tier.efficiency, target, out_console())


def _calibrated_yaml(plan_path: Path, tier: str, eff: Efficiency) -> str:
    """The plan as written with one tier's efficiency block replaced (comments are not kept)."""
    data: dict[str, Any] = yaml.safe_load(plan_path.read_text())
    block = {
        "bandwidth": eff.bandwidth.model_dump(),
        "compute": eff.compute.model_dump(),
        "attention": eff.attention,
        "link": eff.link,
        "step_overhead": f"{eff.step_overhead_seconds * 1e3:g}ms",
    }
    for t in data["tiers"]:
        if t["name"] == tier:
            t["efficiency"] = block
    header = f"# Calibrated by `planwatch calibrate` from benchmark results: tier {tier}'s efficiency block.\n"
    return header + yaml.safe_dump(data, sort_keys=False)


def _print(fit: Fit, before: Efficiency, target: Path, console: Console) -> None:
    console.print(
        f"tier {fit.tier}: bandwidth {before.bandwidth.expected:g} -> {fit.bandwidth:.3f}, GEMM compute "
        f"{before.compute.expected:g} -> {fit.compute:.3f}, step overhead "
        f"{before.step_overhead_seconds * 1e3:g} -> {fit.step_overhead_seconds * 1e3:.2f} ms",
        highlight=False,
    )
    table = Table(title="residuals (model / measured - 1)", title_justify="left")
    for col in ("run", "tool", "prompt/output", "concurrency", "metric", "measured", "before", "after"):
        # the run (its file's name: the user gave the path) is the key column, whole; the rest fold to fit
        table.add_column(col, justify="left" if col == "run" else "right", no_wrap=col == "run", overflow="fold")
    for r in fit.residuals:
        run = r.run
        unit = 1e3 if r.metric != "throughput" else 1.0
        table.add_row(
            Path(run.source).name,
            run.tool,
            f"{run.prompt_tokens:,.0f}/{run.output_tokens:,.0f}",
            "saturated" if run.concurrency is None else f"{run.concurrency:g}",
            r.metric,
            f"{r.measured * unit:,.2f} {'ms' if unit > 1 else 'tok/s'}",
            f"{r.error_before:+.1%}",
            f"{r.error_after:+.1%}",
        )
    print_table(console, table)
    console.print(
        f"median |error| {fit.median_abs_error(after=False):.1%} with the plan's efficiencies, "
        f"{fit.median_abs_error():.1%} calibrated; wrote {target}",
        highlight=False,
    )
