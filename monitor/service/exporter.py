"""planwatch's results as Prometheus metrics: a custom collector over the latest snapshot, on an injected registry.

Conventions an alert or a KEDA trigger can rely on:
- Unknown is omitted, never 0: no current replicas when Prometheus is away, no drift status for an unknown
  assumption (`planwatch_drift_unknown` says which), no next scale-up when none is planned.
- `planwatch_trigger_active{trigger,tier,severity}` is 1 once the trigger held for its hold time and 0 while
  it is pending; a resolved trigger's series disappears. The value, not a label, carries the state, so the
  series keeps its identity from pending to active (alert on `== 1`).
- `planwatch_business_open` (1 inside the plan's business hours) is judged at scrape time in the plan's
  timezone, because PromQL cannot do timezones. Not `planwatch_business_hours`: promtool's lint reads any
  `_hours` in a name as a non-base unit.
- Percentiles are a `percentile="p50|p95"` label: promtool reserves `quantile` for summaries.
- The plan's assumptions are `planwatch_plan_*` gauges, so "observed vs plan" is one PromQL expression.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric, SummaryMetricFamily
from prometheus_client.registry import Collector

from monitor.drift import Status
from monitor.measurements.model import Item
from monitor.plan.hours import in_business_hours
from monitor.plan.model import ASSUMPTIONS, Plan
from monitor.service.results import Outcome, Results, Snapshot
from monitor.sizing.plan_sizing import PlanSizing
from monitor.triggers import TriggerState

__all__ = ["AdvisorMetrics", "MeasurementMetrics", "StateMetrics", "plan_metrics"]

_DRIFT_LEVEL = {Status.OK: 0.0, Status.WARN: 1.0, Status.BREACH: 2.0}


def _gauge(name: str, doc: str, labels: Iterable[str] = (), unit: str = "") -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=list(labels), unit=unit)


class AdvisorMetrics(Collector):
    """Reads the current snapshot at each scrape; the plan's gauges are built once."""

    def __init__(self, results: Results, clock: Callable[[], float]):
        self._results = results
        self._clock = clock
        first = results.current()
        self._plan_metrics = plan_metrics(first.plan, first.sizing)

    def collect(self) -> Iterator[Metric]:
        s = self._results.current()
        yield from self._plan_metrics
        yield _business_hours(s.plan, self._clock())
        yield from _service(s)
        yield from _recommendations(s)
        yield _triggers(s)
        yield from _drift(s)
        yield from _forecasts(s)


class StateMetrics(Collector):
    """What the state file could not give back: rows skipped because they do not read (see StateStore.evals)."""

    def __init__(self, unreadable_rows: Callable[[], Mapping[str, int]]):
        self._unreadable_rows = unreadable_rows

    def collect(self) -> Iterator[Metric]:
        skipped = CounterMetricFamily(
            "planwatch_state_rows_skipped",
            "Stored rows skipped because they cannot be read, by table.",
            labels=["table"],
        )
        for table, count in sorted(self._unreadable_rows().items()):
            skipped.add_metric([table], count)
        yield skipped


def plan_metrics(plan: Plan, sizing: PlanSizing) -> list[Metric]:
    """The plan's assumptions per tier (after routing), its SLOs, replica bounds and tolerances."""
    info = InfoMetricFamily("planwatch_plan", "The capacity plan being held against production.")
    info.add_metric([], {"plan": plan.name})
    peak = _gauge("planwatch_plan_peak_requests_per_second", "Planned peak model calls/s of the tier.", ["tier"])
    avg = _gauge("planwatch_plan_average_requests_per_second", "Planned average model calls/s.", ["tier"])
    prompt = _gauge("planwatch_plan_prompt_tokens", "Planned prompt length by percentile.", ["tier", "percentile"])
    output = _gauge("planwatch_plan_output_tokens", "Planned output length by percentile.", ["tier", "percentile"])
    ttft = _gauge("planwatch_plan_ttft_seconds", "TTFT SLO of the tier (p95).", ["tier", "percentile"])
    tpot = _gauge("planwatch_plan_tpot_seconds", "TPOT SLO of the tier (p95).", ["tier", "percentile"])
    hit = _gauge("planwatch_plan_prefix_cache_hit_ratio", "Planned prefix cache hit ratio (tokens).", ["tier"])
    replicas = _gauge("planwatch_plan_replicas", "Replica bounds of the plan.", ["tier", "kind"])
    cold = _gauge("planwatch_plan_cold_start_seconds", "Planned cold start, created to ready.", ["tier"])
    per_replica = _gauge(
        "planwatch_plan_requests_per_second_per_replica", "Sized capacity of one replica at the SLO.", ["tier"]
    )
    for sized in sizing.tiers:
        s, t = sized.sizing, sized.sizing.tier
        wl, name = s.workload, t.name
        peak.add_metric([name], wl.peak_rps)
        avg.add_metric([name], wl.average_rps)
        for pct, p, o in (("p50", wl.prompt_p50, wl.output_p50), ("p95", wl.prompt_p95, wl.output_p95)):
            prompt.add_metric([name, pct], p)
            output.add_metric([name, pct], o)
        ttft.add_metric([name, "p95"], s.ttft_slo_seconds)
        tpot.add_metric([name, "p95"], s.tpot_slo_seconds)
        hit.add_metric([name], wl.prefix_hit_rate)
        for kind in ("min", "planned", "max"):
            replicas.add_metric([name, kind], getattr(t.replicas, kind))
        cold.add_metric([name], t.cold_start_seconds)
        per_replica.add_metric([name], s.expected.requests_per_second_per_replica)
    return [info, peak, avg, prompt, output, ttft, tpot, hit, replicas, cold, per_replica, *_plan_wide(plan)]


def _plan_wide(plan: Plan) -> list[Metric]:
    availability = _gauge("planwatch_plan_availability_objective", "Availability SLO (share of good requests).")
    availability.add_metric([], plan.slo.availability)
    calls = _gauge("planwatch_plan_calls_per_request", "Planned model calls per user request.")
    calls.add_metric([], plan.workload.calls_per_request)
    tolerance = _gauge(
        "planwatch_plan_tolerance", "Relative drift allowed per assumption before warn/breach.", ["assumption", "level"]
    )
    for name in ASSUMPTIONS:
        t = plan.tolerances.for_assumption(name)
        tolerance.add_metric([name, "warn"], t.warn)
        tolerance.add_metric([name, "breach"], t.breach)
    return [availability, calls, tolerance]


def _business_hours(plan: Plan, now: float) -> Metric:
    g = _gauge("planwatch_business_open", "1 inside the plan's business hours now (plan timezone), else 0.")
    g.add_metric([], 1.0 if in_business_hours(now, plan.workload.business_hours) else 0.0)
    return g


def _service(s: Snapshot) -> Iterator[Metric]:
    duration = SummaryMetricFamily(
        "planwatch_evaluation_duration_seconds",
        "Time one evaluation took (collect, evaluate, store).",
        count_value=s.evaluation_count,
        sum_value=s.duration_seconds_sum,
    )
    yield duration
    runs = CounterMetricFamily("planwatch_evaluations", "Evaluations since start by outcome.", labels=["outcome"])
    for outcome in Outcome:
        runs.add_metric([outcome.value], s.evaluations.get(outcome, 0))
    yield runs
    if s.last_success_at is not None:
        last = _gauge("planwatch_last_successful_evaluation_timestamp_seconds", "Last evaluation with data.")
        last.add_metric([], s.last_success_at)
        yield last
    if s.forecast_refit_at is not None:
        refit = _gauge("planwatch_last_forecast_refit_timestamp_seconds", "Last forecast refit.")
        refit.add_metric([], s.forecast_refit_at)
        yield refit
    if s.source.reachable is not None:
        up = _gauge("planwatch_prometheus_up", "1 if the last evaluation reached Prometheus, else 0.")
        up.add_metric([], 1.0 if s.source.reachable else 0.0)
        yield up


def _recommendations(s: Snapshot) -> Iterator[Metric]:
    recommended = _gauge("planwatch_recommended_replicas", "Replicas planwatch recommends now.", ["tier"])
    current = _gauge("planwatch_current_replicas", "Ready replicas observed (omitted when unknown).", ["tier"])
    stale = _gauge("planwatch_recommendation_stale", "1 when the recommendation holds on unknown data.", ["tier"])
    next_at = _gauge("planwatch_next_scale_up_timestamp_seconds", "When the next scale-up must start.", ["tier"])
    next_to = _gauge("planwatch_next_scale_up_replicas", "Replicas the next scale-up goes to.", ["tier"])
    collapse = _gauge("planwatch_demand_collapse_since_timestamp_seconds",
                      "When the tier's demand collapsed while the SLO counts (held as an incident: no scale-down "
                      "until it returns); absent otherwise.", ["tier"])  # fmt: skip
    for t in s.evaluation.tiers if s.evaluation else ():
        r = t.recommendation
        if r is None:
            continue
        recommended.add_metric([t.tier], r.recommended)
        stale.add_metric([t.tier], 1.0 if r.stale else 0.0)
        if r.current.value is not None:
            current.add_metric([t.tier], r.current.value)
        if r.next_scale_up is not None:
            next_at.add_metric([t.tier], r.next_scale_up.by)
            next_to.add_metric([t.tier], r.next_scale_up.replicas)
        if r.state.collapse is not None:
            collapse.add_metric([t.tier], r.state.collapse.since)
    yield from (recommended, current, stale, next_at, next_to, collapse)


def _triggers(s: Snapshot) -> Metric:
    g = _gauge(
        "planwatch_trigger_active",
        "A revisit-the-design trigger holds: 1 active (held for its hold time), 0 pending.",
        ["trigger", "tier", "severity"],
    )
    for t in s.triggers:
        r = t.record
        g.add_metric([r.trigger, r.tier, r.severity.value], 1.0 if r.state is TriggerState.ACTIVE else 0.0)
    return g


def _drift(s: Snapshot) -> Iterator[Metric]:
    status = _gauge("planwatch_drift_status", "Plan assumption vs production: 0 ok, 1 warn, 2 breach.",
                    ["tier", "assumption"])  # fmt: skip
    unknown = _gauge("planwatch_drift_unknown", "1 when the assumption could not be judged (no data).",
                     ["tier", "assumption"])  # fmt: skip
    ratio = _gauge("planwatch_drift_ratio", "Observed over planned value.", ["tier", "assumption"])
    for t in s.evaluation.sections if s.evaluation else ():  # the tiers and tier="fleet"
        for row in t.drift:
            labels = [t.tier, row.assumption]
            unknown.add_metric(labels, 1.0 if row.status is Status.UNKNOWN else 0.0)
            if row.status in _DRIFT_LEVEL:
                status.add_metric(labels, _DRIFT_LEVEL[row.status])
            if row.ratio is not None:
                ratio.add_metric(labels, row.ratio)
    yield from (status, unknown, ratio)


def _forecasts(s: Snapshot) -> Iterator[Metric]:
    peak = _gauge("planwatch_forecast_peak_requests_per_second", "Forecast mean demand at the next peak.", ["tier"])
    upper = _gauge("planwatch_forecast_peak_upper_requests_per_second", "80% upper bound at the next peak.", ["tier"])
    when = _gauge("planwatch_forecast_peak_timestamp_seconds", "When the next forecast peak is.", ["tier"])
    for name, f in sorted(s.forecasts.items()):
        if f.next_peak_rps is not None and f.next_peak_at is not None:
            peak.add_metric([name], f.next_peak_rps)
            when.add_metric([name], f.next_peak_at)
        if f.next_peak_upper_rps is not None:
            upper.add_metric([name], f.next_peak_upper_rps)
    yield from (peak, upper, when)


class MeasurementMetrics(Collector):
    """The measurement plan's record (read from the state file at each scrape: a few rows) as
    `planwatch_measurement_status{item,tier}`: 0 not yet, 1 partly, 2 measured."""

    def __init__(self, record: Callable[[], Iterable[Item]]):
        self._record = record

    def collect(self) -> Iterator[Metric]:
        g = _gauge("planwatch_measurement_status", "Measurement plan item: 0 not yet, 1 partly, 2 measured.",
                   ("item", "tier"))  # fmt: skip
        try:
            items = list(self._record())
        except sqlite3.Error:  # the state file closed under a late scrape: the record is unknown, not empty
            return
        if not items:  # no record yet (the first refresh runs with the forecast job): nothing to expose
            return
        for item in items:
            g.add_metric([item.id, item.tier], float(item.status.rank))
        yield g
