"""The local demo stack, no Docker needed: history, an emulated fleet, Prometheus, Alertmanager, planwatch.

1. `fleetsim backfill` writes weeks of history (daily ramps, weekends, the scenario) into a fresh data dir;
2. `fleetsim serve --resume` continues those counters live and keeps the file_sd targets current;
3. Prometheus starts on that data dir from the shared deploy/prometheus/prometheus.yml, rules included;
4. Alertmanager from examples/alertmanager.yml; 5. `planwatch serve` holds the plan against it all.
Optionally planwatch's recommendations drive fleetsim's replica counts (the loop closed, as KEDA would).
Everything listens on loopback; `stop()` ends every process it started.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import httpx
import yaml

from fleetsim import DEFAULT_SCENARIO
from fleetsim.alert_receiver import AlertReceiver
from fleetsim.deploy import RawPrometheusConfig, localized_prometheus_config
from fleetsim.morning import morning_plan
from fleetsim.promstack import AlertmanagerConfig, AlertmanagerProcess, PrometheusProcess, free_port

__all__ = ["DemoOptions", "DemoStack", "DemoUrls", "loop_changes"]

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_RECEIVER = "http://127.0.0.1:9095"  # where examples/alertmanager.yml sends its webhooks


@dataclass(frozen=True)
class DemoOptions:
    plan: Path
    scenario: str = DEFAULT_SCENARIO
    days: float = 28.0
    step: str = "60s"
    workdir: Path = REPO / ".demo"
    closed_loop: bool = False
    loop_interval_seconds: float = 30.0
    # Shift the plan's timezone so the demo opens at 9-11 local on a business day, whatever the hour here.
    morning: bool = True
    # Multiplies every alert's hold time (tests only): 1/600 turns a 30-minute hold into 3 seconds.
    hold_scale: float = 1.0


@dataclass(frozen=True)
class DemoUrls:
    planwatch: str
    prometheus: str
    alertmanager: str
    fleetsim: str
    alert_receiver: str = ""
    plan: Path | None = None  # the plan file the demo serves (the given one, rewritten for the morning)
    alerts_path: str = "/alerts"  # Debian's Prometheus 2.42 serves its (classic) alerts page under /classic/


@dataclass
class DemoStack:
    options: DemoOptions
    log: Callable[[str], None] = print
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _managed: list[PrometheusProcess | AlertmanagerProcess] = field(default_factory=list)
    _stop_loop: threading.Event = field(default_factory=threading.Event)
    _receiver: AlertReceiver | None = None

    def start(self) -> DemoUrls:
        o, work = self.options, self.options.workdir
        if work.exists():
            shutil.rmtree(work)
        (work / "sd").mkdir(parents=True)
        plan_path = self._prepare_plan()
        self._prepare_rules(plan_path)
        fleet_port, planwatch_port = free_port(), free_port()
        self._say(f"backfilling {o.days:g} days of fleetsim history ({o.scenario}) ...")
        self._run_backfill(plan_path, fleet_port)
        targets, state = str(work / "sd" / "targets.json"), str(work / "state.json")
        fleet = self._spawn(
            "fleetsim",
            ["serve", str(plan_path), "--listen", f"127.0.0.1:{fleet_port}", "--file-sd", targets,
             "--resume", state, "--scenario", o.scenario],
        )  # fmt: skip
        _wait_http(f"http://127.0.0.1:{fleet_port}/fleet", fleet, "fleetsim")
        self._receiver = AlertReceiver(self._say).start()
        alertmanager = AlertmanagerProcess.start(self._alertmanager_config(self._receiver.url),
                                                 workdir=work / "alertmanager")  # fmt: skip
        self._managed.append(alertmanager)
        prometheus = self._start_prometheus(alertmanager.address, planwatch_port)
        listen = f"127.0.0.1:{planwatch_port}"
        planwatch = self._spawn(
            "monitor",
            ["serve", str(plan_path), "--prometheus", prometheus.url, "--listen", listen,
             "--state-db", str(work / "planwatch.db")],
        )  # fmt: skip
        _wait_http(f"http://127.0.0.1:{planwatch_port}/healthz", planwatch, "planwatch")
        urls = DemoUrls(f"http://127.0.0.1:{planwatch_port}", prometheus.url, alertmanager.url,
                        f"http://127.0.0.1:{fleet_port}", self._receiver.url, plan_path,
                        _alerts_path(prometheus.url))  # fmt: skip
        if o.closed_loop:
            threading.Thread(target=self._close_the_loop, args=(urls,), daemon=True).start()
        return urls

    def stop(self) -> None:
        self._stop_loop.set()
        for proc in reversed(self._procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in reversed(self._procs):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for managed in reversed(self._managed):
            managed.stop()
        if self._receiver is not None:
            self._receiver.stop()
            self._receiver = None
        self._procs.clear()
        self._managed.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def _say(self, text: str) -> None:
        self.log(text)

    def _prepare_plan(self) -> Path:
        """The plan the demo runs: the given one, its timezone shifted to a local morning if asked."""
        data = yaml.safe_load(self.options.plan.read_text())
        if self.options.morning:
            data = morning_plan(data, time.time())
            self._say(f"demo plan: timezone {data['workload']['business_hours']['timezone']} so that it is a business "
                      "morning there now (--no-morning keeps the plan's own)")  # fmt: skip
        path = self.options.workdir / "plan.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def _prepare_rules(self, plan_path: Path) -> None:
        """The generic rules as committed, plus the SLO and drift alerts generated for the demo's plan."""
        from monitor.plan import load_plan
        from monitor.rules.document import render_plan_rules

        rules = self.options.workdir / "rules"
        rules.mkdir()
        for name in ("recording.yml", "alerts-planwatch.yml"):
            shutil.copy(REPO / "rules" / name, rules / name)
        text = render_plan_rules(load_plan(plan_path), source=str(self.options.plan), out=None,
                                 hold_scale=self.options.hold_scale)  # fmt: skip
        (rules / "plan-slo.yml").write_text(text)

    def _run_backfill(self, plan_path: Path, fleet_port: int) -> None:
        o, work = self.options, self.options.workdir
        argv = [sys.executable, "-m", "fleetsim", "backfill", str(plan_path), "--days", f"{o.days:g}",
                "--step", o.step, "--scenario", o.scenario, "--instance", f"127.0.0.1:{fleet_port}",
                "--prometheus-data", str(work / "prometheus-data"),
                "--state-out", str(work / "state.json")]  # fmt: skip
        # stderr stays the terminal's: the backfill's progress bar and its summary show there as it runs.
        done = subprocess.run(argv, cwd=REPO, stdout=subprocess.PIPE, text=True)
        if done.returncode:
            raise RuntimeError(f"backfill failed (status {done.returncode}): {done.stdout.strip() or 'see above'}")

    def _spawn(self, module: str, args: list[str]) -> subprocess.Popen[bytes]:
        log = (self.options.workdir / f"{module}.log").open("wb")
        proc = subprocess.Popen([sys.executable, "-m", module, *args], cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        self._procs.append(proc)
        return proc

    def _alertmanager_config(self, receiver: str) -> AlertmanagerConfig:
        """The example configuration, its webhooks pointed at the demo's receiver (which prints them)."""
        example = REPO / "examples" / "alertmanager.yml"
        if not example.exists():
            return AlertmanagerConfig(webhook_urls=(f"{receiver}/alerts/page",))
        return AlertmanagerConfig(raw_yaml=example.read_text().replace(EXAMPLE_RECEIVER, receiver))

    def _start_prometheus(self, alertmanager: str, planwatch_port: int) -> PrometheusProcess:
        work = self.options.workdir
        text = localized_prometheus_config(
            {"rules": work / "rules", "sd": work / "sd"},
            {"planwatch:8080": f"127.0.0.1:{planwatch_port}", "alertmanager:9093": alertmanager},
        )
        prom = PrometheusProcess.start(RawPrometheusConfig(text=text, data_dir=work / "prometheus-data"),
                                       workdir=work / "prometheus")  # fmt: skip
        self._managed.append(prom)
        return prom

    def _close_the_loop(self, urls: DemoUrls) -> None:
        """Apply planwatch's recommendations to fleetsim, as an autoscaler reading them would."""
        applied: dict[str, int] = {}  # what was asked last: replicas still starting are not "current" yet
        with httpx.Client(timeout=10) as client:
            while not self._stop_loop.wait(self.options.loop_interval_seconds):
                try:
                    recs = client.get(f"{urls.planwatch}/v1/recommendations").json().get("recommendations", [])
                    for tier, wanted, reason in loop_changes(recs, applied):
                        client.post(f"{urls.fleetsim}/tiers/{tier}/scale", json={"replicas": wanted})
                        applied[tier] = wanted
                        self._say(f"closed loop: scaled {tier} to {wanted} ({reason})")
                except (httpx.HTTPError, ValueError, KeyError) as exc:
                    self._say(f"closed loop: skipped a round ({exc})")


def loop_changes(recs: list[dict[str, Any]], applied: dict[str, int]) -> list[tuple[str, int, str]]:
    """(tier, replicas, reason) to ask fleetsim for: a fresh recommendation that differs from what was asked
    last (or, never asked, from the ready replicas). Replicas still starting are not ready yet, so comparing
    with the ready count alone would ask again, and log it, every round."""
    out = []
    for rec in recs:
        tier, wanted = rec["tier"], rec["recommended_replicas"]
        if not rec.get("stale") and wanted != applied.get(tier, rec.get("current_replicas")):
            out.append((tier, wanted, str(rec.get("reason"))))
    return out


def _alerts_path(prometheus: str) -> str:
    """The alerts page this Prometheus serves: the new UI's /alerts, or the classic one Debian ships."""
    for path in ("/alerts", "/classic/alerts"):
        try:
            if httpx.get(prometheus + path, timeout=5).status_code == 200:
                return path
        except httpx.HTTPError:
            pass
    return "/alerts"


def _wait_http(url: str, proc: subprocess.Popen[bytes], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with status {proc.returncode}; see its log in the demo folder")
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{what} did not answer at {url} within {timeout:.0f} s")
