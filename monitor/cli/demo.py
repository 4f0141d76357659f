"""`planwatch demo [--scenario S] [--closed-loop]`: the whole product on loopback, until Ctrl-C (`make demo`)."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from fleetsim import DEFAULT_SCENARIO
from monitor.cli.common import err_console, fail

if TYPE_CHECKING:
    from fleetsim.demo import DemoUrls

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)


# The demo runs the plan that sizing says holds, so each scenario's effect stands out against a quiet fleet.
DEFAULT_PLAN = Path("examples/capstone-resized.yaml")
# Demo-level scenarios that change the plan rather than reality: name -> (plan, fleetsim scenario, the story).
PLAN_SCENARIOS = {
    "before-sizing": (
        Path("examples/capstone.yaml"),
        "baseline",
        "the seed's plan, before sizing: reality is as the plan assumes, but the plan is too small "
        "(`planwatch size examples/capstone.yaml` says so); watch planwatch catch it",
    ),
}


def demo(
    plan: Annotated[
        Path | None, typer.Option("--plan", help=f"The plan to emulate and hold [default: {DEFAULT_PLAN}].")
    ] = None,
    scenario: Annotated[
        str,
        typer.Option("--scenario", help="A fleetsim scenario (e.g. long-prompts), or before-sizing: the seed's plan."),
    ] = DEFAULT_SCENARIO,
    days: Annotated[float, typer.Option("--days", help="Days of history to backfill.")] = 28.0,
    step: Annotated[str, typer.Option("--step", help="Step of the backfilled history.")] = "60s",
    closed_loop: Annotated[bool, typer.Option("--closed-loop", help="Let recommendations scale fleetsim.")] = False,
    morning: Annotated[
        bool, typer.Option("--morning/--no-morning", help="Shift the plan's timezone to a business morning now.")
    ] = True,
    hold_scale: Annotated[float, typer.Option("--hold-scale", help="Scale alert hold times (tests only).")] = 1.0,
    workdir: Annotated[Path, typer.Option("--workdir", help="Where history, logs and state go.")] = Path(".demo"),
) -> None:
    """Backfill history, start fleetsim, Prometheus (with rules), Alertmanager and planwatch; print a tour."""
    from fleetsim.demo import DemoOptions, DemoStack
    from fleetsim.promstack import BinaryNotFound

    plan, reality, story = _scenario(plan, scenario)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    options = DemoOptions(plan=plan, scenario=reality, days=days, step=step, closed_loop=closed_loop,
                          morning=morning, hold_scale=hold_scale, workdir=workdir.resolve())  # fmt: skip
    stack = DemoStack(options, log=lambda text: err_console.print(text, highlight=False, soft_wrap=True))
    try:
        with stack:
            urls = stack.start()
            typer.echo(tour(urls, plan, scenario, story))
            sys.stdout.flush()
            stop.wait()
            err_console.print("stopping ...")
    except (BinaryNotFound, RuntimeError, OSError) as exc:
        fail(str(exc))


def _scenario(plan: Path | None, scenario: str) -> tuple[Path, str, str]:
    """(plan, fleetsim scenario, what the user should see) for a demo scenario name."""
    from fleetsim.scenarios import SCENARIOS

    if scenario in PLAN_SCENARIOS:
        default, reality, story = PLAN_SCENARIOS[scenario]
        return plan or default, reality, story
    names = [n.strip().split("@")[0] for n in scenario.split(",")]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        fail(f"--scenario: unknown {', '.join(unknown)}; known: {', '.join([*SCENARIOS, *PLAN_SCENARIOS])}")
    stories = [SCENARIOS[n].moves for n in names]
    if names == ["baseline"]:
        stories = ["a plan that sizing says holds, under the traffic it assumes: quiet; change reality below"]
    return plan or DEFAULT_PLAN, scenario, "; ".join(stories)


def tour(urls: DemoUrls, plan: Path, scenario: str, story: str) -> str:
    """What to open and run, for the plan file the demo actually serves."""
    served = _shown(urls.plan or plan)
    prom, am, pw = urls.prometheus, urls.alertmanager, urls.planwatch
    return f"""
planwatch demo is up: plan {plan} (served as {served}), scenario {scenario}
  {story}
  planwatch     {pw}   (status page; API docs {pw}/docs, metrics {pw}/metrics)
  Prometheus    {prom}   (alerts: {prom}{urls.alerts_path})
  Alertmanager  {am}   (Debian's package has no web UI: use amtool, below)
  fleetsim      {urls.fleetsim}/fleet
  notifications {urls.alert_receiver or "-"}   (each alert Alertmanager sends is printed in this console)

A short tour (the first evaluation lands within a minute):
  curl -s {pw}/v1/recommendations | python3 -m json.tool   # replicas now, why, and cost
  curl -s {pw}/v1/schedule | python3 -m json.tool          # scale-ups ahead of the morning ramp
  curl -s '{pw}/v1/triggers?state=all' | python3 -m json.tool   # revisit-the-design triggers
  curl -s {pw}/v1/drift | python3 -m json.tool              # plan vs production, per assumption
  amtool --alertmanager.url={am} alert query             # alerts Prometheus sent
  .venv/bin/planwatch check {served} --prometheus {prom}
  .venv/bin/planwatch report {served} --prometheus {prom} --out report.html
  curl -s -X POST {urls.fleetsim}/scenario -d '{{"scenarios": ["long-prompts"]}}'   # change reality

Ctrl-C stops everything.
"""


def _shown(path: Path) -> str:
    """A path as short as it can be typed from here."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
