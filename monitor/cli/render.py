"""Human-readable tables of an evaluation: drift per tier, triggers, recommendations and the schedule."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.console import Console
from rich.table import Table

from monitor.cli.render_batch import print_batch_jobs
from monitor.drift import DriftRow, Status, describe_bound
from monitor.evaluation import Evaluation
from monitor.plan.model import FLEET
from monitor.report.answer import local_clock
from monitor.triggers import trigger_def
from monitor.units import format_value

__all__ = ["print_evaluation"]

_STYLE = {Status.OK: "green", Status.WARN: "yellow", Status.BREACH: "bold red", Status.UNKNOWN: "magenta"}


def print_evaluation(ev: Evaluation, console: Console) -> None:
    when = datetime.fromtimestamp(ev.evaluated_at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    console.print(f"[bold]{ev.plan.name}[/] evaluated at {when}; overall drift: {_status(ev.worst_drift)}")
    for section in ev.sections:
        console.print(_drift_table(section.tier, section.observation.window, section.drift, console.width))
    _print_triggers(ev, console)
    print_batch_jobs(ev, console)
    _print_recommendations(ev, console)
    for w in ev.warnings:
        console.print(f"[yellow]warning:[/] {w}", highlight=False)


def _status(s: Status) -> str:
    return f"[{_STYLE[s]}]{s.value}[/]"


# Below this width the window and sample-count columns are dropped, so the note keeps room to be read.
_WIDE = 130


def _drift_table(tier: str, window: str, rows: tuple[DriftRow, ...], width: int = _WIDE) -> Table:
    what = "the fleet (all tiers, the plan's workload as written)" if tier == FLEET else f"tier {tier}"
    table = Table(title=f"{what}: plan vs production ({window})", title_justify="left")
    wide = width >= _WIDE
    columns = ("assumption", "plan", "observed", "ratio", "status") + (("window", "samples") if wide else ())
    for col in (*columns, "note / reason"):
        left = col in ("assumption", "status", "note / reason")
        table.add_column(col, justify="left" if left else "right", no_wrap=col in ("assumption", "status", "ratio"),
                         ratio=1 if col == "note / reason" else None)  # fmt: skip
    for r in rows:
        ratio = f"{r.ratio:.2f}x" if r.ratio is not None else "-"
        if r.ratio is not None and r.observed.bound is not None:  # the ratio at a bound is a bound too
            ratio = (">" if r.observed.bound.side == "above" else "<=") + ratio
        counts = (r.observed.window or "-", str(r.observed.samples) if r.observed.value is not None else "-")
        table.add_row(
            r.assumption,
            format_value(r.plan, r.unit),
            describe_bound(r.observed, r.unit) or format_value(r.observed.value, r.unit),
            ratio,
            _status(r.status),
            *(counts if wide else ()),
            r.reason if r.status is Status.UNKNOWN else r.note,
        )
    return table


def _print_triggers(ev: Evaluation, console: Console) -> None:
    if not ev.triggers:
        console.print("triggers: none holds")
        return
    table = Table(title="revisit-the-design triggers", title_justify="left")
    for col in ("trigger", "tier", "severity", "state", "evidence", "mitigation"):
        table.add_column(col, overflow="fold", no_wrap=col in ("trigger", "tier", "severity", "state"))
    for t in ev.triggers:
        style = "bold red" if t.severity.value == "critical" else "yellow"
        table.add_row(t.trigger, t.tier, f"[{style}]{t.severity.value}[/]", t.state.value, t.evidence.summary,
                      trigger_def(t.trigger).mitigation)  # fmt: skip
    console.print(table)


def _print_recommendations(ev: Evaluation, console: Console) -> None:
    table = Table(title="recommendations", title_justify="left")
    for col in ("tier", "current", "recommended", "action", "reason", "next scale-up", "$/h now -> rec."):
        table.add_column(col, overflow="fold", no_wrap=col in ("tier", "action"))
    for tier in ev.tiers:
        r = tier.recommendation
        if r is None:
            continue
        step = r.next_scale_up
        tz = ev.plan.workload.business_hours.timezone
        nxt = "-" if step is None else f"{step.replicas} by {_clock(step.by, tz)} (needed {_clock(step.needed_at, tz)})"
        now = "unknown" if r.cost_per_hour_usd_now is None else f"${r.cost_per_hour_usd_now:,.2f}"
        current = "unknown" if r.current.value is None else f"{r.current.value:.0f}"
        action = f"{r.action.value} (stale)" if r.stale else r.action.value
        table.add_row(r.tier, current, str(r.recommended), action, r.reason, nxt,
                      f"{now} -> ${r.cost_per_hour_usd_recommended:,.2f}")  # fmt: skip
    console.print(table)


def _clock(ts: float, timezone: str) -> str:
    """The plan's local time, as the report and the front page show it."""
    return local_clock(ts, timezone, with_day=False)
