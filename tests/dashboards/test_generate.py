"""The dashboards are generated from the catalog: the committed JSON is exactly the generator's output, every
target comes from a catalog or planwatch query, and the files are well-formed Grafana (schema 39) dashboards."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from monitor import queries
from monitor.dashboards import DASHBOARDS, check, main, planwatch_queries
from monitor.dashboards.grafana import SCHEMA_VERSION, Dashboard, Panel, Row, Series, grafana_expr, to_json
from tests.dashboards.world import REPO

DASHBOARD_DIR = REPO / "dashboards"
COMMITTED = {name: json.loads((DASHBOARD_DIR / name).read_text()) for name in DASHBOARDS}
EACH = [pytest.param(doc, id=name) for name, doc in COMMITTED.items()]
EXPORTER = REPO / "monitor" / "service" / "exporter.py"


def panels(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in doc["panels"] if p["type"] != "row"]


def test_regenerating_changes_nothing() -> None:
    assert check(DASHBOARD_DIR) == [], "run `python -m monitor.dashboards` and commit dashboards/*.json"
    assert sorted(p.name for p in DASHBOARD_DIR.glob("*.json")) == sorted(DASHBOARDS)


def test_the_check_names_a_stale_file_and_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--out", str(tmp_path)]) == 0
    assert main(["--check", "--out", str(tmp_path)]) == 0
    (tmp_path / "gpus.json").write_text("{}\n")
    assert main(["--check", "--out", str(tmp_path)]) == 1
    assert "gpus.json is not what the generator writes" in capsys.readouterr().err


@pytest.mark.parametrize(("name", "build"), DASHBOARDS.items())
def test_every_target_is_a_catalog_or_planwatch_query(name: str, build: Any) -> None:
    known = set(queries.ALL) | set(planwatch_queries.ALL)
    dashboard: Dashboard = build()
    for panel in dashboard.panels():
        for series in panel.series:
            assert series.query in known, f"{name} / {panel.title}: {series.query.name} is in no catalog"
    exprs = [t["expr"] for p in panels(COMMITTED[name]) for t in p["targets"]]
    assert exprs == [s.expr() for p in dashboard.panels() for s in p.series]


def test_planwatch_queries_name_metrics_the_exporter_exports() -> None:
    exported = set(re.findall(r'"(planwatch_[a-z_]+)"', EXPORTER.read_text()))
    for query in planwatch_queries.ALL:
        for metric in re.findall(r"planwatch_[a-z_]+", query.template):
            assert metric in exported, f"{metric} ({query.metric}) is not exported by monitor/service/exporter.py"


@pytest.mark.parametrize("doc", EACH)
def test_current_schema_with_datasource_and_multi_value_tier_variables(doc: dict[str, Any]) -> None:
    assert doc["schemaVersion"] == SCHEMA_VERSION == 39
    variables = {v["name"]: v for v in doc["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    tier = variables["tier"]
    assert tier["multi"] and tier["includeAll"] and tier["datasource"]["uid"] == "${datasource}"
    assert re.fullmatch(r"label_values\((planwatch_plan_replicas|vllm:num_requests_running), tier\)",
                        tier["definition"])  # fmt: skip


@pytest.mark.parametrize("doc", EACH)
def test_panels_are_current_types_on_the_datasource_variable(doc: dict[str, Any]) -> None:
    assert {p["type"] for p in doc["panels"]} <= {"row", "timeseries", "stat", "table"}
    for panel in panels(doc):
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)) and panel["targets"]
        assert panel["datasource"]["uid"] == "${datasource}"
        assert all(t["datasource"]["uid"] == "${datasource}" for t in panel["targets"])
        for target in panel["targets"]:
            assert "{{tier}}" not in target["legendFormat"] or '=~"$tier"' in target["expr"], panel["title"]
        if panel["type"] != "timeseries":
            assert all(t["instant"] and not t["range"] for t in panel["targets"]), panel["title"]
        if panel["type"] == "table":
            assert all(t["format"] == "table" for t in panel["targets"])


@pytest.mark.parametrize("doc", EACH)
def test_the_grid_has_no_overlaps(doc: dict[str, Any]) -> None:
    cells: set[tuple[int, int]] = set()
    ids = [p["id"] for p in doc["panels"]]
    assert len(ids) == len(set(ids))
    for panel in doc["panels"]:
        g = panel["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24
        area = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not area & cells, f"{panel['title']} overlaps another panel"
        cells |= area


def test_dashboard_uids_are_unique_and_stable() -> None:
    uids = [doc["uid"] for doc in COMMITTED.values()]
    assert uids == ["planwatch-plan-vs-production", "planwatch-forecast-scaling", "planwatch-gpus"]


def test_plan_series_are_dashed_next_to_the_observation() -> None:
    doc = COMMITTED["plan-vs-production.json"]
    ttft = next(p for p in doc["panels"] if p["title"] == "TTFT p95 vs SLO")
    assert [t["refId"] for t in ttft["targets"]] == ["A", "B"]
    (override,) = ttft["fieldConfig"]["overrides"]
    assert override["matcher"] == {"id": "byFrameRefID", "options": "B"}
    assert {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}} in override["properties"]
    assert "catalog `tier:vllm_time_to_first_token_seconds:p95_5m`" in ttft["description"]


def test_the_triggers_table_shows_active_triggers_with_their_severity() -> None:
    doc = COMMITTED["plan-vs-production.json"]
    table = next(p for p in doc["panels"] if p["title"] == "Active triggers")
    (target,) = table["targets"]
    assert target["expr"].startswith('planwatch_trigger_active{tier=~"$tier"} == 1')
    assert 'planwatch_trigger_active{tier="fleet"} == 1' in target["expr"]
    (organize,) = table["transformations"]
    assert organize["options"]["excludeByName"] == {"Time": True, "__name__": True, "job": True, "instance": True,
                                                    "Value": True}  # fmt: skip


def test_a_window_replaces_the_rate_interval_for_rare_events() -> None:
    expr = grafana_expr(queries.COLD_START_P95, "1h")
    assert "[1h]" in expr and "offset 1h" in expr and "$__rate_interval" not in expr and '=~"$tier"' in expr
    assert grafana_expr(queries.RUNNING) == queries.RUNNING.for_grafana()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param({"series": ()}, "has 0 series", id="a panel needs a series"),
        pytest.param({"width": 25}, "width 25", id="a panel fits the 24-column grid"),
        pytest.param(
            {"kind": "table", "series": (Series(queries.RUNNING),) * 2}, "one series", id="a table, one query"
        ),
    ],
)
def test_bad_panels_are_refused(change: dict[str, Any], message: str) -> None:
    fields: dict[str, Any] = {"title": "p", "description": "d", "series": (Series(queries.RUNNING),)} | change
    with pytest.raises(ValueError, match=message):
        Panel(**fields)


def test_panels_are_laid_out_below_their_row() -> None:
    one = Dashboard("u", "t", "d", "m", (Row("r", (Panel("p", "d", (Series(queries.RUNNING),)),)),))
    assert json.loads(to_json(one))["panels"][1]["gridPos"] == {"h": 8, "w": 12, "x": 0, "y": 1}
