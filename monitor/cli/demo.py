"""`planwatch demo [--scenario S] [--closed-loop]`: the whole product on loopback, until Ctrl-C (`make demo`)."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import Annotated

import typer

from monitor.cli.common import err_console, fail

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)


def demo(
    plan: Annotated[Path, typer.Option("--plan", help="The plan to emulate and hold.")] = Path(
        "examples/capstone.yaml"
    ),
    scenario: Annotated[str, typer.Option("--scenario", help="fleetsim scenarios, e.g. long-prompts.")] = "baseline",
    days: Annotated[float, typer.Option("--days", help="Days of history to backfill.")] = 28.0,
    step: Annotated[str, typer.Option("--step", help="Step of the backfilled history.")] = "60s",
    closed_loop: Annotated[bool, typer.Option("--closed-loop", help="Let recommendations scale fleetsim.")] = False,
    morning: Annotated[
        bool, typer.Option("--morning/--no-morning", help="Shift the plan's timezone to a business morning now.")
    ] = True,
    hold_scale: Annotated[float, typer.Option("--hold-scale", help="Scale alert `for:` times (tests only).")] = 1.0,
    workdir: Annotated[Path, typer.Option("--workdir", help="Where history, logs and state go.")] = Path(".demo"),
) -> None:
    """Backfill history, start fleetsim, Prometheus (with rules), Alertmanager and planwatch; print a tour."""
    from fleetsim.demo import DemoOptions, DemoStack
    from fleetsim.promstack import BinaryNotFound

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    options = DemoOptions(plan=plan, scenario=scenario, days=days, step=step, closed_loop=closed_loop,
                          morning=morning, hold_scale=hold_scale, workdir=workdir.resolve())  # fmt: skip
    stack = DemoStack(options, log=lambda text: err_console.print(text, highlight=False))
    try:
        with stack:
            urls = stack.start()
            typer.echo(_tour(urls.planwatch, urls.prometheus, urls.alertmanager, urls.fleetsim, plan, scenario))
            sys.stdout.flush()
            stop.wait()
            err_console.print("stopping ...")
    except (BinaryNotFound, RuntimeError, OSError) as exc:
        fail(str(exc))


def _tour(planwatch: str, prometheus: str, alertmanager: str, fleetsim: str, plan: Path, scenario: str) -> str:
    return f"""
planwatch demo is up: plan {plan}, scenario {scenario}
  planwatch     {planwatch}   (OpenAPI docs {planwatch}/docs, metrics {planwatch}/metrics)
  Prometheus    {prometheus}
  Alertmanager  {alertmanager}
  fleetsim      {fleetsim}/fleet

A short tour (the first evaluation lands within a minute):
  curl -s {planwatch}/v1/recommendations | python3 -m json.tool   # replicas now, why, and cost
  curl -s {planwatch}/v1/schedule | python3 -m json.tool          # scale-ups ahead of the morning ramp
  curl -s '{planwatch}/v1/triggers?state=all' | python3 -m json.tool   # revisit-the-design triggers
  curl -s {planwatch}/v1/drift | python3 -m json.tool              # plan vs production, per assumption
  curl -s {alertmanager}/api/v2/alerts | python3 -m json.tool      # alerts Prometheus sent
  .venv/bin/planwatch check {plan} --prometheus {prometheus}
  .venv/bin/planwatch report {plan} --prometheus {prometheus} --out report.html
  curl -s -X POST {fleetsim}/scenario -d '{{"scenarios": ["long-prompts"]}}'   # change reality

Ctrl-C stops everything.
"""
