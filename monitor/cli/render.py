"""Human-readable tables of an evaluation: drift per tier, triggers, recommendations and the schedule."""

from __future__ import annotations

from datetime import UTC, datetime

from rich.console import Console
from rich.table import Table
from rich.text import Text

from monitor.cli.render_batch import print_batch_jobs
from monitor.cli.tables import print_table
from monitor.drift import DriftRow, Status, describe_observed, describe_ratio
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
        _print_drift(section.tier, section.observation.window, section.drift, console)
    _print_triggers(ev, console)
    print_batch_jobs(ev, console)
    _print_recommendations(ev, console)
    for w in ev.warnings:
        console.print(f"[yellow]warning:[/] {w}", highlight=False)


def _status(s: Status) -> str:
    return f"[{_STYLE[s]}]{s.value}[/]"


# Below _WIDE the window and sample-count columns are dropped; below _INLINE the prose columns (notes, evidence,
# reasons) leave the table for lines under it, keyed by the row's first column: folded into a column a few
# characters wide they cannot be read, while the key columns (assumption, plan, observed, status) still fit.
_WIDE = 130
_INLINE = 110


def _print_below(console: Console, lines: list[tuple[str, str]]) -> None:
    """Prose that left a narrow table: 'key: text', wrapped at the console's width."""
    for key, text in lines:
        if text:
            console.print(Text.assemble((f"  {key}: ", "bold"), text), overflow="fold")


def _print_drift(tier: str, window: str, rows: tuple[DriftRow, ...], console: Console) -> None:
    table = _drift_table(tier, window, rows, console.width)
    print_table(console, table)
    if console.width < _INLINE:
        _print_below(console, [(r.assumption, _note(r)) for r in rows])


def _note(r: DriftRow) -> str:
    return r.reason if r.status is Status.UNKNOWN else r.note


def _drift_table(tier: str, window: str, rows: tuple[DriftRow, ...], width: int = _WIDE) -> Table:
    what = "the fleet (all tiers, the plan's workload as written)" if tier == FLEET else f"tier {tier}"
    table = Table(title=f"{what}: plan vs production ({window})", title_justify="left")
    wide, inline = width >= _WIDE, width >= _INLINE
    columns = ("assumption", "plan", "observed", "ratio", "status") + (("window", "samples") if wide else ())
    for col in (*columns, *(("note / reason",) if inline else ())):
        left = col in ("assumption", "status", "note / reason")
        table.add_column(col, justify="left" if left else "right", no_wrap=col in ("assumption", "status", "ratio"),
                         ratio=1 if col == "note / reason" else None,
                         overflow="fold")  # fmt: skip
    for r in rows:
        counts = (r.observed.window or "-", str(r.observed.samples) if r.observed.value is not None else "-")
        table.add_row(
            r.assumption,
            format_value(r.plan, r.unit),
            describe_observed(r),
            describe_ratio(r),
            _status(r.status),
            *(counts if wide else ()),
            *((_note(r),) if inline else ()),
        )
    return table


def _print_triggers(ev: Evaluation, console: Console) -> None:
    if not ev.triggers:
        console.print("triggers: none holds")
        return
    inline = console.width >= _INLINE
    table = Table(title="revisit-the-design triggers", title_justify="left")
    for col in ("trigger", "tier", "severity", "state", *(("evidence", "mitigation") if inline else ())):
        table.add_column(col, overflow="fold", no_wrap=col in ("trigger", "tier", "severity", "state"))
    for t in ev.triggers:
        style = "bold red" if t.severity.value == "critical" else "yellow"
        prose = (t.evidence.summary, trigger_def(t.trigger).mitigation)
        table.add_row(t.trigger, t.tier, f"[{style}]{t.severity.value}[/]", t.state.value,
                      *(prose if inline else ()))  # fmt: skip
    print_table(console, table)
    if not inline:
        _print_below(console, [(f"{t.trigger} ({t.tier})", f"{t.evidence.summary}. What to do: "
                                f"{trigger_def(t.trigger).mitigation}") for t in ev.triggers])  # fmt: skip


def _print_recommendations(ev: Evaluation, console: Console) -> None:
    inline = console.width >= _INLINE
    table = Table(title="recommendations", title_justify="left")
    columns = ("tier", "current", "recommended", "action", *(("reason", "next scale-up", "$/h now -> rec.")
                                                              if inline else ()))  # fmt: skip
    for col in columns:
        table.add_column(col, overflow="fold", no_wrap=col in ("tier", "current", "recommended", "action"))
    below = []
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
        cost = f"{now} -> ${r.cost_per_hour_usd_recommended:,.2f}"
        table.add_row(r.tier, current, str(r.recommended), action, *((r.reason, nxt, cost) if inline else ()))
        below.append((r.tier, f"{r.reason}; next scale-up {nxt}; $/h now -> rec. {cost}"))
    print_table(console, table)
    if not inline:
        _print_below(console, below)
    for tier in ev.tiers:  # what the recommendation could not do (capped at replicas.max, an SLO out of reach)
        for w in tier.recommendation.warnings if tier.recommendation else ():
            console.print(f"[yellow]warning:[/] {tier.tier}: {w}", highlight=False)


def _clock(ts: float, timezone: str) -> str:
    """The plan's local time, as the report and the front page show it."""
    return local_clock(ts, timezone, with_day=False)
