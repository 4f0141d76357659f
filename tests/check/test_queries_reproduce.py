"""Every query `check` attaches to a value reproduces that value when rerun against the same Prometheus.

History: six hours of the capstone fleet (fleetsim backfill, 60-second steps) in a real Prometheus. Checked
twice: with the capstone plan as it is (one model per tier), and with a plan whose one tier selects the whole
namespace, so it serves two models (llama-8b and llama-70b): there a per-model quantile query returns one
series per model, and only the query that aggregates them as the value was computed gives the stored number.
Each known value of every tier's observations, and of the fleet view (the tiers together: sums, weighted
means, the merged token quantiles, the long window's peak and mean of the summed rate), is rerun at the
evaluation's time as an instant query; it must return exactly one series, and its value must equal the stored
one (to float rounding). The long window is 5 h, so the six hours of history cover it and the peak is known.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from fleetsim.fleet import NAMESPACE
from monitor.cli.main import build_app
from monitor.source import source_from_settings
from tests.check.test_scenarios import REPO
from tests.harness.stack import Stack

pytestmark = pytest.mark.integration

CAPSTONE = REPO / "examples" / "capstone.yaml"
END = "2026-12-01T21:00:00Z"


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    stack = Stack(tmp_path_factory.mktemp("reproduce"))
    try:
        yield stack.fleet_history(CAPSTONE, days=0.25, step="60s", end=END).url
    finally:
        stack.close()


def _two_model_plan(out: Path) -> Path:
    """The capstone plan with one tier over the whole namespace: every replica, both models."""
    plan = yaml.safe_load(CAPSTONE.read_text())
    standard = next(t for t in plan["tiers"] if t["name"] == "standard")
    everything = {k: v for k, v in standard.items() if k != "routing"}
    plan["tiers"] = [{**everything, "name": "everything", "selector": {"namespace": NAMESPACE}}]
    out.write_text(yaml.safe_dump(plan))
    return out


def _checked(url: str, plan: Path) -> dict[str, Any]:
    argv = ["check", str(plan), "--prometheus", url, "--at", END, "--format", "json", "--no-forecast",
            "--long-window", "5h"]  # fmt: skip
    result = CliRunner().invoke(build_app(), argv)
    assert result.exit_code in (0, 1), result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _attached(data: dict[str, Any]) -> list[tuple[str, float, str]]:
    """(where, stored value, attached query) of every known value of every tier and the fleet view that
    carries a query."""
    return [
        (f"{tier['name']}.{name}", m["value"], m["query"])
        for tier in [*data["tiers"], {**data["fleet"], "name": "fleet"}]
        for name, m in tier["observations"].items()
        if m["value"] is not None and m["query"]
    ]


@pytest.mark.parametrize(
    "plan",
    [
        pytest.param(lambda tmp: CAPSTONE, id="a plan with one model per tier"),
        pytest.param(_two_model_plan, id="a tier serving two models"),
    ],
)
def test_every_attached_query_reproduces_its_value(prometheus: str, plan: Any, tmp_path: Path) -> None:
    data = _checked(prometheus, plan(tmp_path / "plan.yaml"))
    attached = _attached(data)
    names = {where.split(".", 1)[1] for where, _, _ in attached}
    assert {"ttft_p95", "request_rate", "bad_fraction:ttft:5m", "prompt_p95"} <= names, sorted(names)
    fleet = {where.split(".", 1)[1] for where, _, _ in attached if where.startswith("fleet.")}
    assert {"request_rate", "peak_rate", "average_rate", "prompt_p95", "output_p50", "error_ratio"} <= fleet, fleet
    source = source_from_settings({"url": prometheus, "timeout": 30})
    wrong = []
    for where, stored, query in attached:
        samples = source.instant(query, at=data["evaluated_at"]).samples
        rerun = [s.value for s in samples]
        if len(rerun) != 1 or not math.isclose(rerun[0], stored, rel_tol=1e-9, abs_tol=1e-12):
            wrong.append(f"{where}: stored {stored!r}, rerun {rerun!r}: {query}")
    assert not wrong, "\n".join(wrong)
