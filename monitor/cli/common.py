"""What every subcommand shares: loading a plan with a clear error, exit codes, JSON output."""

from __future__ import annotations

import json
import os
import sys
from enum import IntEnum
from pathlib import Path
from typing import IO, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from monitor.plan import Plan, PlanError, load_plan
from monitor.units import parse_duration

__all__ = [
    "ExitCode",
    "OutputFormat",
    "err_console",
    "fail",
    "is_stdout",
    "json_dumps",
    "load_plan_or_exit",
    "option_seconds",
    "out_console",
]

err_console = Console(stderr=True)
# Output to a file or a pipe with no COLUMNS: wide enough for the widest table without folding every cell.
_UNBOUNDED_WIDTH = 140


def out_console(file: IO[str] | None = None) -> Console:
    """The console tables print on: the terminal's width (or COLUMNS) when there is one; tables wrap or drop
    columns to fit. A file or a pipe without COLUMNS gets a fixed width, as a terminal cannot tell it one."""
    if file is None and (sys.stdout.isatty() or os.environ.get("COLUMNS")):
        return Console()
    return Console(file=file, width=int(os.environ.get("COLUMNS") or _UNBOUNDED_WIDTH))


def is_stdout(path: Path | None) -> bool:
    """`-` means standard output, for every --out."""
    return path is not None and str(path) == "-"


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


def option_seconds(option: str, text: str) -> float:
    """The seconds of a duration option (planwatch's one grammar, `monitor.units.parse_duration`), which must be
    positive; a bad one is a usage error (exit 2) naming the option and the value, before any work is done."""
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        fail(f"{option}: {exc}")
    if not seconds > 0:
        fail(f"{option}: {text!r} is not a positive duration")
    return seconds


def load_plan_or_exit(path: Path) -> Plan:
    try:
        return load_plan(path)
    except PlanError as exc:
        fail(str(exc))


def json_dumps(data: Any) -> str:
    from monitor.export import without_nan  # the export module pulls in the core; only JSON output needs it

    return json.dumps(without_nan(data), indent=2, allow_nan=False)
