"""The generated dashboards against Grafana's own published types (grafana-foundation-sdk, Grafana Labs'
dashboards-as-code library, generated from Grafana's schemas), not against this project's idea of the schema.

No Grafana runs here. Each committed dashboard is decoded into the SDK's `Dashboard` (panels, their options and
field config through the SDK's registered panel plugins, Prometheus targets through its dataquery types) and
encoded again: a key the published types do not have is dropped by that round trip, a value of the wrong type
or outside an enum fails it, so what comes back must hold every key and value that went in.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from monitor.dashboards import DASHBOARDS

REPO = Path(__file__).resolve().parents[2]
sdk = pytest.importorskip("grafana_foundation_sdk")

# Keys Grafana's own UI writes into exported dashboards that the published types leave out; Grafana reads them.
WRITTEN_BY_GRAFANA_NOT_IN_THE_TYPES = {
    "builtIn": "marks the built-in 'Annotations & Alerts' query, so Grafana does not add a second one",
    "definition": "the query variable's query as text, which Grafana's variable editor writes beside `query`",
}


def _round_trip(data: dict[str, Any]) -> Any:
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.cog.plugins import register_default_plugins
    from grafana_foundation_sdk.models.dashboard import Dashboard

    register_default_plugins()
    return json.loads(json.dumps(Dashboard.from_json(data), cls=JSONEncoder))


def _lost(sent: Any, back: Any, path: str = "") -> list[str]:
    """Every key or value of `sent` that `back` does not carry (a null is an absent key)."""
    if isinstance(sent, dict):
        if not isinstance(back, dict):
            return [f"{path}: came back as {type(back).__name__}"]
        out = []
        for key, value in sent.items():
            if value is None or key in WRITTEN_BY_GRAFANA_NOT_IN_THE_TYPES:
                continue
            out += [f"{path}.{key}"] if key not in back else _lost(value, back[key], f"{path}.{key}")
        return out
    if isinstance(sent, list):
        if not isinstance(back, list) or len(back) != len(sent):
            return [f"{path}: the list came back changed"]
        return [lost for i, (a, b) in enumerate(zip(sent, back, strict=True)) for lost in _lost(a, b, f"{path}[{i}]")]
    return [] if sent == back else [f"{path}: {sent!r} came back as {back!r}"]


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_the_dashboard_fits_grafanas_published_types(name: str) -> None:
    data = json.loads((REPO / "dashboards" / name).read_text())
    assert _lost(data, _round_trip(data)) == []


def test_the_round_trip_catches_what_the_types_do_not_have() -> None:
    """The check can fail: an unknown panel option and an unknown dashboard key are both reported."""
    data = json.loads((REPO / "dashboards" / sorted(DASHBOARDS)[0]).read_text())
    data["refreshEvery"] = "1m"
    panel = next(p for p in data["panels"] if p.get("type") == "timeseries")
    panel["options"]["legendPlacement"] = "bottom"
    lost = _lost(data, _round_trip(data))
    assert ".refreshEvery" in lost and any(path.endswith(".options.legendPlacement") for path in lost), lost
