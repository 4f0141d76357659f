"""`planwatch replay PLAN --trace FILE`: what this plan and each scaling policy would have done with a trace.

Exit status 0 with the figures; 2 for bad input (plan, trace, options), with the file and line at fault.
`--trace fleetsim` replays the plan's own weekly profile (with `--scenarios`, fleetsim's) for `--days`.
`--config` (and PLANWATCH_* variables) is the service configuration the planwatch policy runs with, read as
`planwatch serve` reads it: the advice's margins and cooldown, the forecast's windows and cadence.

This module declares the options; the replay (fleetsim's physics, the forecaster, matplotlib: seconds to import)
is imported by the command's body, so `replay --help` answers at once.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated
from zoneinfo import ZoneInfo

import typer
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from fleetsim.scenarios import ScenarioError, parse_scenarios
from monitor.cli.common import err_console, fail, json_dumps, load_plan_or_exit, option_seconds, out_console
from monitor.cli.tables import print_table
from monitor.plan.model import Plan
from monitor.replay.names import POLICIES

if TYPE_CHECKING:
    from monitor.replay.demand import Demand
    from monitor.replay.run import Replay, ReplayConfig
    from monitor.replay.summary import PolicySummary

__all__ = ["register"]

_FORMATS = ("table", "json", "html")


def register(app: typer.Typer) -> None:
    app.command("replay")(replay)


def replay(
    plan_path: Annotated[Path, typer.Argument(metavar="PLAN", help="Capacity plan YAML file.")],
    trace: Annotated[str, typer.Option("--trace", help="Trace file (CSV or JSONL), or 'fleetsim'.")],
    policy: Annotated[str, typer.Option("--policy", help="Comma-separated policies.")] = ",".join(POLICIES),
    scale_to_peak: Annotated[bool, typer.Option("--scale-to-peak", help="Scale the trace to the plan's peak.")] = False,
    start: Annotated[str | None, typer.Option("--start", help="Start (ISO 8601; no zone: the plan's).")] = None,
    days: Annotated[float | None, typer.Option("--days", help="Replay at most this many days.")] = None,
    interval: Annotated[str, typer.Option("--decision-interval", help="How often policies decide.")] = "60s",
    scenarios: Annotated[
        str | None, typer.Option("--scenarios", help="fleetsim scenarios (slow-cold-start,...).")
    ] = None,
    plan_lengths: Annotated[bool, typer.Option("--plan-lengths", help="Route by the plan's prompt lengths.")] = False,
    fmt: Annotated[str, typer.Option("--format", help="table, json or html.")] = "table",
    out: Annotated[Path | None, typer.Option("--out", help="Directory for replay.png / replay.html / json.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Random seed of arrivals and physics.")] = 0,
    service_config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="The service configuration YAML (and PLANWATCH_* variables) the planwatch policy runs with, as serve.",
        ),
    ] = None,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            help="Processes to use (0: one per core): the policies run in up to that many, "
            "and planwatch's backtests due at one refit spread over as many.",
        ),
    ] = 0,
) -> None:
    """Replay a trace through the fleet physics under each policy, side by side with the hindsight oracle."""
    from monitor.replay.summary import summarise

    if fmt not in _FORMATS:
        fail(f"--format {fmt!r} is not one of {', '.join(_FORMATS)}")
    plan = load_plan_or_exit(plan_path)
    config = _config(policy, interval, scenarios, seed, service_config)
    if days is not None and days <= 0:
        fail(f"--days must be positive, got {days}")
    demand = _demand(plan, trace, config, _start(plan, start), days, scale_to_peak, not plan_lengths)
    if workers < 0:
        fail(f"--workers must be 0 or more, got {workers}")
    result = _run(plan, demand, config, workers or os.cpu_count() or 1, show=fmt == "table")
    summaries = summarise(result)
    _emit(result, summaries, fmt, out)


def _config(policy: str, interval: str, scenarios: str | None, seed: int, service: Path | None) -> ReplayConfig:
    from monitor.replay.run import ReplayConfig
    from monitor.service.settings import ConfigError, load_settings

    try:
        seconds = option_seconds("--decision-interval", interval)
        chosen = tuple(p.strip() for p in policy.split(",") if p.strip())
        if not chosen:
            fail("--policy names no policy")
        settings = load_settings(service)  # the file, then PLANWATCH_* variables, as `serve` reads them
        return ReplayConfig(chosen, seconds, parse_scenarios(scenarios), seed, settings)
    except ConfigError as exc:
        fail(f"--config: {exc}")
    except ScenarioError as exc:
        fail(f"--scenarios: {exc}")
    except ValueError as exc:
        fail(str(exc))


def _start(plan: Plan, text: str | None) -> float | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        fail(f"--start {text!r} is not an ISO 8601 date or time (2026-01-05 or 2026-01-05T08:00)")
    zone = ZoneInfo(plan.workload.business_hours.timezone)
    return (moment if moment.tzinfo else moment.replace(tzinfo=zone)).timestamp()


def _demand(
    plan: Plan, trace: str, config: ReplayConfig, start: float | None, days: float | None, scale: bool, lengths: bool
) -> Demand:
    import numpy as np

    from monitor.replay.demand import TraceError, load_demand, profile_demand

    rng = np.random.default_rng([config.seed, 0x7ACE])
    try:
        if trace == "fleetsim":
            return profile_demand(plan, config.scenarios, days if days is not None else 7.0, rng, start)
        return load_demand(plan, trace, rng, start, days, scale, lengths)
    except TraceError as exc:
        fail(str(exc))


def _run(plan: Plan, demand: Demand, config: ReplayConfig, workers: int, show: bool) -> Replay:
    from monitor.replay.run import run_replay

    with Progress(
        TextColumn("{task.description}"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn(),
        console=err_console, transient=not show, disable=not err_console.is_terminal and not show,
    ) as bar:  # fmt: skip
        tasks: dict[str, TaskID] = {n: bar.add_task(f"replay {n:<10}", total=1.0) for n in config.policies}

        def progress(name: str, done: float) -> None:
            bar.update(tasks[name], completed=done)

        return run_replay(plan, demand, config, progress, workers)


def _emit(result: Replay, summaries: list[PolicySummary], fmt: str, out: Path | None) -> None:
    from monitor.replay.reference import availability_price
    from monitor.replay.render import HEADERS, chart_png, render_html, table_rows
    from monitor.replay.summary import to_json

    data = to_json(result, summaries)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        png = chart_png(result, summaries)
        (out / "replay.png").write_bytes(png)
        (out / "replay.html").write_text(render_html(result, summaries, png), encoding="utf-8")
        (out / "replay.json").write_text(json_dumps(data), encoding="utf-8")
    if fmt == "json":
        typer.echo(json_dumps(data))
    elif fmt == "html":
        typer.echo(render_html(result, summaries, chart_png(result, summaries)))
    else:
        table = Table(title=f"replay of {result.plan.name} over {result.demand.source}", title_justify="left")
        for h in HEADERS:  # the policy is the key column, whole; the figures fold to fit the terminal
            table.add_column(h, no_wrap=h == HEADERS[0], overflow="fold")
        for row in table_rows(summaries):
            table.add_row(*row)
        print_table(out_console(), table)
        out_console().print(availability_price(result).sentence())
