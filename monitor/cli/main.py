"""Entry point of the `planwatch` command: one Typer app, each subcommand in its own module.

Every subcommand module exposes `register(app)`, so adding a command never touches the others.
"""

from __future__ import annotations

import typer

__all__ = ["build_app", "main"]


def _root() -> None:
    """planwatch: sizing, drift, triggers, forecasts and scale advice for an LLM serving fleet."""


def build_app() -> typer.Typer:
    from monitor.cli import calibrate, check, demo, forecast, measurements, replay, report, rules, serve, size

    app = typer.Typer(
        name="planwatch",
        help="Hold an LLM serving fleet against its capacity plan.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    app.callback()(_root)
    size.register(app)
    calibrate.register(app)
    check.register(app)
    forecast.register(app)
    report.register(app)
    rules.register(app)
    serve.register(app)
    demo.register(app)
    measurements.register(app)
    replay.register(app)
    return app


def main() -> None:
    """Run the CLI. An unexpected exception is a bug, not a result: it is reported as one, with its own exit
    status, so that a crash can never read as `check`'s exit 1 (a breach)."""
    try:
        build_app()()
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
