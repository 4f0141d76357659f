"""`planwatch demo` end to end, as `make demo` runs it: history, fleetsim, Prometheus with the rules,
Alertmanager and planwatch on loopback. A drift scenario shows as a trigger in planwatch and as an alert in
Alertmanager; Ctrl-C stops every process the demo started."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from monitor.cli.demo import DEFAULT_PLAN
from monitor.plan import load_plan
from tests.harness.stack import wait_for

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def _running_under(workdir: Path) -> list[str]:
    """Command lines of live processes that mention the demo's folder (its children all do)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(workdir) in cmd and "pytest" not in cmd:
            found.append(cmd)
    return found


def _holds_against_demand(rec: dict[str, Any], most: int) -> None:
    """A recommendation on data serves what demand needs (and the floor), up to replicas.max, where it is capped
    and says so; its action is the move from the ready replicas to it."""
    needed = max(rec["needed_now"], rec["floor"])
    recommended, current = rec["recommended_replicas"], rec["current_replicas"]
    assert min(needed, most) <= recommended <= most, rec
    capped = [w for w in rec["warnings"] if w.startswith("the SLO needs") and f"replicas.max is {most}" in w]
    if needed > most:
        assert recommended == most and capped, rec
    if capped:  # also when a due schedule step or the reactive +1 goes past replicas.max
        assert recommended == most, rec
    move = "scale-up" if recommended > current else "scale-down" if recommended < current else "hold"
    assert rec["action"] == move, rec


def _until(what: str, probe: Callable[[], Any], timeout: float) -> Any:
    return wait_for(probe, timeout, what, interval=2, ignoring=(httpx.HTTPError, ValueError, KeyError))


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[tuple[dict[str, str], Path, subprocess.Popen[str]]]:
    workdir = tmp_path / "demo"
    argv = [sys.executable, "-m", "monitor", "demo", "--scenario", "long-prompts", "--days", "0.1", "--step", "60s",
            "--hold-scale", "0.002", "--workdir", str(workdir)]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "COLUMNS": "200"})  # fmt: skip
    try:
        urls: dict[str, str] = {}
        assert proc.stdout is not None
        for line in proc.stdout:
            match = re.match(r"\s+(planwatch|Prometheus|Alertmanager|fleetsim)\s+(http://\S+)", line)
            if match:
                urls[match.group(1)] = match.group(2).removesuffix("/fleet")
            if "Ctrl-C stops everything" in line:
                break
        assert len(urls) == 4, f"the demo did not come up: {urls}"
        yield urls, workdir, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=60)
        if proc.stdout is not None:
            proc.stdout.close()


def test_the_demo_shows_recommendations_a_trigger_and_its_alert_then_stops_cleanly(
    demo: tuple[dict[str, str], Path, subprocess.Popen[str]],
) -> None:
    urls, workdir, proc = demo
    planwatch, alertmanager = urls["planwatch"], urls["Alertmanager"]

    def judged() -> list[dict[str, Any]]:
        recs: list[dict[str, Any]] = httpx.get(f"{planwatch}/v1/recommendations").json()["recommendations"]
        return recs if recs and not any(r["stale"] for r in recs) else []

    recs = _until("recommendations on data", judged, 120)
    assert {r["tier"] for r in recs} == {"fast", "standard", "long-context", "fallback"}
    tiers = {t.name: t for t in load_plan(REPO / DEFAULT_PLAN).tiers}
    for rec in recs:
        _holds_against_demand(rec, tiers[rec["tier"]].replicas.max)
    # Long prompts need more long-context replicas (14 for the floor, the forecast's peak within a cold start;
    # 31-33 while requests queued for SLO-batch slots) than its replicas.max (9): the cap is exercised, not only
    # the easy case. (Not asserted on needed_now:
    # the demo's first hour mixes a quiet start with a growing queue, so the advice does not calibrate on it
    # and sizes now on the plan's model: 6-8 replicas in a run, 13 while it calibrated on the mixed window.)
    (long_context,) = (r for r in recs if r["tier"] == "long-context")
    assert long_context["floor"] > tiers["long-context"].replicas.max
    assert long_context["recommended_replicas"] == tiers["long-context"].replicas.max
    assert any("replicas.max" in w for w in long_context["warnings"])

    def prompt_trigger() -> list[dict[str, Any]]:
        body = httpx.get(f"{planwatch}/v1/triggers", params={"state": "all"}).json()
        return [t for t in body["triggers"] if t["id"] == "prompt-p95-above-plan"]

    assert _until("the prompt-p95 trigger in planwatch", prompt_trigger, 180)

    def prompt_alert() -> list[dict[str, Any]]:
        alerts = httpx.get(f"{alertmanager}/api/v2/alerts").json()
        return [a for a in alerts if a["labels"].get("alertname") == "PromptP95AbovePlan"]

    alert = _until("PromptP95AbovePlan at Alertmanager", prompt_alert, 240)[0]
    assert alert["labels"]["trigger"] == "prompt-p95-above-plan"
    assert alert["annotations"]["runbook"]

    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 0
    wait_for(lambda: _running_under(workdir) == [], 10, "every process of the demo to exit")
