"""The composition root: settings in, a running advisor out. The only place that builds the pieces and
decides how they meet; everything else takes what it needs as arguments (clock included).

Scheduler: APScheduler's BackgroundScheduler, not the AsyncIO one. The jobs block by nature (the Prometheus
adapter's HTTP client is synchronous, SQLite is synchronous, forecast fitting is CPU-bound numpy and
statsmodels), so on the event loop they would stall every request for their duration; in the scheduler's
own threads they run beside the server and requests keep reading the cached snapshot. `max_instances=1` and
`coalesce` keep a slow run from piling up behind itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.background import BackgroundScheduler
from fastapi import FastAPI
from prometheus_client import CollectorRegistry

from monitor.observe.observer import Observer, SourceHealth
from monitor.observer import PrometheusObserver
from monitor.plan import load_plan
from monitor.service.api import ApiContext, create_app
from monitor.service.exporter import AdvisorMetrics, MeasurementMetrics, StateMetrics
from monitor.service.jobs import JobContext, run_evaluation, run_forecast_refit
from monitor.service.measurement_job import run_measurements
from monitor.service.results import Results, Snapshot, shown
from monitor.service.settings import ConfigError, Settings
from monitor.service.state import StateStore
from monitor.service.views import render_bodies
from monitor.sizing.plan_sizing import size_plan
from monitor.source import HttpPrometheusSource, source_from_settings
from monitor.source.redact import redact_url

__all__ = ["Services", "build_services", "default_observer"]

log = logging.getLogger("planwatch.service")


def _nothing() -> None:
    return None


@dataclass
class Services:
    settings: Settings
    jobs: JobContext
    registry: CollectorRegistry
    app: FastAPI = field(init=False, repr=False)
    scheduler: BackgroundScheduler | None = None
    close_observer: Callable[[], None] = _nothing  # only an observer built here is closed here
    _closed: bool = False

    @property
    def results(self) -> Results:
        return self.jobs.results

    @property
    def store(self) -> StateStore:
        return self.jobs.store

    def evaluate_now(self) -> Snapshot:
        return run_evaluation(self.jobs)

    def refit_now(self) -> Snapshot:
        return run_forecast_refit(self.jobs)

    def measure_now(self) -> None:
        run_measurements(self.jobs)

    def start(self) -> None:
        """Start the jobs: both run once right away, then on their intervals."""
        if self.scheduler is not None and not self.scheduler.running:
            self.scheduler.start()

    def close(self) -> None:
        """Stop the jobs (waiting for a running one to finish its commit), then close the state file."""
        if self._closed:
            return
        self._closed = True
        if self.scheduler is not None and self.scheduler.running:
            self.scheduler.shutdown(wait=True)
        self.close_observer()
        self.store.close()


def default_observer(settings: Settings) -> Observer:
    """The Prometheus-backed observer (`monitor.observer` over the `monitor.source` adapter)."""
    source = source_from_settings(settings.prometheus)
    return PrometheusObserver(source, long_window=settings.long_window, recording_rules=settings.recording_rules,
                               cycle_timeout=settings.prometheus.timeout)  # fmt: skip


def _closer(observer: Observer) -> Callable[[], None]:
    """How to release what an observer built here holds (the HTTP session's connections)."""
    if isinstance(observer, PrometheusObserver) and isinstance(observer.source, HttpPrometheusSource):
        return observer.source.close
    return _nothing


def build_services(
    settings: Settings,
    observer: Observer | None = None,
    *,
    clock: Callable[[], float] = time.time,
    timer: Callable[[], float] = time.perf_counter,
    registry: CollectorRegistry | None = None,
    schedule: bool = True,
) -> Services:
    """Everything `planwatch serve` runs. Tests pass an observer, a clock and `schedule=False`, then drive
    the jobs with `evaluate_now()` / `refit_now()`. Raises PlanError, ConfigError or sqlite3.Error."""
    if settings.plan is None:
        raise ConfigError("no plan: pass PLAN or set plan in the configuration")
    plan = load_plan(settings.plan)
    sizing = size_plan(plan)
    owned = observer is None
    observer = observer or default_observer(settings)
    close_observer = _closer(observer) if owned else _nothing
    results = Results(Snapshot(plan, sizing, shown(SourceHealth(None, settings.prometheus.url))), render_bodies)
    registry = registry if registry is not None else CollectorRegistry()
    registry.register(AdvisorMetrics(results, clock))
    store = StateStore.open(settings.state_db)
    registry.register(StateMetrics(lambda: store.unreadable_rows))
    registry.register(MeasurementMetrics(lambda: store.measurement_record().values()))
    jobs = JobContext(plan, sizing, settings, observer, store, results, clock, timer)
    services = Services(settings, jobs, registry, _scheduler(jobs) if schedule else None, close_observer)
    services.app = create_app(ApiContext(settings, results, store, registry, clock), _lifespan(services))
    return services


def refit_then_evaluate(jobs: JobContext) -> Snapshot:
    run_forecast_refit(jobs)
    return run_evaluation(jobs)


def _scheduler(jobs: JobContext) -> BackgroundScheduler:
    scheduler = BackgroundScheduler(
        timezone=UTC, job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None}
    )
    now = datetime.now(UTC)
    s = jobs.settings
    scheduler.add_job(run_forecast_refit, "interval", args=[jobs], seconds=s.forecast_interval,
                      next_run_time=now + timedelta(seconds=s.forecast_interval),
                      id="forecast-refit", name="forecast refit")  # fmt: skip
    # The first refit runs at once and is followed by an evaluation, so the first answer with a forecast
    # (a schedule, needed_at_forecast_peak) does not wait a whole evaluation interval.
    scheduler.add_job(refit_then_evaluate, "date", args=[jobs], run_date=now, id="first-refit",
                      name="first forecast refit, then an evaluation")  # fmt: skip
    scheduler.add_job(run_evaluation, "interval", args=[jobs], seconds=s.evaluation_interval, next_run_time=now,
                      id="evaluation", name="evaluation")  # fmt: skip
    # The record's range queries are the heaviest planwatch runs: first after start-up's evaluations, not with them.
    later = now + timedelta(seconds=2 * s.evaluation_interval)
    scheduler.add_job(run_measurements, "interval", args=[jobs], seconds=s.measurement_interval, next_run_time=later,
                      id="measurements", name="measurement record")  # fmt: skip
    return scheduler


def _lifespan(services: Services) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        services.start()
        log.info("planwatch advisor started: plan %s, Prometheus %s", services.jobs.plan.name,
                 redact_url(services.settings.prometheus.url))  # fmt: skip
        try:
            yield
        finally:
            services.close()

    return lifespan
