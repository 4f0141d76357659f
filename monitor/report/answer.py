"""The answer to "what do I do before tomorrow morning?": status, actions, the schedule, the open triggers.

One HTML fragment, rendered from an Evaluation, that leads the report and is the service's front page, so the
two never say different things. Times are in the plan's business-hours timezone (the one the ramp lives in).
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from datetime import datetime
from zoneinfo import ZoneInfo

from monitor.advice import Action
from monitor.evaluation import Evaluation
from monitor.triggers import TriggerRecord, trigger_def

__all__ = ["ANSWER_CSS", "answer_section", "local_clock", "status_line"]

ANSWER_CSS = """
.answer{border:2px solid #d0d7de;border-radius:6px;padding:.4rem 1rem;margin:1rem 0}
.answer .verdict{font-size:1.15rem;font-weight:600}.act{font-weight:600}
.scale-up{color:#cf222e}.scale-down{color:#1a7f37}.hold{color:#57606a}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _table(headers: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    """Cells are HTML already (escaped by the caller where they carry data)."""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def local_clock(ts: float, timezone: str, with_day: bool = True) -> str:
    """A time as the plan's people read it: 'Tue 07:40 Europe/Berlin'."""
    local = datetime.fromtimestamp(ts, ZoneInfo(timezone))
    return local.strftime(f"{'%a ' if with_day else ''}%H:%M ") + timezone


def status_line(ev: Evaluation) -> str:
    """One sentence: act or not, and why."""
    moves = [t.recommendation for t in ev.tiers if t.recommendation and t.recommendation.action is not Action.HOLD]
    critical = [t for t in ev.triggers if t.state.value == "active" and t.severity.value == "critical"]
    if not moves and not critical:
        return "Nothing to do now: every tier holds its replicas and no critical trigger is active."
    parts = [f"{len(moves)} tier(s) to scale"] if moves else []
    if critical:
        parts.append(f"{len(critical)} critical trigger(s) active: the plan needs revisiting")
    return "Act: " + "; ".join(parts) + "."


def answer_section(ev: Evaluation) -> str:
    tz = ev.plan.workload.business_hours.timezone
    when = local_clock(ev.evaluated_at, tz)
    return (
        f"<section class=answer><h2>The answer</h2><p class=verdict>{_e(status_line(ev))}</p>"
        f"<p><small>evaluated at {_e(when)}; overall drift <span class={ev.worst_drift.value}>"
        f"{_e(ev.worst_drift.value)}</span></small></p>"
        + _actions(ev)
        + _schedule(ev, tz)
        + _warnings(ev)
        + _open_triggers(ev.triggers)
        + "</section>"
    )


def _actions(ev: Evaluation) -> str:
    rows = []
    for tier in ev.tiers:
        r = tier.recommendation
        if r is None:
            continue
        current = "unknown" if r.current.value is None else f"{r.current.value:.0f}"
        action = f"{r.action.value} (stale data: holding)" if r.stale else r.action.value
        rows.append((_e(r.tier), _e(current), f"<span class=act>{r.recommended}</span>",
                     f"<span class={r.action.value}>{_e(action)}</span>", _e(r.reason)))  # fmt: skip
    if not rows:
        return "<h3>Replicas</h3><p>No tier serves traffic in this plan.</p>"
    return "<h3>Replicas: now → recommended</h3>" + _table(("tier", "now", "recommended", "action", "why"), rows)


def _schedule(ev: Evaluation, tz: str) -> str:
    rows = []
    for tier in ev.tiers:
        r = tier.recommendation
        for step in r.schedule if r else ():
            late = " <span class=breach>(late: start now)</span>" if step.late(ev.evaluated_at) else ""
            rows.append((_e(tier.tier), str(step.replicas), _e(local_clock(step.by, tz)) + late,
                         _e(local_clock(step.needed_at, tz)), f"{step.demand_rps:.3g}"))  # fmt: skip
    if not rows:
        return f"<h3>Schedule</h3><p>{_e(_no_schedule_reason(ev))}</p>"
    headers = ("tier", "scale to", "start by", "needed at", "forecast demand (req/s)")
    return f"<h3>Schedule ({_e(tz)})</h3>" + _table(headers, rows)


def _warnings(ev: Evaluation) -> str:
    """What the recommendation could not do (capped at replicas.max or the GPU budget, an SLO out of reach):
    beside the schedule, so a schedule that stops at the cap says why it stops."""
    items = [f"<li>{_e(t.tier)}: {_e(w)}</li>" for t in ev.tiers if t.recommendation
             for w in t.recommendation.warnings]  # fmt: skip
    return f"<h3>Warnings</h3><ul>{''.join(items)}</ul>" if items else ""


def _no_schedule_reason(ev: Evaluation) -> str:
    recs = [t.recommendation for t in ev.tiers if t.recommendation is not None]
    if recs and all(r.needed_at_forecast_peak is None for r in recs):
        return "No scale-up scheduled: no forecast yet (the first refit runs at startup)."
    return "No scale-up needed over the forecast horizon: the replicas recommended now cover the forecast peak."


def _open_triggers(triggers: tuple[TriggerRecord, ...]) -> str:
    if not triggers:
        return "<h3>Revisit-the-design triggers</h3><p>None holds.</p>"
    rows = []
    for t in sorted(triggers, key=lambda t: (t.state.value != "active", t.severity.value != "critical")):
        d = trigger_def(t.trigger)
        rows.append((_e(d.title), _e(t.tier), f"<span class={t.severity.value}>{_e(t.severity.value)}</span>",
                     _e(t.state.value), _e(t.evidence.summary), _e(d.mitigation)))  # fmt: skip
    return "<h3>Revisit-the-design triggers</h3>" + _table(
        ("trigger", "tier", "severity", "state", "evidence", "what to do"), rows
    )
