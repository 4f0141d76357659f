"""Entry point of the `planwatch` command: one Typer app, each subcommand in its own module.

Every subcommand module exposes `register(app)`, so adding a command never touches the others. The installed
command imports only the module of the subcommand it runs (the sizing, forecasting and service stacks take
seconds to import), so `planwatch --help` and `planwatch size ...` do not pay for `serve`.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

__all__ = ["COMMANDS", "build_app", "main"]

# name -> the one line `planwatch --help` shows (a test holds each to its command's own docstring).
COMMANDS = {
    "size": "Size every tier of a plan: memory, decode step, batch, replicas, TTFT and cost, formulas shown.",
    "check": "Hold the plan against what Prometheus saw: drift per assumption, triggers, recommendations.",
    "forecast": "Forecast demand with 80%/95% intervals, the next peak and when thresholds will be crossed.",
    "report": "Write a self-contained HTML report: sizing, drift, triggers, forecast with the schedule, cost.",
    "rules": "Generate Prometheus alerting and recording rules from a plan (or the advisor's generic alerts).",
    "serve": "Serve the advisor: evaluate the plan against Prometheus every minute, refit forecasts hourly, and "
    "answer /v1/* and /metrics from the latest results.",
    "calibrate": "Fit a tier's bandwidth and GEMM efficiencies and its per-step overhead to benchmark results.",
    "measurements": "Each item of the measurement plan: measured, partly or not yet, with evidence, dates, engine, "
    "hardware.",
    "replay": "Replay a trace through the fleet physics under each policy, side by side with the hindsight oracle.",
    "demo": "Backfill history, start fleetsim, Prometheus (with rules), Alertmanager and planwatch; print a tour.",
}


def _version() -> str:
    try:
        return version("planwatch")
    except PackageNotFoundError:  # a source tree that was never installed
        return "unknown"


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"planwatch {_version()}")
        raise typer.Exit()


def _root(
    show_version: Annotated[
        bool, typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """planwatch: sizing, drift, triggers, forecasts and scale advice for an LLM serving fleet."""


def _app(cls: type[TyperGroup] | None = None) -> typer.Typer:
    app = typer.Typer(
        cls=cls,
        name="planwatch",
        help="Hold an LLM serving fleet against its capacity plan.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    app.callback()(_root)
    return app


def _register(app: typer.Typer, name: str) -> None:
    importlib.import_module(f"monitor.cli.{name}").register(app)


def build_app() -> typer.Typer:
    """Every subcommand registered (tests drive this one with typer's CliRunner)."""
    app = _app()
    for name in COMMANDS:
        _register(app, name)
    return app


class LazyGroup(TyperGroup):
    """Lists COMMANDS by their one line (placeholders, so help imports nothing); builds only the command that runs."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        for name, short in COMMANDS.items():
            self.commands.setdefault(name, TyperCommand(name=name, help=short))

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any, list[str]]:
        if args and args[0] in COMMANDS:
            return args[0], _build(args[0]), args[1:]
        return super().resolve_command(ctx, args)


def _build(name: str) -> Any:
    app = _app()
    _register(app, name)
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)
    return group.commands[name]


def main() -> None:
    """Run the CLI. An unexpected exception is a bug, not a result: it is reported as one, with its own exit
    status, so that a crash can never read as `check`'s exit 1 (a breach)."""
    try:
        _app(LazyGroup)()
    except Exception as exc:
        import traceback

        from rich.markup import escape

        from monitor.cli.common import ExitCode, err_console

        frame = traceback.extract_tb(exc.__traceback__)[-1]
        err_console.print(
            f"[bold red]internal error:[/] {escape(f'{type(exc).__name__}: {exc}')} "
            f"(at {escape(frame.filename)}:{frame.lineno})\n"
            "This is a bug in planwatch, not a finding about the fleet; please report it with the command line.",
            highlight=False, soft_wrap=True,
        )  # fmt: skip
        raise SystemExit(int(ExitCode.INTERNAL)) from None
