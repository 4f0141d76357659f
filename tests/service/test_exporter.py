"""/metrics: a golden exposition on a fresh registry with the clock frozen, promtool's lint, and the
conventions alert rules and KEDA rely on (unknown omitted, pending 0, business hours at scrape time)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from monitor.advice import DemandOutlook
from monitor.forecasts import TierForecast
from monitor.observe.model import Measurement
from monitor.service.app import Services, build_services
from tests.service.conftest import make_settings
from tests.service.fakes import NOW, Clock, FakeObserver, copilot_observation

GOLDEN = Path(__file__).parent / "golden" / "metrics.prom"


class StepTimer:
    """perf_counter stand-in: each evaluation takes exactly 0.25 s."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 0.125
        return self.t


@pytest.fixture
def frozen(tmp_path: Path, clock: Clock, observer: FakeObserver) -> Iterator[Callable[[], Services]]:
    built: list[Services] = []

    def build() -> Services:
        s = build_services(make_settings(tmp_path), observer, clock=clock, timer=StepTimer(),
                           registry=CollectorRegistry(), schedule=False)  # fmt: skip
        built.append(s)
        return s

    yield build
    for s in built:
        s.close()


def _forecast() -> TierForecast:
    """The morning ramp: the 80% bound reaches 70 req/s in three hours."""
    times = tuple(NOW + 3600.0 * i for i in range(1, 5))
    outlook = DemandOutlook(times, (25.0, 40.0, 60.0, 45.0), (30.0, 48.0, 70.0, 52.0), "mstl")
    return TierForecast("copilot", NOW, "mstl", "picked mstl", 3600.0, outlook, (20.0, 32.0, 50.0, 38.0), times[2],
                        60.0, 70.0, 8064, 0.74)  # fmt: skip


def _exposition(services: Services) -> str:
    return generate_latest(services.registry).decode()


def test_the_exposition_matches_the_golden_file(frozen: Callable[[], Services], observer: FakeObserver) -> None:
    services = frozen()
    services.results.update(lambda s: replace(s, forecasts={"copilot": _forecast()}, forecast_refit_at=NOW))
    observation = copilot_observation(
        demand_rps=30.0,
        replicas=2.0,
        prompt_p95=Measurement.of(40_000),
        cold_start_p95=Measurement.unknown("no pods started"),
    )
    observer.observations = {"copilot": observation}
    services.evaluate_now()
    text = _exposition(services)
    if os.environ.get("PLANWATCH_UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
@pytest.mark.parametrize(
    "reachable",
    [pytest.param(True, id="with data"), pytest.param(False, id="with Prometheus away")],
)
def test_promtool_finds_nothing_to_lint(frozen: Callable[[], Services], observer: FakeObserver,
                                        reachable: bool) -> None:  # fmt: skip
    services = frozen()
    observer.observations = {"copilot": copilot_observation(prompt_p95=Measurement.of(40_000))}
    observer.reachable = reachable
    services.evaluate_now()
    lint = subprocess.run(["promtool", "check", "metrics"], input=_exposition(services), capture_output=True,
                          text=True, timeout=30)  # fmt: skip
    assert lint.returncode == 0 and not lint.stdout.strip() and not lint.stderr.strip(), lint.stdout + lint.stderr


def _samples(services: Services, name: str) -> dict[str, float]:
    out = {}
    for family in services.registry.collect():
        for sample in family.samples:
            if sample.name == name:
                out[",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))] = sample.value
    return out


def test_unknown_values_are_omitted_not_zero(frozen: Callable[[], Services], observer: FakeObserver) -> None:
    services = frozen()
    observer.reachable = False
    services.evaluate_now()
    assert _samples(services, "planwatch_current_replicas") == {}
    assert _samples(services, "planwatch_drift_status") == {}
    assert set(_samples(services, "planwatch_drift_unknown").values()) == {1.0}
    assert _samples(services, "planwatch_recommended_replicas") == {"tier=copilot": 4.0}
    assert _samples(services, "planwatch_recommendation_stale") == {"tier=copilot": 1.0}
    assert _samples(services, "planwatch_prometheus_up") == {"": 0.0}
    assert _samples(services, "planwatch_last_successful_evaluation_timestamp_seconds") == {}


def test_nothing_about_results_is_exported_before_the_first_evaluation(frozen: Callable[[], Services]) -> None:
    services = frozen()
    for name in ("planwatch_recommended_replicas", "planwatch_prometheus_up", "planwatch_trigger_active"):
        assert _samples(services, name) == {}
    assert _samples(services, "planwatch_plan_replicas")["kind=planned,tier=copilot"] == 4.0


@pytest.mark.parametrize(
    ("minutes", "value"),
    [
        pytest.param(0, 0.0, id="a trigger within its hold time is exported as 0 (pending)"),
        pytest.param(31, 1.0, id="after its hold time it is 1 (active), same series"),
    ],
)
def test_trigger_active_is_the_state_in_the_value(frozen: Callable[[], Services], observer: FakeObserver,
                                                  clock: Clock, minutes: int, value: float) -> None:  # fmt: skip
    services = frozen()
    observer.observations = {"copilot": copilot_observation(prompt_p95=Measurement.of(40_000))}
    services.evaluate_now()
    clock.advance(minutes * 60)
    services.evaluate_now()
    key = "severity=warning,tier=copilot,trigger=prompt-p95-above-plan"
    assert _samples(services, "planwatch_trigger_active") == {key: value}


@pytest.mark.parametrize(
    ("unix", "inside"),
    [
        pytest.param(1_800_000_000.0, 0.0, id="Friday 03:00 in New York is outside"),
        pytest.param(1_800_000_000.0 + 6 * 3600, 1.0, id="Friday 09:00 in New York is inside"),
        pytest.param(1_800_000_000.0 + 17 * 3600, 0.0, id="Friday 20:00 in New York is the end, outside"),
        pytest.param(1_800_000_000.0 + 30 * 3600, 0.0, id="Saturday 09:00 is outside"),
    ],
)
def test_business_hours_are_judged_at_scrape_time_in_the_plan_timezone(
    frozen: Callable[[], Services], clock: Clock, unix: float, inside: float
) -> None:
    services = frozen()
    clock.now = unix
    assert _samples(services, "planwatch_business_open") == {"": inside}


def test_the_metrics_route_serves_the_injected_registry(frozen: Callable[[], Services]) -> None:
    from tests.service.conftest import ApiClient

    services = frozen()
    services.evaluate_now()
    response = ApiClient(services.app).get("/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    assert 'planwatch_recommended_replicas{tier="copilot"}' in response.text
    assert "python_gc_objects_collected_total" not in response.text  # not the global registry


def test_a_collapse_of_demand_is_exported_with_when_it_began_and_gone_when_demand_returns(
    frozen: Callable[[], Services], observer: FakeObserver, clock: Clock
) -> None:
    """What a KEDA or Grafana user sees when planwatch holds the fleet through an incident."""
    began = clock.advance(6 * 3600.0)  # 09:00 in New York: the copilot's SLO counts

    def now_rps(rps: float) -> dict[str, Measurement]:
        five = Measurement.of(rps, window="5m")
        return {"demand_rate_now": five, "request_rate_now": five}

    observer.observations = {"copilot": copilot_observation(38.0, 4.0, **now_rps(0.2))}
    services = frozen()
    services.evaluate_now()
    name = "planwatch_demand_collapse_since_timestamp_seconds"
    assert _samples(services, name) == {"tier=copilot": began}
    clock.advance(3600.0)
    services.evaluate_now()  # still collapsed an hour on: the same incident, from the state file
    assert _samples(services, name) == {"tier=copilot": began}
    observer.observations = {"copilot": copilot_observation(38.0, 4.0, **now_rps(37.0))}
    clock.advance(60.0)
    services.evaluate_now()
    assert _samples(services, name) == {}
