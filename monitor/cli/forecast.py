"""`planwatch forecast`: demand forecast with intervals, next peak and ramp times.

Offline mode reads a CSV (`--csv FILE`); live mode reads a tier's demand history from Prometheus. This module
is only the command's options: the forecasting stack (statsmodels, scipy) is imported by the body, when the
command runs (`monitor.cli.forecast_run`), so `planwatch forecast --help` answers at once.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from monitor.cli.prom_options import BearerFile, Headers, Insecure

__all__ = ["OutputFormat", "register"]


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    png = "png"


def register(app: typer.Typer) -> None:
    """Add the `forecast` command to `app`."""

    @app.command("forecast")
    def forecast_command(
        plan_path: Annotated[
            Path | None, typer.Argument(metavar="[PLAN]", help="Live mode: the plan whose tier to forecast")
        ] = None,
        prometheus: Annotated[str | None, typer.Option("--prometheus", help="Live mode: query API base URL")] = None,
        tier: Annotated[str | None, typer.Option("--tier", help="Live mode: the tier (default: the only one)")] = None,
        history: Annotated[str, typer.Option("--history", help="Live mode: how much history to fit on")] = "28d",
        at: Annotated[
            str | None, typer.Option("--at", help="Live mode: forecast from this time (ISO 8601, Unix s)")
        ] = None,
        header: Headers = None,
        bearer_token_file: BearerFile = None,
        insecure: Insecure = False,
        csv_file: Annotated[Path | None, typer.Option("--csv", help="CSV of timestamp,value rows")] = None,
        time_column: Annotated[str | None, typer.Option(help="default: 'timestamp', else column 1")] = None,
        value_column: Annotated[str | None, typer.Option(help="default: 'value', else column 2")] = None,
        horizon: Annotated[str, typer.Option(help="how far ahead, e.g. 24h, 90m, 7d")] = "24h",
        step: Annotated[str | None, typer.Option(help="series step, e.g. 5m (default: inferred)")] = None,
        threshold: Annotated[
            list[float] | None, typer.Option(help="ramp threshold in value units; repeat for each replica step")
        ] = None,
        timezone: Annotated[
            str | None, typer.Option(help="IANA timezone for display and naive timestamps (live: the plan's)")
        ] = None,
        fmt: Annotated[OutputFormat, typer.Option("--format", help="table, json or png")] = OutputFormat.table,
        out: Annotated[Path | None, typer.Option(help="output file (required for png; '-' is stdout)")] = None,
        backtest: Annotated[bool, typer.Option("--backtest", help="also show the backtest of every model")] = False,
        unit: Annotated[str, typer.Option(help="unit label of the values")] = "req/s",
        workdays: Annotated[
            str | None,
            typer.Option(help="CSV: the working days demand follows, in --timezone, e.g. mon-fri (live: the plan's)"),
        ] = None,
    ) -> None:
        """Forecast demand with 80%/95% intervals, the next peak and when thresholds will be crossed.

        Offline from a CSV (--csv FILE), or live: PLAN --prometheus URL [--tier T].
        """
        from monitor.cli.forecast_run import run_command

        run_command(
            plan_path=plan_path, prometheus=prometheus, tier=tier, history=history, at=at, header=header,
            bearer_token_file=bearer_token_file, insecure=insecure, csv_file=csv_file, time_column=time_column,
            value_column=value_column, horizon=horizon, step=step, threshold=threshold, timezone=timezone,
            fmt=fmt.value, out=out, backtest=backtest, unit=unit, workdays=workdays,
        )  # fmt: skip
