"""What every subcommand shares: loading a plan with a clear error, exit codes, JSON output."""

from __future__ import annotations

import json
from enum import IntEnum
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from monitor.plan import Plan, PlanError, load_plan

__all__ = ["ExitCode", "OutputFormat", "err_console", "fail", "json_dumps", "load_plan_or_exit"]

err_console = Console(stderr=True)


class ExitCode(IntEnum):
    OK = 0
    BREACH = 1
    USAGE = 2
    UNREACHABLE = 3
    INTERNAL = 70  # a bug in planwatch (sysexits' EX_SOFTWARE): never 1, which `check` uses for a breach


class OutputFormat:
    TABLE = "table"
    JSON = "json"


def fail(message: str, code: ExitCode = ExitCode.USAGE) -> NoReturn:
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(int(code))


def load_plan_or_exit(path: Path) -> Plan:
    try:
        return load_plan(path)
    except PlanError as exc:
        fail(str(exc))


def json_dumps(data: Any) -> str:
    from monitor.export import without_nan  # the export module pulls in the core; only JSON output needs it

    return json.dumps(without_nan(data), indent=2, allow_nan=False)
