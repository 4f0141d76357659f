"""Reading the recorded `tier:*` series gives the observations the raw series give, and the same verdicts.

History: two days of the support copilot (fleetsim backfill, 60-second steps), then `rules/recording.yml`
evaluated over its last 25 hours by `promtool tsdb create-blocks-from rules`, served by a real Prometheus.
The observer is run twice at the same instant, with the recording rules switched off and on. (Rules
evaluated in the first hour of a history see every pod as just created, as a fresh Prometheus would: the
recorded hours start later so the day judged has no such edge.)
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path

import pytest

from fleetsim.promstack import PrometheusConfig, PrometheusProcess
from fleetsim.recorded_history import record_rules
from monitor.drift import Status
from monitor.evaluation import Evaluation, EvaluationInputs, evaluate
from monitor.observe.model import Measurement, TierObservation
from monitor.observe.observer import DemandHistory
from monitor.observer import PrometheusObserver
from monitor.plan import load_plan
from monitor.source import HttpPrometheusSource, SourceSettings
from tests.check.test_scenarios import COPILOT, END, NOW, REPO

pytestmark = pytest.mark.integration

RULES = Path(__file__).resolve().parents[2] / "rules" / "recording.yml"
TIER = "copilot"

# Readings whose recorded form is defined differently (see monitor.observer_fields.RECORDED): the highest
# 5-minute rate sampled every rule interval rather than every 5 minutes, and the slowest hour's cold start.
_DIFFERENT_BY_DESIGN = {"peak_rate", "cold_start_p95"}


def _copilot_history(tmp: Path, scenario: str, recorded_hours: float) -> Path:
    data = tmp / "data"
    argv = [sys.executable, "-m", "fleetsim", "backfill", str(COPILOT), "--days", "2", "--step", "60s", "--end", END,
            "--scenario", scenario, "--prometheus-data", str(data)]  # fmt: skip
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with PrometheusProcess.start(PrometheusConfig(data_dir=data), workdir=tmp / "rules-prom") as prom:
        blocks = record_rules(prom.url, [RULES], NOW - recorded_hours * 3600, NOW, data)
    assert blocks, "promtool wrote no block of recorded series"
    return data


Reading = tuple[dict[str, TierObservation], Evaluation]
DEMAND: dict[tuple[str, bool], dict[str, DemandHistory]] = {}  # (scenario, recorded) -> span -> history


def _collect(data: Path, work: Path, recording_rules: bool, scenario: str = "") -> Reading:
    plan = load_plan(COPILOT)
    with (
        PrometheusProcess.start(PrometheusConfig(data_dir=data), workdir=work) as prom,
        HttpPrometheusSource(SourceSettings(url=prom.url, timeout=30)) as source,
    ):
        observer = PrometheusObserver(source, long_window="1d", recording_rules=recording_rules)
        observations = observer.collect(plan, NOW, "1h")
        DEMAND[(scenario, recording_rules)] = {
            span: observer.demand_history(plan, TIER, NOW - hours * 3600, NOW, 300.0)
            for span, hours in (("day", 24), ("two days", 46))
        }
    evaluation = evaluate(EvaluationInputs(plan, observations, NOW, held_since=NOW - 3600))
    return observations, evaluation


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[Reading, Reading]]]:
    """scenario -> (raw, recorded) readings, with rules recorded over the whole day judged."""
    out = {}
    for scenario in ("baseline", "long-prompts"):
        tmp = tmp_path_factory.mktemp(f"recorded-{scenario}")
        data = _copilot_history(tmp, scenario, recorded_hours=25)
        raw, raw_eval = _collect(data, tmp / "raw", recording_rules=False, scenario=scenario)
        rec, rec_eval = _collect(data, tmp / "rec", recording_rules=True, scenario=scenario)
        out[scenario] = ((raw, raw_eval), (rec, rec_eval))
    yield out  # type: ignore[misc]


def _measurements(obs: TierObservation) -> dict[str, Measurement]:
    return {f.name: getattr(obs, f.name) for f in fields(obs) if isinstance(getattr(obs, f.name), Measurement)}


@pytest.mark.parametrize("scenario", ["baseline", "long-prompts"])
def test_the_recorded_series_are_what_the_observer_reads_when_the_rules_ran(both, scenario: str) -> None:
    (_, _), (rec, _) = both[scenario]
    queries = {name: m.query for name, m in _measurements(rec[TIER]).items()}
    assert "tier:vllm_request_success:rate_5m" in queries["request_rate"]
    assert "tier:vllm_request_success:rate_5m" in queries["average_rate"], "the day is covered: long reads too"
    assert "tier:vllm_prefix_cache_hits:rate_5m" in queries["prefix_hit_rate"]


@pytest.mark.parametrize("scenario", ["baseline", "long-prompts"])
def test_every_reading_agrees_with_the_raw_series_within_five_percent(both, scenario: str) -> None:
    (raw, _), (rec, _) = both[scenario]
    raw_m, rec_m = _measurements(raw[TIER]), _measurements(rec[TIER])
    compared = 0
    for name, r in raw_m.items():
        if name in _DIFFERENT_BY_DESIGN:
            continue
        got = rec_m[name]
        assert got.known == r.known, f"{name}: raw {r.value} ({r.reason}) vs recorded {got.value} ({got.reason})"
        if r.known and r.value is not None and got.value is not None:
            assert got.value == pytest.approx(r.value, rel=0.05, abs=1e-6), name
            compared += 1
    assert compared >= 15, f"only {compared} readings had data to compare"


@pytest.mark.parametrize("scenario", ["baseline", "long-prompts"])
def test_the_peak_read_from_recorded_rates_is_the_raw_peak_or_a_little_above(both, scenario: str) -> None:
    (raw, _), (rec, _) = both[scenario]
    raw_peak, rec_peak = raw[TIER].peak_rate.value, rec[TIER].peak_rate.value
    assert raw_peak is not None and rec_peak is not None
    assert raw_peak * 0.98 <= rec_peak <= raw_peak * 1.15


@pytest.mark.parametrize("scenario", ["baseline", "long-prompts"])
def test_the_verdicts_are_the_same_either_way(both, scenario: str) -> None:
    (_, raw_eval), (_, rec_eval) = both[scenario]

    def verdicts(ev: Evaluation) -> dict[tuple[str, str], Status]:
        return {(s.tier, r.assumption): r.status for s in ev.sections for r in s.drift}

    assert verdicts(rec_eval) == verdicts(raw_eval)
    if scenario == "long-prompts":
        assert verdicts(rec_eval)[(TIER, "prompt_p95")] is Status.BREACH


def test_the_forecast_reads_demand_history_from_recorded_series_only_where_they_reach_back(both) -> None:
    raw, rec = DEMAND[("baseline", False)], DEMAND[("baseline", True)]
    assert rec["day"].query.startswith("tier:vllm_request_demand:rate_5m"), rec["day"].query
    assert "tier:" not in rec["two days"].query, "rules recorded 25 h: two days come from the raw series"
    pairs = [(a, b) for a, b in zip(raw["day"].values, rec["day"].values, strict=True) if a and b]
    assert len(pairs) > 250
    total_raw, total_rec = sum(a for a, _ in pairs), sum(b for _, b in pairs)
    assert total_rec == pytest.approx(total_raw, rel=0.02), "the day's demand is the same either way"


def test_recorded_history_shorter_than_the_long_window_is_read_only_for_the_short_windows(tmp_path: Path) -> None:
    data = _copilot_history(tmp_path, "baseline", recorded_hours=8)
    rec, _ = _collect(data, tmp_path / "rec", recording_rules=True)
    m = _measurements(rec[TIER])
    assert "tier:" in m["request_rate"].query, "6h burn window and 1h check window are covered by 8 h"
    assert "tier:" not in m["average_rate"].query, "the 1d long window is not: raw series"
    assert "tier:" not in m["peak_rate"].query
    assert m["average_rate"].known and m["peak_rate"].known
