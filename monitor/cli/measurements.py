"""`planwatch measurements PLAN --prometheus URL`: the capstone's measurement plan as a record, item by item.

With `--state`, the service's SQLite state is read first (posted evals, the record so far) and the merged record
written back, so an item measured once stays measured after Prometheus's retention drops its history.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from monitor.cli.common import fail, json_dumps, load_plan_or_exit, out_console
from monitor.cli.prom_options import BearerFile, Headers, Insecure, PrometheusURL, Timeout, make_source, parse_time
from monitor.cli.tables import print_table
from monitor.measurements.model import Item
from monitor.queries.query import validate_duration
from monitor.units import parse_duration

__all__ = ["print_record", "register"]


def register(app: typer.Typer) -> None:
    app.command("measurements")(measurements)


def measurements(
    plan_path: Annotated[Path, typer.Argument(metavar="PLAN", help="Capacity plan YAML file.")],
    prometheus: PrometheusURL,
    at: Annotated[str | None, typer.Option("--at", help="Judge at this time (ISO 8601 or Unix s).")] = None,
    window: Annotated[str, typer.Option("--window", help="History to read, e.g. 7d.")] = "7d",
    step: Annotated[str, typer.Option("--step", help="Resolution of the load history.")] = "5m",
    state: Annotated[Path | None, typer.Option("--state", help="The service's SQLite state file.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    header: Headers = None,
    bearer_token_file: BearerFile = None,
    insecure: Insecure = False,
    timeout: Timeout = 30.0,
) -> None:
    """Each item of the measurement plan: measured, partly or not yet, with evidence, dates, engine, hardware."""
    from monitor.cli.live import exit_on_prometheus_errors
    from monitor.measurements import judge_plan, merge_record
    from monitor.measurements.collect import read_measurements
    from monitor.measurements.export import record_to_dict
    from monitor.service.state import StateStore
    from monitor.sizing.plan_sizing import size_plan

    if fmt not in ("table", "json"):
        fail(f"--format {fmt!r} is not one of table, json")
    for name, value in (("--window", window), ("--step", step)):
        try:
            validate_duration(value)
        except ValueError as exc:
            fail(f"{name}: {exc}")
    plan = load_plan_or_exit(plan_path)
    now = parse_time(at) or time.time()
    store = StateStore.open(state) if state else None
    try:
        evals = store.evals() if store else ()
        with make_source(prometheus, header, bearer_token_file, insecure, timeout) as source:
            sizing = size_plan(plan)
            with exit_on_prometheus_errors(source.settings.url):
                readings = read_measurements(source, plan, sizing, now, window, parse_duration(step), evals)
        items = judge_plan(plan, sizing, readings)
        if store:
            items = merge_record(store.measurement_record(), items)
            store.save_measurement_record(items, now)
    finally:
        if store:
            store.close()
    if fmt == "json":
        typer.echo(json_dumps(record_to_dict(items)))
    else:
        print_record(items, out_console())


def print_record(items: list[Item], console: Console) -> None:
    from monitor.measurements.export import item_to_dict

    # Under 110 columns the dates and the engine join the evidence cell: six folded columns cannot be read, and
    # the key columns (item, tier, status) must stay whole.
    wide = console.width >= 110
    table = Table(title="measurement plan (capstone Step 6)", title_justify="left", show_lines=True, expand=True)
    columns = (("Item", 3), ("Tier", None), ("Status", None), ("Evidence", 8), *((("Dates", 2), ("Engine / GPU", 3))
                                                                            if wide else ()))  # fmt: skip
    for col, ratio in columns:  # the tier and status at their own width (a share of the width would crop them)
        table.add_column(col, ratio=ratio, overflow="fold", no_wrap=col in ("Tier", "Status"))
    for item in items:
        d = item_to_dict(item)
        dates = f"{d['from']}\n{d['to']}" if d["from"] else "-"
        engine = "\n".join(x for x in (item.engine, item.hardware) if x) or "-"
        evidence = "\n".join(item.evidence)
        if wide:
            table.add_row(item.title, item.tier, item.status.value, evidence, dates, engine)
        else:
            dated = f"\nfrom {d['from']} to {d['to']}" if d["from"] else ""
            table.add_row(item.title, item.tier, item.status.value, f"{evidence}{dated}\nengine / GPU: {engine}")
    print_table(console, table)
