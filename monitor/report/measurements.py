"""The report's measurement-plan section: each item of the capstone's Step 6 with its status and evidence."""

from __future__ import annotations

import html
from collections.abc import Sequence

from monitor.measurements.export import item_to_dict
from monitor.measurements.model import Item, Status

__all__ = ["measurements_section"]

_CLASS = {Status.MEASURED: "ok", Status.PARTLY: "warn", Status.NOT_YET: "unknown"}


def measurements_section(items: Sequence[Item]) -> str:
    if not items:
        return ""
    rows = []
    for item in items:
        d = item_to_dict(item)
        dates = f"{d['from'][:16]} to {d['to'][:16]}" if d["from"] and d["to"] else "-"
        cells = (
            html.escape(item.title),
            html.escape(item.tier),
            f'<span class="{_CLASS[item.status]}">{html.escape(item.status.value)}</span>',
            "<br>".join(html.escape(e) for e in item.evidence),
            html.escape(dates),
            "<br>".join(html.escape(x) for x in (item.engine, item.hardware) if x) or "-",
        )
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("Item", "Tier", "Status", "Evidence", "Dates", "Engine / GPU"))
    return (
        "<h2>Measurement plan</h2><p><small>A capacity plan without a measurement plan is a guess with a "
        "spreadsheet: each item measured, partly or not yet, written down with dates, engine and hardware.</small></p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
