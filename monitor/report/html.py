"""`planwatch report`: one self-contained HTML page for a design review, for people who do not run Grafana.

Sizing (the hypothesis table), drift, active triggers with their mitigations, the demand forecast with the
ramp and the scale schedule, and cost per request. Every value is escaped; nothing is fetched from the web.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from monitor.advice import DemandOutlook, ScaleStep
from monitor.drift import Status, describe_observed, describe_ratio
from monitor.evaluation import Evaluation
from monitor.measurements.model import Item
from monitor.observe.observer import DemandHistory
from monitor.plan.model import FLEET
from monitor.report.answer import ANSWER_CSS, answer_section, local_clock
from monitor.report.charts import demand_chart_svg
from monitor.report.measurements import measurements_section
from monitor.sizing.explain import findings, hypothesis_rows
from monitor.triggers import trigger_def
from monitor.units import format_value

__all__ = ["ReportInputs", "render_report"]


@dataclass(frozen=True)
class ReportInputs:
    evaluation: Evaluation
    histories: Mapping[str, DemandHistory]
    outlooks: Mapping[str, DemandOutlook]
    measurements: tuple[Item, ...] = ()


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1200px;color:#222}
h1{font-size:1.6rem}h2{border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;width:100%;margin:.6rem 0 1rem;font-size:.85rem}
th,td{border:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}th{background:#f5f5f5}
.ok{color:#1a7f37}.warn{color:#9a6700}.breach{color:#cf222e;font-weight:600}.unknown{color:#8250df}
.critical{color:#cf222e;font-weight:600}.warning{color:#9a6700}.finding{background:#fff8c5;padding:.3rem .6rem}
.chart svg{width:100%;height:auto}small{color:#666}
details code{display:block;white-space:pre-wrap;word-break:break-all;font-size:.75rem;max-width:38rem}
summary{cursor:pointer;color:#0969da}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _table(headers: Iterable[str], rows: Iterable[Iterable[str]], raw: bool = False) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c if raw else _e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_report(inputs: ReportInputs) -> str:
    ev = inputs.evaluation
    when = datetime.fromtimestamp(ev.evaluated_at, UTC).strftime("%Y-%m-%d %H:%M UTC") + (
        f" ({local_clock(ev.evaluated_at, ev.plan.workload.business_hours.timezone)})"
    )
    # The answer first (what to do, when, in the plan's timezone), then the evidence, the hypothesis last.
    sections = [answer_section(ev), _summary(ev), _drift(ev), _triggers(ev), _forecast(inputs), _costs(ev),
                measurements_section(inputs.measurements), _sizing(ev)]  # fmt: skip
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>planwatch report: {_e(ev.plan.name)}</title><style>{_CSS}{ANSWER_CSS}</style></head><body>"
        f"<h1>planwatch: {_e(ev.plan.name)}</h1><p><small>evaluated at {_e(when)}</small></p>"
        + "".join(sections)
        + "</body></html>"
    )


def _summary(ev: Evaluation) -> str:
    active = [t for t in ev.triggers if t.state.value == "active"]
    status = ev.worst_drift.value
    return (
        f"<p>{_e(ev.plan.description.strip())}</p><p>Overall drift: <span class={status}>{status}</span>; "
        f"{len(active)} active trigger(s); fleet at peak per the sizing: {ev.sizing.fleet.gpus_at_peak} GPUs, "
        f"${ev.sizing.fleet.cost_per_hour_usd_at_peak:,.2f}/h.</p>"
    )


def _sizing(ev: Evaluation) -> str:
    parts = ["<h2>Sizing: the hypothesis</h2>"]
    for sized in ev.sizing.tiers:
        rows = [(r.decision, r.proposal, r.why, r.risk) for r in hypothesis_rows(ev.plan, sized)]
        parts.append(f"<h3>tier {_e(sized.sizing.tier.name)}</h3>")
        parts.append(_table(("Decision", "Proposal", "Why (formula with numbers)", "Risk to test"), rows))
        parts += [f"<p class=finding>finding: {_e(f)}</p>" for f in findings(sized)]
    return "".join(parts)


def _drift(ev: Evaluation) -> str:
    parts = ["<h2>Plan vs production</h2>"]
    for tier in ev.sections:
        rows = []
        for r in tier.drift:
            status = f"<span class={r.status.value}>{_e(r.status.value)}</span>"
            note = r.reason if r.status is Status.UNKNOWN else r.note
            ratio, plan, observed = describe_ratio(r), format_value(r.plan, r.unit), describe_observed(r)
            query = (
                f"<details><summary>PromQL</summary><code>{_e(r.observed.query)}</code></details>"
                if r.observed.query
                else ""
            )
            rows.append((_e(r.assumption), _e(plan), _e(observed), _e(ratio), status, _e(note), query))
        title = "the fleet (all tiers; the plan's workload as written)" if tier.tier == FLEET else f"tier {tier.tier}"
        parts.append(f"<h3>{_e(title)} <small>({_e(tier.observation.window)})</small></h3>")
        headers = ("assumption", "plan", "observed", "ratio", "status", "note", "query")
        parts.append(_table(headers, rows, raw=True))
    return "".join(parts)


def _triggers(ev: Evaluation) -> str:
    if not ev.triggers:
        return "<h2>Revisit-the-design triggers</h2><p>None holds.</p>"
    rows = []
    for t in ev.triggers:
        d = trigger_def(t.trigger)
        sev = f"<span class={t.severity.value}>{_e(t.severity.value)}</span>"
        rows.append((_e(d.title), _e(t.tier), sev, _e(t.state.value), _e(t.evidence.summary), _e(d.mitigation),
                     _e(d.revisit_when)))  # fmt: skip
    headers = ("trigger", "tier", "severity", "state", "evidence", "mitigation", "revisit when")
    return "<h2>Revisit-the-design triggers</h2>" + _table(headers, rows, raw=True)


def _forecast(inputs: ReportInputs) -> str:
    tz = inputs.evaluation.plan.workload.business_hours.timezone
    parts = ["<h2>Demand forecast, ramp and scale schedule</h2>"]
    for tier in inputs.evaluation.tiers:
        rec = tier.recommendation
        svg = demand_chart_svg(tier.tier, inputs.histories.get(tier.tier), inputs.outlooks.get(tier.tier), rec, tz)
        parts.append(f"<div class=chart>{svg}</div>")
        steps = rec.schedule if rec else ()
        if steps:
            rows = [_step_row(s, tz) for s in steps]
            parts.append(_table(("scale to", "by", "needed at", "demand (req/s)", "cold start + margin"), rows))
    return "".join(parts)


def _step_row(s: ScaleStep, tz: str) -> tuple[str, ...]:
    lead = f"{s.cold_start_seconds / 60:.0f} min + {s.margin_seconds / 60:.0f} min"
    return (str(s.replicas), local_clock(s.by, tz), local_clock(s.needed_at, tz), f"{s.demand_rps:.3g}", lead)


def _costs(ev: Evaluation) -> str:
    rows = []
    for tier in ev.tiers:
        r = tier.recommendation
        if r is None:
            continue
        now, rec = r.cost_per_request_usd(r.current.value), r.cost_per_request_usd(r.recommended)
        rows.append((tier.tier, _usd(r.cost_per_hour_usd_now), _usd(r.cost_per_hour_usd_recommended),
                     _usd(now, 5), _usd(rec, 5)))  # fmt: skip
    headers = ("tier", "$/h now", "$/h recommended", "$ per request now", "$ per request recommended")
    return "<h2>Cost</h2>" + _table(headers, rows)


def _usd(value: float | None, digits: int = 2) -> str:
    return "unknown" if value is None else f"${value:,.{digits}f}"
