"""The stack of docker-compose.yml on loopback, for the dashboard tests: a fleetsim history and the live
emulator continuing it, a real Prometheus started from deploy/prometheus/prometheus.yml, and planwatch's
/metrics served from its own observer.

- The plan is examples/capstone.yaml with its business day moved so that *now* is 45 minutes after opening,
  on the morning ramp: the history ends at real time with traffic, quantiles and a forecast worth showing,
  and the fast tier's cold start is 2 s so a live scale-up gives a cold start within the test.
- `fleetsim backfill` writes 3 h of that plan with `over-peak` (triggers become active) and `replica-down`
  3 minutes before the end (an XID error inside the window); `fleetsim serve --resume` continues it live and
  keeps the file_sd targets the Prometheus config reads.
- planwatch is `build_services` with the real Prometheus observer on a clock the test sets: forecasts
  refitted and three evaluations 10 minutes apart over the history, so triggers pass their hold times and a
  scale-up is scheduled. Its registry is served by a loopback prometheus_client server that Prometheus
  scrapes through the config's `planwatch` job (`planwatch serve` cannot be driven through time).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

from fleetsim.backfill import Request, execute, resolve_spec
from fleetsim.deploy import PROMETHEUS_CONFIG, RawPrometheusConfig, localized_prometheus_config
from fleetsim.promstack import PrometheusProcess, free_port
from monitor.service.app import Services, build_services
from monitor.service.settings import load_settings
from tests.harness.exporter import Exporter
from tests.harness.stack import wait_for

__all__ = ["PROMETHEUS_CONFIG", "REPO", "World", "label_values", "localized_config", "morning_plan", "query"]

REPO = Path(__file__).resolve().parents[2]
HISTORY_HOURS = 3
SCALED_TIER = "fast"


def localized_config(mounts: Mapping[str, Path], addresses: Mapping[str, str], interval: str = "1s") -> str:
    return localized_prometheus_config(mounts, addresses, interval)


def morning_plan(now: float, minutes_after_open: int = 45) -> dict[str, Any]:
    """examples/capstone.yaml in a fixed-offset timezone where `now` falls 9:00-11:00, its business day (today
    only) opening `minutes_after_open` earlier; the fast tier's cold start shortened to 2 s."""
    utc = datetime.fromtimestamp(now, UTC)
    hours = next(h for h in range(-12, 15) if 9 <= (utc + timedelta(hours=h)).hour < 11)
    local = utc + timedelta(hours=hours)
    zone = f"Etc/GMT{'-' if hours >= 0 else '+'}{abs(hours)}"  # POSIX signs: Etc/GMT-2 is UTC+2
    plan: dict[str, Any] = yaml.safe_load((REPO / "examples" / "capstone.yaml").read_text())
    plan["workload"]["business_hours"] = {
        "timezone": zone,
        "weekdays": [local.strftime("%a").lower()],
        "start": (local - timedelta(minutes=minutes_after_open)).strftime("%H:%M"),
        "end": "20:00",
    }
    for tier in plan["tiers"]:
        if tier["name"] == SCALED_TIER:
            tier["cold_start"] = "2s"
        # The schedule stops at replicas.max (as the advice does): room for the ramp, so scale-ups are scheduled.
        tier["replicas"]["max"] = max(tier["replicas"]["max"], 64)
    return plan


def query(url: str, expr: str) -> dict[str, Any]:
    """The body of an instant query at the current time (status "error" included, not raised)."""
    data = urllib.parse.urlencode({"query": expr}).encode()
    request = urllib.request.Request(f"{url}/api/v1/query", data=data)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            body: dict[str, Any] = json.load(response)
    except urllib.error.HTTPError as exc:
        body = json.load(exc)
        exc.close()
    return body


def label_values(url: str, metric: str, label: str) -> list[str]:
    """What Grafana's `label_values(metric, label)` returns for a variable."""
    params = urllib.parse.urlencode({"match[]": metric})
    with urllib.request.urlopen(f"{url}/api/v1/label/{label}/values?{params}", timeout=10) as response:
        values: list[str] = json.load(response)["data"]
    return values


def _wait(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    return wait_for(check, timeout, what, interval=0.25)


@dataclass
class World:
    """Everything started for the dashboard tests; `close()` stops it in reverse order."""

    work: Path
    end: float = 0.0
    prometheus: PrometheusProcess | None = None
    _closers: list[Callable[[], None]] = field(default_factory=list)

    @property
    def url(self) -> str:
        assert self.prometheus is not None
        return self.prometheus.url

    @classmethod
    def start(cls, work: Path) -> World:
        world = cls(work)
        try:
            world._start()
        except BaseException:
            world.close()
            raise
        return world

    def _start(self) -> None:
        now = time.time()
        plan = self.work / "plan.yaml"
        plan.write_text(yaml.safe_dump(morning_plan(now), sort_keys=False))
        instance = f"127.0.0.1:{free_port()}"
        state, sd = self.work / "fleet-state.json", self.work / "sd"
        sd.mkdir()
        spec = resolve_spec(Request(plan, self.work / "data", days=HISTORY_HOURS / 24,
                                    scenario=f"over-peak,replica-down@{int(now) - 180}", instance=instance,
                                    state_out=state), now=now)  # fmt: skip
        execute(spec, state)
        self.end = spec.end
        self._fleetsim(plan, state, instance, sd / "targets.json")
        registry = CollectorRegistry()
        exporter = Exporter(registry)
        self._closers.append(exporter.close)
        mounts = {"rules": REPO / "rules", "sd": sd}
        text = localized_config(mounts, {"planwatch:8080": exporter.target})
        self.prometheus = PrometheusProcess.start(RawPrometheusConfig(text=text, data_dir=self.work / "data"),
                                                  workdir=self.work / "prometheus")  # fmt: skip
        self._closers.append(self.prometheus.stop)
        self._planwatch(plan, registry)
        self._scale_up(instance)

    def _fleetsim(self, plan: Path, state: Path, instance: str, targets: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        log = (self.work / "fleetsim.log").open("wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "fleetsim.cli", "serve", str(plan), "--resume", str(state), "--listen", instance,
             "--file-sd", str(targets), "--scenario", "over-peak", "--dcgm-interval", "5"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, env=env,
        )  # fmt: skip

        def stop() -> None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
            log.close()

        self._closers.append(stop)

    def _planwatch(self, plan: Path, registry: CollectorRegistry) -> None:
        history = f"{HISTORY_HOURS}h"
        settings = load_settings(overrides={
            "plan": str(plan), "state_db": str(self.work / "planwatch-state.db"),
            "prometheus": {"url": self.url, "retries": 0}, "observation_window": "30m", "long_window": history,
            "forecast_history": history, "stale_after": "1h",
        }, env={})  # fmt: skip
        clock = [self.end - 1200.0]
        services: Services = build_services(settings, clock=lambda: clock[0], registry=registry, schedule=False)
        self._closers.append(services.close)
        services.refit_now()
        for at in (self.end - 1200.0, self.end - 600.0, self.end):
            clock[0] = at
            services.evaluate_now()
        services.measure_now()  # the measurement record, for the dashboard's measurement-plan row

    def _scale_up(self, instance: str) -> None:
        """One more replica of the fast tier, live: its pod is created and ready within the test."""
        _wait(lambda: (self.work / "sd" / "targets.json").exists(), "fleetsim's file_sd targets")
        body = json.dumps({"replicas": 2}).encode()
        request = urllib.request.Request(f"http://{instance}/tiers/{SCALED_TIER}/scale", data=body,
                                         headers={"Content-Type": "application/json"}, method="POST")  # fmt: skip
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()

    def wait_until_scraped(self) -> None:
        """planwatch's metrics and the new replica's vLLM and kube-state-metrics series are in Prometheus."""
        for expr in (
            'planwatch_trigger_active{job="planwatch"} == 1',
            f'vllm:num_requests_running{{tier="{SCALED_TIER}", pod="{SCALED_TIER}-1"}}',
            f'kube_pod_status_ready_time{{pod="{SCALED_TIER}-1"}}',
        ):
            _wait(partial(self.has_data, expr), expr)

    def has_data(self, expr: str) -> bool:
        return bool(query(self.url, expr)["data"]["result"])

    def close(self) -> None:
        while self._closers:
            self._closers.pop()()
