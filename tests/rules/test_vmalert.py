"""The committed rules under vmalert, VictoriaMetrics' rule engine, against a real VictoriaMetrics: the first
step past one Prometheus (issue #15) runs the same `rules/` files there.

- Every rule file loads and every rule evaluates without an error (MetricsQL accepts each expression, its
  subqueries and templates).
- Every recording rule of `rules/recording.yml`, replayed by vmalert over 90 minutes of the support copilot's
  fleetsim history at business hours (`-replay.*`, which evaluates a time range of stored data and writes the
  results back), records what Prometheus computes from the same history at the same instants: the same series
  and the same values, within the two engines' documented difference in range windows (README,
  "VictoriaMetrics": VictoriaMetrics' window excludes its left bound and does not extrapolate).
"""

from __future__ import annotations

import json
import math
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetsim.promstack import BinaryNotFound, PrometheusProcess, find_binary, free_port
from fleetsim.victoria import VictoriaMetricsProcess
from monitor.plan import load_plan
from tests.fleetsim_backfill.helpers import backfill_text, spec_for
from tests.harness.stack import Stack, api_query, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "rules"
END = 1_796_139_000.0  # 2026-12-01T15:30:00Z: 10:30 in New York, the copilot near its morning peak
HISTORY = 5400.0  # the 1h max-rate rule needs an hour before the first replayed instant, and its 1m windows
REPLAY = 600.0
# One event more or less at a 5-minute window's edge: a rate of rare events (errors) can differ by this much.
ONE_EVENT_PER_WINDOW = 1 / 300


def _vmalert() -> str:
    try:
        return find_binary("vmalert")
    except BinaryNotFound as exc:
        pytest.fail(f"{exc} (vmalert comes with Debian's victoria-metrics package)", pytrace=False)


def _recording_rules() -> list[tuple[str, str]]:
    data = yaml.safe_load((RULES / "recording.yml").read_text())
    return [(r["record"], r["expr"]) for g in data["groups"] for r in g["rules"] if "record" in r]


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response) if response.headers.get_content_type() == "application/json" else response.read()


@dataclass(frozen=True)
class Replayed:
    prometheus: PrometheusProcess
    victoria: VictoriaMetricsProcess


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replayed]:
    """The same fleetsim history in a Prometheus and a VictoriaMetrics; vmalert replays recording.yml over the
    last 10 minutes into the VictoriaMetrics, once a minute (`-datasource.queryStep=0s`: the replay's step is the
    evaluation interval, not vmalert's default lookback step of 5 minutes)."""
    vmalert = _vmalert()
    text = backfill_text(spec_for(load_plan(REPO / "examples" / "support-copilot.yaml"), END - HISTORY, END))
    stack = Stack(tmp_path_factory.mktemp("vmalert-replay"))
    try:
        prometheus = stack.prometheus(openmetrics=text)
        victoria = stack.victoria_metrics(openmetrics=text)
        argv = [vmalert, f"-rule={RULES / 'recording.yml'}", f"-datasource.url={victoria.url}",
                f"-remoteWrite.url={victoria.url}", f"-replay.timeFrom={_iso(END - REPLAY)}",
                f"-replay.timeTo={_iso(END)}", "-evaluationInterval=1m", "-datasource.queryStep=0s",
                "-replay.rulesDelay=0s", "-replay.disableProgressBar", "-loggerLevel=WARN"]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300)  # no rule reads another's series
        assert done.returncode == 0, done.stderr[-3000:]
        _get(f"{victoria.url}/internal/force_flush")
        yield Replayed(prometheus, victoria)
    finally:
        stack.close()


def _recorded(victoria: VictoriaMetricsProcess, record: str) -> dict[tuple[tuple[str, str], ...], list[tuple]]:
    """Every point vmalert wrote for `record`, per label set (without __name__), as stored (no lookback)."""
    query = urllib.parse.urlencode({"match[]": record, "start": str(END - REPLAY - 1), "end": str(END + 1)})
    out: dict[tuple[tuple[str, str], ...], list[tuple]] = {}
    for line in _get(f"{victoria.url}/api/v1/export?{query}").decode().splitlines():
        series = json.loads(line)
        labels = tuple(sorted((k, v) for k, v in series["metric"].items() if k != "__name__"))
        out[labels] = list(zip((t / 1000 for t in series["timestamps"]), series["values"], strict=True))
    return out


def _tolerance(record: str, expr: str) -> tuple[float, float]:
    """(relative, absolute). An expression over a range window differs by the engines' window semantics (12 vs 13
    samples of a 5-minute window at 15 s, no extrapolation): a few per cent at this traffic; an instant
    expression is the same arithmetic on the same samples."""
    if "error" in record:
        return 0.05, ONE_EVENT_PER_WINDOW
    return (0.05, 0.0) if "[" in expr else (1e-9, 0.0)


RECORDING = _recording_rules()


@pytest.mark.parametrize(
    ("record", "expr"),
    [pytest.param(r, e, id=f"{r} recorded by vmalert is what Prometheus computes") for r, e in RECORDING],
)
def test_a_recorded_series_matches_prometheus_on_the_same_history(replayed: Replayed, record: str, expr: str) -> None:
    recorded = _recorded(replayed.victoria, record)
    instants = sorted({t for points in recorded.values() for t, _ in points})
    expected_instants = [END - REPLAY + 60 * k for k in range(int(REPLAY // 60) + 1)]
    rel, abs_ = _tolerance(record, expr)
    for at in expected_instants:
        prom = {tuple(sorted(s["metric"].items())): float(s["value"][1])
                for s in api_query(replayed.prometheus.url, expr, at)}  # fmt: skip
        prom = {k: v for k, v in prom.items() if not math.isnan(v)}  # VictoriaMetrics drops NaN (README)
        vm = {k: v for k, points in recorded.items() for t, v in points if t == at}
        assert vm.keys() == prom.keys(), (at, vm, prom)
        for labels, value in prom.items():
            assert vm[labels] == pytest.approx(value, rel=rel, abs=abs_), (at, labels)
    if any(recorded.values()):
        assert instants == expected_instants  # every minute of the replay, and nothing else


def test_the_replay_recorded_the_tiers_series() -> None:
    """The comparison above is not vacuous: recording.yml's rules name the copilot's traffic, and most record."""
    assert len(RECORDING) >= 40 and all(record.startswith("tier:") for record, _ in RECORDING)


@pytest.mark.parametrize(
    "rule_file",
    [
        pytest.param("recording.yml", id="the recording rules load and evaluate under vmalert"),
        pytest.param("alerts-planwatch.yml", id="the advisor's own alerts load and evaluate under vmalert"),
        pytest.param("capstone-slo.yml", id="the capstone's drift and SLO alerts (held by subquery) load and evaluate"),
        pytest.param("support-copilot-slo.yml", id="the copilot's drift and SLO alerts load and evaluate"),
    ],
)
def test_vmalert_loads_and_evaluates_every_rule(tmp_path: Path, rule_file: str) -> None:
    vmalert = _vmalert()
    stack = Stack(tmp_path)
    try:
        victoria = stack.victoria_metrics()
        alertmanager = stack.alertmanager()
        port = free_port()
        log = (tmp_path / "vmalert.log").open("wb")
        proc = subprocess.Popen(
            [vmalert, f"-rule={RULES / rule_file}", f"-datasource.url={victoria.url}",
             f"-remoteWrite.url={victoria.url}", f"-notifier.url={alertmanager.url}",
             f"-httpListenAddr=127.0.0.1:{port}", "-evaluationInterval=1s"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        log.close()
        try:
            groups = wait_for(lambda: _evaluated_groups(port), 60, f"vmalert to evaluate {rule_file}",
                              ignoring=(OSError,))  # fmt: skip
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    finally:
        stack.close()
    data = yaml.safe_load((RULES / rule_file).read_text())
    expected = {(g["name"], r.get("record") or r["alert"]) for g in data["groups"] for r in g["rules"]}
    rules = [(g["name"], r) for g in groups for r in g["rules"]]
    assert {(group, r["name"]) for group, r in rules} == expected
    errors = [(r["name"], r["lastError"]) for _, r in rules if r.get("lastError")]
    assert not errors, errors


def _evaluated_groups(port: int) -> list[dict[str, Any]] | None:
    """vmalert's groups once every rule has been evaluated at least once, else None."""
    body = _get(f"http://127.0.0.1:{port}/api/v1/rules")
    groups: list[dict[str, Any]] = body["data"]["groups"]
    rules = [r for g in groups for r in g["rules"]]
    done = rules and all(not str(r.get("lastEvaluation", "")).startswith("0001") for r in rules)
    return groups if done else None
