"""`fleetsim batch PLAN --job NAME --out FILE`: a batch job's engines over past hours, as OpenMetrics text.

    fleetsim batch PLAN --job NAME --out FILE [--hours 24] [--end now|ISO|UNIX] [--step 60]
                   [--speed 1.0] [--on-tier TIER]

Import it with `promtool tsdb create-blocks-from openmetrics FILE DIR` next to a `fleetsim backfill` of the
same plan. `--speed 0.5` runs the job at half the sized throughput (it misses its deadline); `--on-tier copilot`
puts its engines in an online tier (batch traffic landing there). Bad input: one line on stderr, status 2.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from fleetsim.batch import batch_history, batch_run
from fleetsim.scenarios import ScenarioError, parse_time
from monitor.plan.load import PlanError, load_plan

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("batch")(batch)


def batch(
    plan_path: Annotated[Path, typer.Argument(metavar="PLAN", help="Capacity plan YAML file with batch_jobs.")],
    job: Annotated[str, typer.Option("--job", help="The batch job's name in the plan.")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the OpenMetrics text.")],
    hours: Annotated[float, typer.Option("--hours", min=0.1, help="History length.")] = 24.0,
    end: Annotated[str, typer.Option("--end", help="now, ISO 8601 or Unix seconds.")] = "now",
    step: Annotated[float, typer.Option("--step", min=1.0, help="Seconds between samples.")] = 60.0,
    speed: Annotated[float, typer.Option("--speed", min=0.01, help="True throughput over the sized one.")] = 1.0,
    on_tier: Annotated[str, typer.Option("--on-tier", help="Put the job's engines in this tier.")] = "",
) -> None:
    """Write a batch job's history (tokens, requests, running) from its window's opening until done."""
    try:
        plan = load_plan(plan_path)
        end_unix = time.time() if end == "now" else parse_time(end, "--end")
        run = batch_run(plan, job, speed=speed, tier_label=on_tier)
    except (PlanError, ScenarioError, ValueError) as exc:
        typer.echo(f"fleetsim batch: {exc}", err=True)
        raise typer.Exit(2) from None
    try:
        out.write_text(batch_history(run, end_unix - hours * 3600, end_unix, step), encoding="utf-8")
    except OSError as exc:
        typer.echo(f"fleetsim batch: cannot write {out}: {exc.strerror or exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"wrote {out}: job {job}, {run.replicas} replica(s) on tier {run.tier_label}")
