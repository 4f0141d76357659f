"""Entry point of the `planwatch` command: one Typer app, each subcommand in its own module.

Every subcommand module exposes `register(app)`, so adding a command never touches the others.
"""

from __future__ import annotations

import typer

__all__ = ["build_app", "main"]


def _root() -> None:
    """planwatch: sizing, drift, triggers, forecasts and scale advice for an LLM serving fleet."""


def build_app() -> typer.Typer:
    from monitor.cli import check, demo, forecast, replay, report, rules, serve, size

    app = typer.Typer(
        name="planwatch",
        help="Hold an LLM serving fleet against its capacity plan.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    app.callback()(_root)
    size.register(app)
    check.register(app)
    forecast.register(app)
    report.register(app)
    rules.register(app)
    serve.register(app)
    demo.register(app)
    replay.register(app)
    return app


def main() -> None:
    build_app()()
