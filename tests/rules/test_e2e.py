"""End to end: the generated rules in a real Prometheus, alerts delivered to a real Alertmanager (configured
with examples/alertmanager.yml), against fleetsim.

Each case backfills two hours of fleetsim history ending now (so the 1h windows are full from the first
evaluation: Prometheus reads the backfilled blocks from its data directory at start), then `fleetsim serve
--resume` continues the same series live. The plan's alerts have no `for:`: each is held on the history
Prometheus holds (a subquery over the hold, `monitor.rules.model.held_over`), and every hold is scaled down
(`hold_scale`, tests only) so a 30m hold takes 3s. The plan is the support copilot: sizing says it is consistent
(the capstone plan as written is under-provisioned, so its baseline would rightly alert), and it is one tier,
cheap to emulate.

The demand is a flat rate trace at the plan's average rate (`--rate-trace`, the same file for the backfill
and the live server), not fleetsim's weekly profile: the profile follows the wall clock, and on a weekend
night it gives the copilot ~36 requests an hour, under the rules' 50-request floor, so an alert the scenario
should raise would wait for Monday (CI at Saturday 02:20 New York timed out on PromptP95AbovePlan).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fleetsim.backfill import command_app
from fleetsim.promstack import AlertmanagerConfig, AlertmanagerProcess, PrometheusProcess, ScrapeJob, free_port
from monitor import queries as q
from monitor.plan import load_plan
from monitor.rules import render_plan_rules
from monitor.rules.drift import alert_name
from monitor.rules.thresholds import tier_thresholds
from tests.harness.stack import Stack, api_query, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PLAN = ROOT / "examples" / "support-copilot.yaml"
THRESHOLDS = tier_thresholds(load_plan(PLAN))["copilot"]
HOLD_SCALE = 1 / 600  # 30m -> 3s, 10m -> 1s, 1h -> 6s
DRIFT_TRIGGERS = (
    "prompt-p95-above-plan",
    "prefix-hit-below-plan",
    "traffic-above-peak",
    "burstier-than-planned",
    "kv-pressure",
    "tool-call-fanout",
)


@dataclass
class Running:
    prometheus: PrometheusProcess
    alertmanager: AlertmanagerProcess

    def delivered(self) -> list[dict[str, str]]:
        """Labels of the alerts Alertmanager holds (its v2 API), plus `receivers` it routed them to."""
        with urllib.request.urlopen(f"{self.alertmanager.url}/api/v2/alerts", timeout=10) as response:
            return [
                a["labels"] | {"receivers": ",".join(r["name"] for r in a["receivers"])} for a in json.load(response)
            ]

    def rule_alerts(self) -> list[dict[str, Any]]:
        """Pending and firing alerts as Prometheus sees them."""
        with urllib.request.urlopen(f"{self.prometheus.url}/api/v1/alerts", timeout=10) as response:
            alerts: list[dict[str, Any]] = json.load(response)["data"]["alerts"]
            return alerts

    def evaluated(self) -> bool:
        """Every rule group of the plan has run at least once."""
        with urllib.request.urlopen(f"{self.prometheus.url}/api/v1/rules", timeout=10) as response:
            groups = json.load(response)["data"]["groups"]
        return bool(groups) and all(not g["lastEvaluation"].startswith("0001") for g in groups)


@pytest.fixture
def run_scenario(tmp_path: Path) -> Iterator[Callable[[str], Running]]:
    stack = Stack(tmp_path / "stack")
    servers: list[subprocess.Popen[bytes]] = []

    def start(scenario: str) -> Running:
        work = tmp_path / scenario
        work.mkdir()
        port = free_port()
        data, state, file_sd = work / "data", work / "state.json", work / "targets.json"
        demand = _flat_demand(work / "demand.csv", load_plan(PLAN).workload.arrival.average_rps)
        backfilled = CliRunner().invoke(command_app(), [
            "backfill", str(PLAN), "--prometheus-data", str(data), "--days", str(2 / 24), "--step", "15s",
            "--end", "now", "--scenario", scenario, "--instance", f"127.0.0.1:{port}", "--state-out", str(state),
            "--seed", "7",
            "--rate-trace", str(demand), "--rate-trace-as-is",
        ])  # fmt: skip
        assert backfilled.exit_code == 0, backfilled.output
        rules = work / "rules.yml"
        rules.write_text(render_plan_rules(load_plan(PLAN), "examples/support-copilot.yaml", hold_scale=HOLD_SCALE))
        with (work / "serve.log").open("wb") as log:
            servers.append(subprocess.Popen(
                [sys.executable, "-m", "fleetsim.cli", "serve", str(PLAN), "--scenario", scenario, "--listen",
                 f"127.0.0.1:{port}", "--file-sd", str(file_sd), "--resume", str(state), "--seed", "7",
                 "--dcgm-interval", "5", "--rate-trace", str(demand), "--rate-trace-as-is"],
                stdout=subprocess.DEVNULL, stderr=log, env={**os.environ, "PYTHONPATH": str(ROOT)},
            ))  # fmt: skip
        wait_for(file_sd.exists, 60, "fleetsim's file_sd")
        alertmanager = stack.alertmanager(
            AlertmanagerConfig(raw_yaml=(ROOT / "examples" / "alertmanager.yml").read_text())
        )
        prometheus = stack.prometheus(
            [ScrapeJob("fleetsim", file_sd=(file_sd,))], rule_files=[rules], data_dir=data,
            alertmanagers=[alertmanager.address],
            # A first notification sent before the Alertmanager is discovered is retried only after the resend
            # delay (1m by default).
            extra_args=("--rules.alert.resend-delay=1s",),
        )  # fmt: skip
        return Running(prometheus, alertmanager)

    try:
        yield start
    finally:
        stack.close()
        for server in servers:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(5)


def _flat_demand(path: Path, rps: float) -> Path:
    """A rate trace of one rate at every hour (it repeats outside its span)."""
    path.write_text("window_start_s,rate_rps\n" + "".join(f"{hour * 3600},{rps}\n" for hour in range(24)))
    return path


def _value(url: str, expr: str) -> float | None:
    result = api_query(url, expr)
    return float(result[0]["value"][1]) if result else None


def test_long_prompts_reach_alertmanager_as_prompt_p95_above_plan(run_scenario: Callable[[str], Running]) -> None:
    running = run_scenario("long-prompts")

    def arrived() -> list[dict[str, str]]:
        return [a for a in running.delivered() if a.get("alertname") == "PromptP95AbovePlan"]

    alerts = wait_for(arrived, 90, "PromptP95AbovePlan at Alertmanager")
    by_tier = {a["tier"]: a for a in alerts}
    assert by_tier["copilot"] == {
        "alertname": "PromptP95AbovePlan",
        "severity": "warning",
        "trigger": "prompt-p95-above-plan",
        "tier": "copilot",
        "plan": "support-copilot",
        "model_name": "meta-llama/Llama-3.3-70B-Instruct",
        "receivers": "tickets",  # examples/alertmanager.yml: warnings open a ticket
    }
    # Prompts clipped to max_model_len 8192 sit in the +Inf bucket, so the p95 reads as the last bound.
    p95 = _value(running.prometheus.url, q.PROMPT_TOKENS_P95.for_tier({"tier": "copilot"}, window="1h"))
    assert p95 is not None and p95 > THRESHOLDS["prompt_p95"].value


def test_baseline_fires_no_drift_alert(run_scenario: Callable[[str], Running]) -> None:
    running = run_scenario("baseline")
    url = running.prometheus.url
    # The observed side of the drift rules has data, and it is where the plan says.
    wait_for(lambda: _value(url, q.PROMPT_TOKENS_P95.for_tier({"tier": "copilot"}, window="1h")), 30, "prompt p95")
    observed = {
        "prompt p95": _value(url, q.PROMPT_TOKENS_P95.for_tier({"tier": "copilot"}, window="1h")),
        "prefix hit": _value(url, q.PREFIX_CACHE_HIT_RATIO.for_tier({"tier": "copilot"}, window="1h")),
        "calls": _value(url, q.CALLS_PER_USER_REQUEST.for_tier({"tier": "copilot"}, window="1h")),
    }
    assert observed["prompt p95"] is not None and observed["prompt p95"] < THRESHOLDS["prompt_p95"].value, observed
    assert observed["prefix hit"] is not None and observed["prefix hit"] > THRESHOLDS["prefix_hit_rate"].value
    assert observed["calls"] is not None and observed["calls"] < THRESHOLDS["calls_per_request"].value, observed
    drift = {alert_name(t) for t in DRIFT_TRIGGERS}
    wait_for(running.evaluated, 30, "the first evaluation of the rules")
    deadline = time.monotonic() + 15  # more than every scaled hold (the longest, 1h, is 6s)
    while time.monotonic() < deadline:
        seen = [a["labels"] for a in running.rule_alerts() if a["labels"]["alertname"] in drift]
        assert not seen, f"drift alerts pending or firing on the baseline: {seen}"
        time.sleep(1)
    assert not [a for a in running.delivered() if a.get("alertname") in drift]
