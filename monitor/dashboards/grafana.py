"""Grafana dashboards as typed values, rendered to dashboard JSON (schema 39: Grafana 10.4 and 11). Pure.

A panel is a list of `Series`; each series is a `Query` (the catalog's, or planwatch's own metrics from
`monitor.dashboards.planwatch_queries`) rendered for Grafana: the tiers chosen in `$tier`, grouped by tier,
over Grafana's `$__rate_interval`. Nothing here writes PromQL, so the advisor, the recording rules and the
dashboards read the same expressions. A series marked `plan=True` is the plan's value (an SLO, a planned
length, a sized capacity) and is drawn dashed next to what production does.

Every panel's description ends with the queries behind it (their catalog names and meanings), so a number
on a dashboard can be traced to the query the advisor runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from monitor.queries import catalog
from monitor.queries.query import Query, Rendering, validate_duration

__all__ = [
    "DATASOURCE",
    "SCHEMA_VERSION",
    "TIER_LABEL",
    "TIER_VARIABLE",
    "Dashboard",
    "Panel",
    "Row",
    "Series",
    "Status",
    "grafana_expr",
    "render",
    "to_json",
]

SCHEMA_VERSION = 39
# The tier is the `tier` label everywhere a dashboard looks: on planwatch's own metrics, and on the vLLM,
# dcgm and recorded series as the recording rules group them by default.
TIER_LABEL = "tier"
TIER_VARIABLE = "tier"
DATASOURCE: Mapping[str, str] = {"type": "prometheus", "uid": "${datasource}"}
_GRID_WIDTH = 24
_MAX_SERIES = 26  # refIds A-Z
_HIDDEN_COLUMNS = ("Time", "__name__", "job", "instance")
_DASHED = {"fill": "dash", "dash": [10, 10]}
# A menu of the other planwatch dashboards, keeping the time range and the chosen tiers.
_LINKS: Mapping[str, Any] = {
    "asDropdown": False,
    "icon": "external link",
    "includeVars": True,
    "keepTime": True,
    "tags": ["planwatch"],
    "targetBlank": False,
    "title": "planwatch",
    "type": "dashboards",
}

PanelKind = Literal["timeseries", "stat", "table"]


def grafana_expr(query: Query, window: str | None = None) -> str:
    """`query` for a dashboard. `window` replaces `$__rate_interval` for queries about rare events (pods
    created within an hour), whose natural window is much longer than a rate window."""
    if window is None:
        return query.for_grafana(TIER_LABEL, TIER_VARIABLE)
    matcher = f'{TIER_LABEL}=~"${TIER_VARIABLE}"'
    return query.render(Rendering((matcher,), (TIER_LABEL,), validate_duration(window), "$__interval"))


@dataclass(frozen=True)
class Series:
    """One target of a panel. `legend` is a Grafana legend format (`{{tier}} p95`)."""

    query: Query
    legend: str = "{{tier}}"
    plan: bool = False
    window: str | None = None
    right_axis: bool = False

    def expr(self) -> str:
        return grafana_expr(self.query, self.window)


@dataclass(frozen=True)
class Status:
    """A value shown as a word with a colour (0 -> "ok" green), in stats and table cells."""

    value: str
    text: str
    color: str


@dataclass(frozen=True)
class Panel:
    """A timeseries, stat or table. Tables and stats run instant queries; `columns` renames and orders a
    table's columns (Time, the metric name, job, instance and an unnamed Value are hidden); `status` maps
    values to coloured words, in a table on the column (as renamed) `status_column` names."""

    title: str
    description: str
    series: tuple[Series, ...]
    kind: PanelKind = "timeseries"
    unit: str = "short"
    width: int = 12
    height: int = 8
    min: float | None = None
    max: float | None = None
    right_unit: str | None = None
    status: tuple[Status, ...] = ()
    columns: Mapping[str, str] = field(default_factory=dict)
    status_column: str | None = None
    no_value: str | None = None

    def __post_init__(self) -> None:
        if not 1 <= len(self.series) <= _MAX_SERIES:
            raise ValueError(f"panel {self.title!r} has {len(self.series)} series, not 1-{_MAX_SERIES}")
        if not 1 <= self.width <= _GRID_WIDTH:
            raise ValueError(f"panel {self.title!r}: width {self.width} is not 1-{_GRID_WIDTH}")
        if self.kind == "table" and len(self.series) != 1:
            raise ValueError(f"table {self.title!r} takes one series")
        if self.kind == "table" and self.status and self.status_column not in self.columns.values():
            raise ValueError(f"table {self.title!r}: status_column must be one of its columns")


@dataclass(frozen=True)
class Row:
    title: str
    panels: tuple[Panel, ...]


@dataclass(frozen=True)
class Dashboard:
    """`tier_values` is the metric whose `tier` label values fill the `$tier` variable."""

    uid: str
    title: str
    description: str
    tier_values: str
    rows: tuple[Row, ...]
    tags: tuple[str, ...] = ("planwatch",)
    time_from: str = "now-6h"

    def panels(self) -> Iterator[Panel]:
        for row in self.rows:
            yield from row.panels


def to_json(dashboard: Dashboard) -> str:
    """The dashboard file: stable key order, two-space indent, a final newline (diff-friendly)."""
    return json.dumps(render(dashboard), indent=2, ensure_ascii=False) + "\n"


def render(d: Dashboard) -> dict[str, Any]:
    return {
        "annotations": {"list": [_builtin_annotations()]},
        "description": d.description,
        "editable": False,
        "fiscalYearStartMonth": 0,
        "graphTooltip": 1,
        "id": None,
        "links": [dict(_LINKS)],
        "panels": _layout(d),
        "refresh": "1m",
        "schemaVersion": SCHEMA_VERSION,
        "tags": list(d.tags),
        "templating": {"list": [_datasource_variable(), _tier_variable(d.tier_values)]},
        "time": {"from": d.time_from, "to": "now"},
        "timepicker": {},
        "timezone": "browser",
        "title": d.title,
        "uid": d.uid,
        "version": 1,
        "weekStart": "",
    }


def _builtin_annotations() -> dict[str, Any]:
    return {
        "builtIn": 1,
        "datasource": {"type": "grafana", "uid": "-- Grafana --"},
        "enable": True,
        "hide": True,
        "iconColor": "rgba(0, 211, 255, 1)",
        "name": "Annotations & Alerts",
        "type": "dashboard",
    }


def _datasource_variable() -> dict[str, Any]:
    return {"current": {}, "hide": 0, "includeAll": False, "label": "Data source", "multi": False,
            "name": "datasource", "options": [], "query": "prometheus", "refresh": 1, "regex": "",
            "type": "datasource"}  # fmt: skip


def _tier_variable(metric: str) -> dict[str, Any]:
    definition = f"label_values({metric}, {TIER_LABEL})"
    return {
        "current": {},
        "datasource": dict(DATASOURCE),
        "definition": definition,
        "hide": 0,
        "includeAll": True,
        "label": "Tier",
        "multi": True,
        "name": TIER_VARIABLE,
        "options": [],
        "query": {"qryType": 1, "query": definition, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
        "refresh": 2,
        "regex": "",
        "sort": 1,
        "type": "query",
    }


def _layout(d: Dashboard) -> list[dict[str, Any]]:
    """Rows top to bottom; inside a row, panels left to right, wrapping at the grid's 24 columns."""
    out: list[dict[str, Any]] = []
    y = 0
    for row in d.rows:
        out.append({"collapsed": False, "gridPos": {"h": 1, "w": _GRID_WIDTH, "x": 0, "y": y},
                    "id": len(out) + 1, "panels": [], "title": row.title, "type": "row"})  # fmt: skip
        y += 1
        x, line_height = 0, 0
        for panel in row.panels:
            if x + panel.width > _GRID_WIDTH:
                x, y, line_height = 0, y + line_height, 0
            grid = {"h": panel.height, "w": panel.width, "x": x, "y": y}
            out.append(_panel(panel, len(out) + 1, grid))
            x, line_height = x + panel.width, max(line_height, panel.height)
        y += line_height
    return out


def _panel(p: Panel, panel_id: int, grid: dict[str, int]) -> dict[str, Any]:
    instant = p.kind != "timeseries"
    targets = [_target(s, ref, instant, p.kind == "table") for s, ref in zip(p.series, _ref_ids(), strict=False)]
    panel: dict[str, Any] = {
        "datasource": dict(DATASOURCE),
        "description": _describe(p),
        "fieldConfig": {"defaults": _defaults(p), "overrides": _overrides(p)},
        "gridPos": grid,
        "id": panel_id,
        "options": _options(p),
        "targets": targets,
        "title": p.title,
        "type": p.kind,
    }
    if p.kind == "table":
        panel["transformations"] = [_organize(p.columns)]
    return panel


def _ref_ids() -> Iterator[str]:
    for i in range(_MAX_SERIES):
        yield chr(ord("A") + i)


def _target(s: Series, ref: str, instant: bool, table: bool) -> dict[str, Any]:
    target: dict[str, Any] = {
        "datasource": dict(DATASOURCE),
        "editorMode": "code",
        "expr": s.expr(),
        "instant": instant,
        "legendFormat": s.legend,
        "range": not instant,
        "refId": ref,
    }
    if table:
        target["format"] = "table"
    return target


def _describe(p: Panel) -> str:
    lines = [p.description, "", "Queries:"]
    for s, ref in zip(p.series, _ref_ids(), strict=False):
        role = " (plan)" if s.plan else ""
        window = f", over {s.window}" if s.window else ""
        source = f"catalog `{s.query.name}`" if catalog.BY_NAME.get(s.query.name) is s.query else f"`{s.query.metric}`"
        lines.append(f"- {ref}{role}: {source}{window}: {s.query.description}")
    return "\n".join(lines)


def _defaults(p: Panel) -> dict[str, Any]:
    defaults: dict[str, Any] = {
        "color": {"mode": "palette-classic" if p.kind == "timeseries" else "thresholds"},
        "thresholds": {"mode": "absolute", "steps": [{"color": "text", "value": None}]},
        "unit": p.unit,
    }
    if p.kind == "timeseries":
        defaults["custom"] = {"fillOpacity": 0, "lineWidth": 1, "showPoints": "never", "spanNulls": False}
    if p.min is not None:
        defaults["min"] = p.min
    if p.max is not None:
        defaults["max"] = p.max
    if p.status and p.kind != "table":
        defaults["mappings"] = [_mappings(p.status)]
    if p.no_value is not None:
        defaults["noValue"] = p.no_value
    return defaults


def _mappings(status: tuple[Status, ...]) -> dict[str, Any]:
    options = {s.value: {"color": s.color, "index": i, "text": s.text} for i, s in enumerate(status)}
    return {"options": options, "type": "value"}


def _overrides(p: Panel) -> list[dict[str, Any]]:
    out = []
    for s, ref in zip(p.series, _ref_ids(), strict=False):
        props: list[dict[str, Any]] = []
        if s.plan and p.kind == "timeseries":
            props += [{"id": "custom.lineStyle", "value": dict(_DASHED)}, {"id": "custom.lineWidth", "value": 2}]
        if s.right_axis:
            props += [{"id": "custom.axisPlacement", "value": "right"}, {"id": "unit", "value": p.right_unit}]
        if props:
            out.append({"matcher": {"id": "byFrameRefID", "options": ref}, "properties": props})
    if p.kind == "table" and p.status:
        props = [{"id": "mappings", "value": [_mappings(p.status)]},
                 {"id": "custom.cellOptions", "value": {"type": "color-text"}}]  # fmt: skip
        out.append({"matcher": {"id": "byName", "options": p.status_column}, "properties": props})
    return out


def _options(p: Panel) -> dict[str, Any]:
    if p.kind == "timeseries":
        return {
            "legend": {"calcs": [], "displayMode": "list", "placement": "bottom", "showLegend": True},
            "tooltip": {"mode": "multi", "sort": "desc"},
        }
    if p.kind == "stat":
        return {
            "colorMode": "value",
            "graphMode": "none",
            "justifyMode": "auto",
            "orientation": "auto",
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "textMode": "value_and_name",
        }
    return {"cellHeight": "sm", "footer": {"show": False}, "showHeader": True}


def _organize(columns: Mapping[str, str]) -> dict[str, Any]:
    """Keep the named columns, renamed and in the given order; hide Time, the metric name and target labels."""
    hidden = {name: True for name in _HIDDEN_COLUMNS if name not in columns}
    if "Value" not in columns:
        hidden["Value"] = True
    return {
        "id": "organize",
        "options": {
            "excludeByName": hidden,
            "indexByName": {name: i for i, name in enumerate(columns)},
            "renameByName": {k: v for k, v in columns.items() if k != v},
        },
    }
