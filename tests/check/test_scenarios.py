"""The drift report against a real Prometheus holding fleetsim history: each plan-breaking reality shows as the
assumption it breaks, and a fleet that matches its plan shows none. No mocked Prometheus here.

History: one day of the support copilot (one tier, 3 replicas, 60-second steps) ending at 11:00 New York on a
Tuesday, so the hour judged is near the daily peak. Judged over 1h, peaks and burstiness over the day.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest

from fleetsim.promstack import PrometheusConfig, PrometheusProcess
from monitor.drift import Status
from monitor.evaluation import Evaluation, EvaluationInputs, evaluate
from monitor.observer import PrometheusObserver
from monitor.plan import load_plan
from monitor.source import HttpPrometheusSource, SourceSettings

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
COPILOT = REPO / "examples" / "support-copilot.yaml"
REVISED = REPO / "examples" / "capstone-revised.yaml"
END = "2026-12-01T16:00:00Z"
NOW = datetime.fromisoformat(END.replace("Z", "+00:00")).timestamp()

Evaluate = Callable[..., Evaluation]


# Burstiness is judged against the plan's weekly peak-to-average, so it needs a week of history.
WEEKLY = {"bursty"}


def backfill(plan: Path, scenario: str, data: Path, generation: str = "v1") -> None:
    days = "8" if scenario in WEEKLY else "1"
    argv = [sys.executable, "-m", "fleetsim", "backfill", str(plan), "--days", days, "--step", "60s", "--end", END,
            "--scenario", scenario, "--vllm-generation", generation, "--prometheus-data", str(data)]  # fmt: skip
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def judge_history(plan_path: Path, data: Path, work: Path, long_window: str = "1d") -> Evaluation:
    """Serve a backfilled data dir with a real Prometheus and evaluate the plan at END, as `check` does."""
    plan = load_plan(plan_path)
    with (
        PrometheusProcess.start(PrometheusConfig(data_dir=data), workdir=work) as prom,
        HttpPrometheusSource(SourceSettings(url=prom.url, timeout=30)) as source,
    ):
        observations = PrometheusObserver(source, long_window=long_window).collect(plan, NOW, "1h")
    return evaluate(EvaluationInputs(plan, observations, NOW, held_since=NOW - 3600))


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path, str, str], Path]:
    """The data dir of one backfilled history per (plan, scenario, generation), made once for the module."""
    made: dict[tuple[Path, str, str], Path] = {}

    def get(plan_path: Path, scenario: str, generation: str) -> Path:
        key = (plan_path, scenario, generation)
        if key not in made:
            data = tmp_path_factory.mktemp(f"{plan_path.stem}-{scenario}-{generation}") / "data"
            backfill(plan_path, scenario, data, generation)
            made[key] = data
        return made[key]

    return get


@pytest.fixture(scope="module")
def judged(history: Callable[[Path, str, str], Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Evaluate]:
    cache: dict[tuple[Path, str, str], Evaluation] = {}

    def run(plan_path: Path = COPILOT, scenario: str = "baseline", generation: str = "v1") -> Evaluation:
        key = (plan_path, scenario, generation)
        if key not in cache:
            long_window = "7d" if scenario in WEEKLY else "1d"
            cache[key] = judge_history(plan_path, history(*key), tmp_path_factory.mktemp("prom"), long_window)
        return cache[key]

    yield run


def _status(ev: Evaluation, section: str, assumption: str) -> Status:
    part = ev.fleet if section == "fleet" else next(t for t in ev.tiers if t.tier == section)
    assert part is not None
    return next(r.status for r in part.drift if r.assumption == assumption)


def _breaches(ev: Evaluation) -> set[tuple[str, str]]:
    return {(s.tier, r.assumption) for s in ev.sections for r in s.drift if r.status is Status.BREACH}


@pytest.mark.parametrize(
    "generation",
    [
        pytest.param("v1", id="a fleet that matches its plan breaches nothing and fires no trigger"),
        pytest.param("legacy", id="so does one exporting the older vLLM metric names"),
    ],
)
def test_baseline(judged: Evaluate, generation: str) -> None:
    ev = judged(scenario="baseline", generation=generation)
    assert _breaches(ev) == set()
    assert ev.triggers == ()
    assert {r.status for s in ev.sections for r in s.drift if r.assumption.startswith(("prompt", "output"))} == {
        Status.OK
    }


@pytest.mark.parametrize(
    ("scenario", "generation", "breaches", "trigger"),
    [
        pytest.param(
            "prefix-miss",
            "v1",
            {("fleet", "prefix_hit_rate"), ("copilot", "prefix_hit_rate")},
            "prefix-hit-below-plan",
            id="prefix hits collapsing breach the hit rate",
        ),
        pytest.param(
            "slow-tp",
            "v1",
            {("copilot", "throughput_per_replica")},
            "throughput-below-model",
            id="replicas about 30% slower than the sizing model at the observed batch breach throughput",
        ),
        pytest.param(
            "over-peak",
            "v1",
            {("fleet", "peak_rate"), ("copilot", "peak_rate")},
            "traffic-above-peak",
            id="traffic 40% above the planned peak breaches the peak rate",
        ),
        pytest.param(
            "bursty",
            "v1",
            {("fleet", "peak_to_average")},
            "burstier-than-planned",
            id="bursts breach the fleet's peak-to-average",
        ),
        pytest.param(
            "tool-calls",
            "v1",
            {("fleet", "calls_per_request"), ("copilot", "calls_per_request")},
            "tool-call-fanout",
            id="five model calls per user request breach fan-out, not the peak",
        ),
        pytest.param(
            "long-prompts",
            "v1",
            {("fleet", "prompt_p95"), ("copilot", "prompt_p95")},
            "prompt-p95-above-plan",
            id="long prompts breach the prompt p95",
        ),
        pytest.param(
            "long-prompts",
            "legacy",
            {("fleet", "prompt_p95"), ("copilot", "prompt_p95")},
            "prompt-p95-above-plan",
            id="long prompts show through the older metric names too",
        ),
    ],
)
def test_each_scenario_breaches_what_it_stands_for(
    judged: Evaluate, scenario: str, generation: str, breaches: set[tuple[str, str]], trigger: str
) -> None:
    ev = judged(scenario=scenario, generation=generation)
    assert breaches <= _breaches(ev)
    assert trigger in {t.trigger for t in ev.triggers}
    if scenario == "tool-calls":
        assert ("copilot", "peak_rate") not in _breaches(ev)


def test_long_prompts_read_near_40k_within_the_histograms_resolution_and_are_flagged(judged: Evaluate) -> None:
    """p95 40K lies in vLLM's 20,000-50,000 bucket: histogram_quantile reads it as about 46K (a p95 of 40K
    pushed through the same buckets); anything in 30K-50K is within that bucket's resolution. Where in it the
    reading falls depends on which calls the judged hour holds, and the breach line (1.4 x the plan's 31,286)
    is inside the bucket: since the aggregate's batch-limit gate holds a call only while the batch is full,
    long-context runs nearer its saturation here and the fleet reads 42.5K (warn, 1.36) where it read 45.3K
    (breach, 1.45). Either flags it; the copilot's breach is asserted with the other scenarios."""
    ev = judged(REVISED, "long-prompts")
    assert ev.fleet is not None
    row = next(r for r in ev.fleet.drift if r.assumption == "prompt_p95")
    assert row.status in {Status.WARN, Status.BREACH}
    assert row.observed.value is not None and 30_000 <= row.observed.value <= 50_000


def test_a_tier_whose_series_are_absent_is_unknown_with_a_reason(
    history: Callable[[Path, str, str], Path], tmp_path: Path
) -> None:
    ghost = tmp_path / "ghost.yaml"
    selector = "  - name: copilot\n    selector: {tier: ghost}\n"
    ghost.write_text(COPILOT.read_text().replace("  - name: copilot\n", selector))
    ev = judge_history(ghost, history(COPILOT, "baseline", "v1"), tmp_path / "prom")
    rows = ev.tiers[0].drift
    assert {r.status for r in rows} == {Status.UNKNOWN}
    assert all(r.reason for r in rows)
    assert ev.tiers[0].recommendation is not None and ev.tiers[0].recommendation.stale


def _check_cli(data: Path, work: Path, plan: Path, *extra: str) -> tuple[int, str]:
    from typer.testing import CliRunner

    from monitor.cli.main import build_app

    with PrometheusProcess.start(PrometheusConfig(data_dir=data), workdir=work) as prom:
        argv = ["check", str(plan), "--prometheus", prom.url, "--at", END, "--long-window", "1d", *extra]
        result = CliRunner().invoke(build_app(), argv)
    return result.exit_code, result.stdout


@pytest.mark.parametrize(
    ("scenario", "exit_code"),
    [
        pytest.param("baseline", 0, id="check exits 0 when nothing breaches, with the documented JSON keys"),
        pytest.param("long-prompts", 1, id="check exits 1 when an assumption breaches"),
    ],
)
def test_check_cli(history: Callable[[Path, str, str], Path], tmp_path: Path, scenario: str, exit_code: int) -> None:
    import json

    code, out = _check_cli(history(COPILOT, scenario, "v1"), tmp_path / "prom", COPILOT, "--format", "json")
    assert code == exit_code
    data = json.loads(out)
    assert {"plan", "evaluated_at", "tiers", "fleet", "triggers"} <= data.keys()
    for row in data["tiers"][0]["drift"]:
        assert {"assumption", "plan", "observed", "ratio", "status", "window", "query"} <= row.keys()


def test_check_cli_reports_an_unreachable_prometheus_with_exit_3() -> None:
    from typer.testing import CliRunner

    from monitor.cli.main import build_app

    result = CliRunner().invoke(build_app(), ["check", str(COPILOT), "--prometheus", "http://127.0.0.1:9"])
    assert result.exit_code == 3
    assert "cannot reach Prometheus at http://127.0.0.1:9" in result.stderr


def test_live_forecast_reads_the_tier_demand_and_steps_by_replica_capacity(
    history: Callable[[Path, str, str], Path], tmp_path: Path
) -> None:
    import json

    from typer.testing import CliRunner

    from monitor.cli.main import build_app

    with PrometheusProcess.start(PrometheusConfig(data_dir=history(COPILOT, "baseline", "v1")), workdir=tmp_path) as p:
        argv = ["forecast", str(COPILOT), "--prometheus", p.url, "--at", END, "--history", "1d", "--horizon", "6h",
                "--format", "json"]  # fmt: skip
        result = CliRunner().invoke(build_app(), argv)
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert {"name", "model", "reason", "timestamps", "mean", "lower", "upper", "next_peak", "ramp"} <= data.keys()
    assert data["name"] == load_plan(COPILOT).tiers[0].name
    assert len(data["timestamps"]) == 6 * 12  # 5-minute steps over the horizon
    assert data["timestamps"][0] > NOW - 300
    assert all(lo <= m <= up for lo, m, up in zip(data["lower"], data["mean"], data["upper"], strict=True))
    # One ramp threshold per replica count up to replicas.max: the demand n replicas serve within the SLO.
    thresholds = [r["threshold"] for r in data["ramp"]]
    assert len(thresholds) == load_plan(COPILOT).tiers[0].replicas.max
    assert thresholds == sorted(thresholds)
    # Near the morning peak, demand is in the tens of requests/s, as the plan's 50 req/s peak implies.
    assert 10 < data["next_peak"]["requests_per_second"] < 80


@pytest.mark.parametrize(
    ("scenario", "bursts"),
    [
        pytest.param("baseline", False, id="Poisson minutes read from Prometheus as no bursts"),
        pytest.param(
            "long-prompts",
            False,
            id="completions bunched behind long prompts are not bursts: the running batch's growth counts",
        ),
        pytest.param("bursty", True, id="fleetsim's bursts read from Prometheus as alpha, what the advice sizes"),
    ],
)
def test_the_minute_bursts_the_advice_sizes_are_read_from_the_tier_s_1_minute_demand(
    history: Callable[[Path, str, str], Path], tmp_path: Path, scenario: str, bursts: bool
) -> None:
    """Through the recorded 1-minute arrivals over the long window, as `serve` reads them every minute."""
    plan = load_plan(COPILOT)
    with (
        PrometheusProcess.start(PrometheusConfig(data_dir=history(COPILOT, scenario, "v1")), workdir=tmp_path) as p,
        HttpPrometheusSource(SourceSettings(url=p.url, timeout=30)) as source,
    ):
        observed = PrometheusObserver(source, long_window="1d").collect(plan, NOW, "1h")["copilot"]
    alpha = observed.minute_overdispersion
    assert alpha.value is not None and alpha.samples > 1000, alpha.reason
    assert (alpha.value > 0.5) == bursts and (alpha.value == 0.0) == (not bursts)


def test_a_tier_with_no_1_minute_arrivals_says_so_rather_than_too_few_minutes(
    history: Callable[[Path, str, str], Path], tmp_path: Path
) -> None:
    ghost = tmp_path / "ghost.yaml"
    ghost.write_text(
        COPILOT.read_text().replace("  - name: copilot\n", "  - name: copilot\n    selector: {tier: ghost}\n")
    )
    with (
        PrometheusProcess.start(PrometheusConfig(data_dir=history(COPILOT, "baseline", "v1")), workdir=tmp_path) as p,
        HttpPrometheusSource(SourceSettings(url=p.url, timeout=30)) as source,
    ):
        observed = PrometheusObserver(source, long_window="1d").collect(load_plan(ghost), NOW, "1h")["copilot"]
    assert observed.minute_overdispersion.value is None
    assert observed.minute_overdispersion.reason.startswith("no 1-minute arrivals over 1d: ")
    assert 'tier="ghost"' in observed.minute_overdispersion.reason
