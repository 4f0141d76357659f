"""`planwatch rules PLAN`: a plan's Prometheus SLO and drift rules; `planwatch rules --advisor`: the generic
alerts on planwatch's own metrics. Writes YAML to stdout or `--out FILE`; `promtool check rules` accepts it.

    planwatch rules examples/capstone.yaml --out rules/capstone-slo.yml
    planwatch rules --advisor --out rules/alerts-planwatch.yml

Until the command is wired into `planwatch`, `python -m monitor.cli.rules ...` runs the same thing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from monitor.cli.common import err_console, fail, is_stdout, load_plan_or_exit
from monitor.rules import render_advisor_rules, render_plan_rules

__all__ = ["main", "register", "rules"]


def register(app: typer.Typer) -> None:
    app.command("rules")(rules)


def rules(
    plan_path: Annotated[Path | None, typer.Argument(metavar="[PLAN]", help="Capacity plan YAML file.")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Write here instead of stdout ('-' is stdout).")] = None,
    tier_label: Annotated[
        str, typer.Option(help="Label naming the tier: on alerts and recorded series, and the default selector.")
    ] = "tier",
    advisor: Annotated[
        bool, typer.Option("--advisor", help="The plan-independent alerts on planwatch's own metrics instead.")
    ] = False,
) -> None:
    """Generate Prometheus alerting and recording rules from a plan (or the advisor's generic alerts)."""
    if advisor == (plan_path is not None):
        fail("give a PLAN, or --advisor for the plan-independent alerts (not both)")
    out = None if is_stdout(out) else out
    shown_out = str(out) if out is not None else None
    if plan_path is None:
        text = render_advisor_rules(shown_out)
    else:
        plan = load_plan_or_exit(plan_path)
        try:
            text = render_plan_rules(plan, str(plan_path), shown_out, tier_label)
        except ValueError as exc:
            fail(str(exc))
    if out is None:
        typer.echo(text, nl=False)
        return
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {out}: {exc.strerror or exc}")
    err_console.print(f"wrote {out} (check it with `promtool check rules {out}`)", highlight=False)


def main() -> None:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    register(app)
    app()


if __name__ == "__main__":
    main()
