"""`planwatch check PLAN --prometheus URL`: one evaluation of the plan against production, then exit.

Exit status: 0 when every assumption is ok or warn, 1 when one breaches or a critical trigger is active,
2 for a usage or plan error, 3 when Prometheus cannot be reached.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from monitor.cli.common import ExitCode, fail, json_dumps, load_plan_or_exit, out_console
from monitor.cli.prom_options import BearerFile, Headers, Insecure, PrometheusURL, Timeout, make_source, parse_time
from monitor.drift import Status

if TYPE_CHECKING:
    from monitor.evaluation import Evaluation

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("check")(check)


def check(
    plan_path: Annotated[Path, typer.Argument(metavar="PLAN", help="Capacity plan YAML file.")],
    prometheus: PrometheusURL,
    at: Annotated[str | None, typer.Option("--at", help="Evaluate at this time (ISO 8601 or Unix s).")] = None,
    window: Annotated[str, typer.Option("--window", help="Observation window, e.g. 1h.")] = "1h",
    long_window: Annotated[str, typer.Option("--long-window", help="Window for peak and average.")] = "7d",
    fmt: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    recording_rules: Annotated[
        bool,
        typer.Option(
            "--recording-rules/--raw-series",
            help="Read rules/recording.yml's tier:* series where fresh and long enough (cheap on large fleets), "
            "or the raw series only.",
        ),
    ] = True,
    forecast: Annotated[
        bool,
        typer.Option(
            "--forecast/--no-forecast",
            help="Fit each tier's demand forecast on its Prometheus history, as report and serve do, so the "
            "advice plans ahead; --no-forecast advises on demand now only (reactive).",
        ),
    ] = True,
    history: Annotated[str, typer.Option("--history", help="Demand history the forecast fits on.")] = "28d",
    horizon: Annotated[str, typer.Option("--horizon", help="How far ahead to forecast.")] = "24h",
    header: Headers = None,
    bearer_token_file: BearerFile = None,
    insecure: Insecure = False,
    timeout: Timeout = 10.0,
) -> None:
    """Hold the plan against what Prometheus saw: drift per assumption, triggers, recommendations.

    Exit status:

    0  every assumption ok or warn

    1  an assumption breaches, or a critical trigger is active

    2  a usage or plan error

    3  Prometheus cannot be reached or refuses a query

    70 an internal error (a bug in planwatch, never a finding about the fleet)
    """
    from monitor.cli.live import check_document, evaluate_live, forecast_windows, validate_windows  # heavy
    from monitor.cli.render import print_evaluation
    from monitor.shapes import dump

    if fmt not in ("table", "json"):
        fail(f"--format {fmt!r} is not one of table, json")
    validate_windows(window, long_window)
    windows = forecast_windows(history, horizon) if forecast else None
    plan = load_plan_or_exit(plan_path)
    now = parse_time(at) or time.time()
    with make_source(prometheus, header, bearer_token_file, insecure, timeout) as source:
        live = evaluate_live(source, plan, now, window, long_window=long_window, recording_rules=recording_rules,
                             windows=windows)  # fmt: skip
    result = live.evaluation
    if fmt == "json":
        typer.echo(json_dumps(dump(check_document(live))))
    else:
        console = out_console()
        print_evaluation(result, console)
        for note in live.forecast_notes:  # through the console: wrapped at the terminal's width
            console.print(f"note: {note}", highlight=False, markup=False)
    raise typer.Exit(int(_exit_code(result)))


def _exit_code(result: Evaluation) -> ExitCode:
    return ExitCode.BREACH if result.worst_drift is Status.BREACH or result.critical_active else ExitCode.OK
