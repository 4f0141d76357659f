"""Every query of every committed dashboard, run as Grafana would run it against a real Prometheus holding
fleetsim's history, the live emulator and planwatch's /metrics: each must succeed and return a number.

Grafana's variables are substituted the way Grafana does it: `$tier` becomes the regex of the values its
`label_values(...)` query finds (all selected, regex-escaped, `(a|b)`), `$__rate_interval` 5m (what Grafana
derives for a day-long range at a 15 s scrape interval), `$__interval` 15s; `${datasource}` is the server.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import pytest

from tests.dashboards.world import REPO, World, label_values, query
from tests.harness.stack import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RATE_INTERVAL = "5m"
INTERVAL = "15s"
_REGEX_SPECIAL = re.compile(r"[$^*{}\[\]'+?.()|]")
_LEFTOVER_VARIABLE = re.compile(r"\$(?!\d)\{?\w+|\[\[\w+\]\]")


@dataclass(frozen=True)
class Target:
    dashboard: str
    panel: str
    ref: str
    expr: str
    tier_query: str


def committed_targets() -> list[Target]:
    """Every target of every dashboard file in dashboards/, with the query of its `tier` variable."""
    out = []
    for path in sorted((REPO / "dashboards").glob("*.json")):
        doc = json.loads(path.read_text())
        tier = next(v for v in doc["templating"]["list"] if v["name"] == "tier")
        for panel in doc["panels"]:
            for target in panel.get("targets", []):
                out.append(Target(path.stem, panel["title"], target["refId"], target["expr"], tier["definition"]))
    return out


def grafana_regex(values: list[str]) -> str:
    """A multi-value variable as Grafana formats it for Prometheus: regex-escaped, in a PromQL string."""
    escaped = [_REGEX_SPECIAL.sub(lambda m: "\\\\" + m.group(0), v.replace("\\", "\\\\\\\\")) for v in values]
    return "(" + "|".join(escaped) + ")"


def substitute(expr: str, tiers: list[str]) -> str:
    expr = expr.replace("$__rate_interval", RATE_INTERVAL).replace("$__interval", INTERVAL)
    return re.sub(r"\$tier\b", lambda _: grafana_regex(tiers), expr)


def tiers_of(world: World, definition: str) -> list[str]:
    match = re.fullmatch(r"label_values\((.+), (\w+)\)", definition)
    assert match, definition
    return label_values(world.url, match.group(1), match.group(2))


def finite_values(body: dict[str, object]) -> list[float]:
    data = body.get("data")
    assert isinstance(data, dict)
    return [float(r["value"][1]) for r in data["result"] if math.isfinite(float(r["value"][1]))]


TARGETS = [pytest.param(t, id=f"{t.dashboard} | {t.panel} | {t.ref}") for t in committed_targets()]


@pytest.mark.parametrize("target", TARGETS)
def test_every_panel_query_returns_data(world: World, target: Target) -> None:
    tiers = tiers_of(world, target.tier_query)
    assert tiers, f"{target.tier_query} finds no tiers"
    expr = substitute(target.expr, tiers)
    assert not _LEFTOVER_VARIABLE.search(expr), f"a Grafana variable is left in {expr}"

    def answered() -> Any:
        body = query(world.url, expr)
        assert body["status"] == "success", f"{body.get('error')}\n{expr}"
        return finite_values(body)

    wait_for(answered, 15, f"data for {target.dashboard} / {target.panel} ({target.ref}):\n{expr}", interval=1.0)


def test_the_tier_variables_find_the_plans_tiers(world: World) -> None:
    capstone = {"fast", "standard", "long-context", "fallback"}
    assert set(label_values(world.url, "planwatch_plan_replicas", "tier")) == capstone
    assert set(label_values(world.url, "vllm:num_requests_running", "tier")) == capstone


@pytest.mark.parametrize(
    ("values", "regex"),
    [
        pytest.param(["fast", "long-context"], "(fast|long-context)", id="plain names are joined as alternatives"),
        pytest.param(["a.b", "c|d"], "(a\\\\.b|c\\\\|d)", id="regex characters are escaped inside the string"),
    ],
)
def test_variables_are_formatted_as_grafana_formats_them(values: list[str], regex: str) -> None:
    assert grafana_regex(values) == regex
    expr = 'x{tier=~"$tier"}[$__rate_interval] y[$__interval] label_replace(z, "a", "$1", "b", "(.+)")'
    assert substitute(expr, values) == f'x{{tier=~"{regex}"}}[5m] y[15s] label_replace(z, "a", "$1", "b", "(.+)")'
