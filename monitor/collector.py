"""The Prometheus-backed Collector: catalog queries per tier -> typed observations (an adapter, I/O).

Every query is per tier and aggregated in PromQL, so their number is fixed per tier (`queries_per_tier`)
and does not grow with the replica count; they run concurrently on a small thread pool. Where the
recording rules of `rules/recording.yml` run (found per tier by two probe queries), the same fields are
read from the recorded `tier:*` series instead of the raw ones (`monitor.queries.recorded`): a raw query's
cost grows with the replicas it touches, a recorded one's does not. A window is read from recorded series
only when their history reaches back over it, so rules installed an hour ago serve the 5-minute burn window
at once and the week-long peak only a week later. Histograms are
fetched once per window as bucket vectors (`sum by (le, model_name)`), and their quantiles and SLO shares
are derived here with histogram_quantile's own interpolation: the catalog's quantile query is kept on each
value as the expression a reviewer reruns to get the same number.

Unknown is not zero: a value without data, NaN, older than `max_age_seconds` (the tier's freshest vLLM
sample), computed over a tier with no replica up, or from fewer than `min_requests` requests, is an
unknown with its reason.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from typing import Any, cast

from monitor import queries as q
from monitor.batch_collect import with_batch_readings
from monitor.histogram import buckets_by_group, fraction_over_groups, merged_quantile, merged_quantile_bound
from monitor.observe.caveats import absent_key_series, speculative_decoding
from monitor.observe.collector import DemandHistory, SourceHealth
from monitor.observe.fleet import MIN_HISTORY_SHARE, FleetInputs, covered, fleet_observation, history_gate
from monitor.observe.model import Measurement, TierObservation
from monitor.plan.model import FLEET, Plan, Tier
from monitor.queries.cost import GPUS_MEAN, TOKENS_RATE
from monitor.queries.query import Query
from monitor.queries.recorded import Recorded, earliest, freshness
from monitor.queries.reproduce import fraction_over_expr, quantile_expr
from monitor.queries.selector import Selector
from monitor.source import PrometheusSource, PrometheusUnreachable, gate_down, gate_stale, measurement
from monitor.source import check as check_health
from monitor.units import parse_duration

__all__ = ["BURN_WINDOWS", "PrometheusCollector", "queries_per_tier"]

# Burn windows judged by planwatch itself: the page pairs of the SRE policy (1h/5m, 6h/30m). The ticket
# pairs (1d/2h, 3d/6h) run as Prometheus rules (`rules/`), where long windows are cheap.
BURN_WINDOWS = ("5m", "30m", "1h", "6h")

# Observation field -> (catalog query, which window: "window" = the check window, "long" = the long window).
_FIELDS: dict[str, tuple[Query, str]] = {
    "request_rate": (q.REQUEST_RATE, "window"),
    "demand_rate": (q.DEMAND_RATE, "window"),
    "peak_rate": (q.PEAK_REQUEST_RATE.with_window("1h", step="5m"), "long"),
    "average_rate": (q.REQUEST_RATE, "long"),
    "prefix_hit_rate": (q.PREFIX_CACHE_HIT_RATIO, "window"),
    "kv_occupancy_mean": (q.KV_USAGE_MEAN, "window"),
    "kv_occupancy_max": (q.KV_USAGE_MAX, "window"),
    "preemption_rate": (q.PREEMPTION_RATE, "window"),
    "running": (q.RUNNING, "window"),
    "waiting": (q.WAITING, "window"),
    "output_tokens_per_second_per_replica": (q.GENERATION_TOKENS_PER_REPLICA, "window"),
    "prompt_tokens_rate": (q.PROMPT_TOKENS_RATE, "window"),
    "batch_per_replica": (q.BATCH_PER_REPLICA, "window"),
    "error_ratio": (q.ERROR_RATIO, "window"),
    "replicas_up": (q.REPLICAS_UP, "window"),
    "replicas_ready": (q.REPLICAS_READY, "window"),
    "cold_start_p95": (q.COLD_START_P95, "long"),
    "calls_per_request": (q.CALLS_PER_USER_REQUEST, "window"),
    "gpu_utilization": (q.GPU_UTIL_MEAN, "window"),
    "gpu_dram_active": (q.DRAM_ACTIVE_MEAN, "window"),
    "gpu_memory_used_fraction": (q.GPU_MEMORY_USED_RATIO, "window"),
    "gpu_power_watts": (q.GPU_POWER_MEAN, "window"),
    "gpu_xid_errors": (q.XID_GPUS, "window"),
    "tokens_rate_long": (TOKENS_RATE, "long"),
    "gpus_mean_long": (GPUS_MEAN, "long"),
}
# Histogram -> (bucket-vector query, {observation field: (quantile, the quantile's own catalog query)}).
_HISTOGRAMS: dict[str, tuple[Query, dict[str, tuple[float, Query]]]] = {
    "ttft": (q.TTFT_BUCKETS, {"ttft_p50": (0.5, q.TTFT_P50), "ttft_p95": (0.95, q.TTFT_P95),
                              "ttft_p99": (0.99, q.TTFT_P99)}),
    "tpot": (q.TPOT_BUCKETS, {"tpot_p50": (0.5, q.TPOT_P50), "tpot_p95": (0.95, q.TPOT_P95),
                              "tpot_p99": (0.99, q.TPOT_P99)}),
    "itl": (q.ITL_BUCKETS, {"itl_p95": (0.95, q.ITL_P95)}),
    "prompt": (q.PROMPT_TOKENS_BUCKETS, {"prompt_p50": (0.5, q.PROMPT_TOKENS_P50),
                                         "prompt_p95": (0.95, q.PROMPT_TOKENS_P95)}),
    "output": (q.OUTPUT_TOKENS_BUCKETS, {"output_p50": (0.5, q.OUTPUT_TOKENS_P50),
                                         "output_p95": (0.95, q.OUTPUT_TOKENS_P95)}),
    "queue": (q.QUEUE_TIME_BUCKETS, {"queue_time_p95": (0.95, q.QUEUE_TIME_P95)}),
}  # fmt: skip
# Observation field -> how it is read from recorded series (monitor.queries.recorded). The long-window
# readings differ from their raw queries in one way each: the peak is the highest 5-minute rate (the raw
# query's slices are 5 minutes too), and cold start is the slowest hour's p95 (the rule's own window),
# which errs on the early side for scale-up lead times. Running and waiting requests are read raw: an
# instant sum costs one sample per replica, and a recorded one would lag a rule interval behind the queue.
_RECORDED: dict[str, Recorded] = {
    "request_rate": Recorded(q.REQUEST_RATE),
    "demand_rate": Recorded(q.DEMAND_RATE),
    "peak_rate": Recorded(q.REQUEST_RATE, "max"),
    "average_rate": Recorded(q.REQUEST_RATE),
    "prefix_hit_rate": Recorded(
        q.PREFIX_CACHE_HITS_RATE, per=q.PREFIX_CACHE_QUERIES_RATE, fallback=q.PREFIX_CACHE_HIT_RATE_V0
    ),
    "kv_occupancy_mean": Recorded(q.KV_USAGE_MEAN),
    "kv_occupancy_max": Recorded(q.KV_USAGE_MAX, "max"),
    "preemption_rate": Recorded(q.PREEMPTION_RATE),
    "output_tokens_per_second_per_replica": Recorded(q.GENERATION_TOKENS_PER_REPLICA),
    "prompt_tokens_rate": Recorded(q.PROMPT_TOKENS_RATE),
    "batch_per_replica": Recorded(q.BATCH_PER_REPLICA),
    "error_ratio": Recorded(q.ERROR_RATE, per=q.REQUEST_RATE),
    "replicas_up": Recorded(q.REPLICAS_UP, "last"),
    "replicas_ready": Recorded(q.REPLICAS_READY, "last"),
    "cold_start_p95": Recorded(q.COLD_START_P95, "max"),
    "calls_per_request": Recorded(q.GATEWAY_CALLS_RATE, per=q.GATEWAY_USER_REQUESTS_RATE),
    "gpu_utilization": Recorded(q.GPU_UTIL_MEAN),
    "gpu_dram_active": Recorded(q.DRAM_ACTIVE_MEAN),
    "gpu_memory_used_fraction": Recorded(q.GPU_MEMORY_USED_RATIO, "max"),
    "gpu_power_watts": Recorded(q.GPU_POWER_MEAN),
    "gpu_xid_errors": Recorded(q.XID_GPUS, "max"),
}
# Rates and ratios that read 0 over a dead fleet: unknown when no replica is up.
_NEEDS_A_REPLICA_UP = {"request_rate", "demand_rate", "output_tokens_per_second_per_replica", "batch_per_replica",
                       "error_ratio", "preemption_rate", "running", "waiting", "prompt_tokens_rate"}  # fmt: skip
# Statistics over finished requests in the window: judged only with enough requests behind them.
_PER_REQUEST = ("prompt_p50", "prompt_p95", "output_p50", "output_p95", "ttft_p50", "ttft_p95", "ttft_p99",
                "tpot_p50", "tpot_p95", "tpot_p99", "itl_p95", "queue_time_p95", "error_ratio",
                "prefix_hit_rate")  # fmt: skip
# Statistics of the long window's history: unknown where the history covers too little of it.
_OVER_HISTORY = ("peak_rate", "average_rate")
# Facts about the fleet's state or about history, not fresh engine samples: not gated on staleness.
_NOT_STALENESS_GATED = {"replicas_up", "replicas_ready", "cold_start_p95", "peak_rate", "average_rate",
                        "tokens_rate_long", "gpus_mean_long"}  # fmt: skip

Samples = list[tuple[dict[str, str], float]]


@dataclass(frozen=True)
class _Buckets:
    """A bucket vector as fetched: the expression sent and the samples it answered."""

    expr: str
    samples: Samples


def queries_per_tier(burn_windows: tuple[str, ...] = BURN_WINDOWS, window: str = "1h", probes: bool = True) -> int:
    """Fixed per tier, whatever the replica count: instant fields, data age, speculative decoding, one bucket vector per
    histogram and window (TTFT and TPOT also per burn window), error ratio per burn window, the two
    request-rate histories of the fleet view, and (unless the recording rules are switched off) the two
    probes that tell whether the tier's recorded series are fresh and how far back they reach."""
    slo_windows = len({window, *burn_windows})
    fixed = len(_FIELDS) + 2 + (len(_HISTOGRAMS) - 2) + 2 * slo_windows + len(burn_windows) + 2
    return fixed + (2 if probes else 0)


# A window is answered from recorded series when they reach back to its start, give or take the probe's
# 5-minute resolution and the rule's own 5-minute window.
_REACH_SLACK_SECONDS = 600.0


@dataclass(frozen=True)
class _Mode:
    """Since when a tier's recorded series reach back (None: no fresh recorded series, read raw)."""

    since: float | None = None
    now: float = 0.0

    def covers(self, window: str) -> bool:
        return self.since is not None and self.since <= self.now - parse_duration(window) + _REACH_SLACK_SECONDS


@dataclass
class PrometheusCollector:
    source: PrometheusSource
    long_window: str = "7d"
    max_age_seconds: float = 300.0
    burn_windows: tuple[str, ...] = BURN_WINDOWS
    workers: int = 8
    min_requests: int = 50
    recording_rules: bool = True  # read recorded `tier:*` series where they are present and fresh
    min_history_share: float = MIN_HISTORY_SHARE  # long-window statistics need this share of the window
    # The whole collection's bound (the source's configured timeout): queries still running past it end the
    # cycle as "Prometheus unreachable", however many there are, rather than taking timeout x queries / workers.
    cycle_timeout: float | None = None

    def collect(self, plan: Plan, now: float, window: str) -> dict[str, TierObservation]:
        """One observation per tier, plus the fleet view under `FLEET`. The first PrometheusUnreachable
        ends the collection at once: the queries still queued are cancelled, not retried one by one."""
        ends = time.monotonic() + self.cycle_timeout if self.cycle_timeout else None
        probe = check_health(self.source)  # one cheap query first, not a fan-out of doomed ones
        if not probe.reachable:
            raise PrometheusUnreachable(probe.url, probe.reason)
        pool = ThreadPoolExecutor(max_workers=self.workers)
        try:
            modes = {name: self._within(f, ends) for name, f in self._modes(plan, now, pool).items()}
            fetched = {t.name: self._fetch(t, window, now, pool, modes[t.name]) for t in plan.tiers}
            pending = self._rate_histories(plan, now, pool, modes)
            values = {n: {k: self._within(f, ends) for k, f in futures.items()} for n, futures in fetched.items()}
            rates: dict[str, dict[str, list[float | None]]] = {
                res: {n: self._within(f, ends) for n, f in by_tier.items()} for res, by_tier in pending.items()
            }
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
        shares = {t.name: covered(rates["5m"][t.name]) for t in plan.tiers}
        tiers = {t.name: self._observation(plan, t, values[t.name], now, window, shares[t.name]) for t in plan.tiers}
        prompt = {n: cast(_Buckets, v[("buckets", "prompt", window)]).samples for n, v in values.items()}
        output = {n: cast(_Buckets, v[("buckets", "output", window)]).samples for n, v in values.items()}
        queries = {"prompt": q.PROMPT_TOKENS_BUCKETS.template, "output": q.OUTPUT_TOKENS_BUCKETS.template,
                   "rate_5m": q.REQUEST_RATE.template, "rate_1m": q.REQUEST_RATE.template}  # fmt: skip
        inputs = FleetInputs(prompt, output, rates["5m"], rates["1m"], self.long_window, queries, self.min_requests,
                             self.min_history_share)  # fmt: skip
        observed = {**tiers, FLEET: fleet_observation(tiers, inputs, now, window)}
        return with_batch_readings(self.source, plan, now, observed)

    def _within(self, future: Future[Any], ends: float | None) -> Any:
        """The future's result, waited for until the cycle's deadline at most."""
        if ends is None:
            return future.result()
        try:
            return future.result(timeout=max(0.0, ends - time.monotonic()))
        except FutureTimeout:
            raise PrometheusUnreachable(
                self.source.url,
                f"the evaluation's queries did not all answer within the configured timeout "
                f"({self.cycle_timeout:g}s); raise the timeout for a slow or large Prometheus",
            ) from None

    def _modes(self, plan: Plan, now: float, pool: ThreadPoolExecutor) -> dict[str, Future[_Mode]]:
        """Per tier: are its recorded series fresh, and since when do they reach back?"""
        return {t.name: pool.submit(self._mode, t.label_selector, now, self.long_window) for t in plan.tiers}

    def _mode(self, selector: Mapping[str, str], now: float, span: str) -> _Mode:
        if not self.recording_rules:
            return _Mode()
        age = self._present(freshness(selector), now)
        if age is None or age > self.max_age_seconds:
            return _Mode(None, now)
        return _Mode(self._present(earliest(selector, span), now), now)

    def _present(self, expr: str, now: float) -> float | None:
        samples = self.source.instant(expr, at=now).samples
        return _finite(samples[0].value) if samples else None

    def _fetch(
        self, tier: Tier, window: str, now: float, pool: ThreadPoolExecutor, mode: _Mode
    ) -> dict[tuple[str, ...], Any]:
        """Every query of one tier, submitted to the pool: instant values, bucket vectors, error ratios."""
        sel = tier.label_selector
        jobs: dict[tuple[str, ...], Future[Any]] = {}
        for name, (query, w) in _FIELDS.items():
            over = self.long_window if w == "long" else window
            reading = _RECORDED.get(name) if mode.covers(over) else None
            expr = reading.expr(sel, over) if reading else query.for_tier(sel, window=over)
            jobs[("value", name)] = pool.submit(self._value, expr, over, now)
        jobs[("value", "data_age")] = pool.submit(self._value, q.DATA_AGE.for_tier(sel), "now", now)
        spec = q.SPEC_DECODE_TOKENS_PER_STEP.for_tier(sel, window=window)
        jobs[("value", "spec_decode_tokens_per_step")] = pool.submit(self._value, spec, window, now)
        for family, (buckets, _) in _HISTOGRAMS.items():
            windows = {window, *self.burn_windows} if family in ("ttft", "tpot") else {window}
            for w in windows:
                expr = Recorded(buckets).expr(sel, w) if mode.covers(w) else buckets.for_tier(sel, window=w)
                jobs[("buckets", family, w)] = pool.submit(self._samples, expr, now)
        errors = Recorded(q.ERROR_RATE, per=q.REQUEST_RATE)
        for w in self.burn_windows:
            expr = errors.expr(sel, w) if mode.covers(w) else q.ERROR_RATIO.for_tier(sel, window=w)
            jobs[("value", f"bad:errors:{w}")] = pool.submit(self._value, expr, w, now)
        return jobs

    def _value(self, expr: str, window: str, now: float) -> Measurement:
        return measurement(self.source.instant(expr, at=now), window=window)

    def _samples(self, expr: str, now: float) -> _Buckets:
        return _Buckets(expr, [(dict(s.labels), s.value) for s in self.source.instant(expr, at=now).samples])

    def _rate_histories(
        self, plan: Plan, now: float, pool: ThreadPoolExecutor, modes: Mapping[str, _Mode]
    ) -> dict[str, dict[str, Future[list[float | None]]]]:
        """Each tier's request rate over the long window at 5-minute and 1-minute resolution (fleet peaks)."""
        start = now - parse_duration(self.long_window)
        futures = {
            (res, t.name): pool.submit(self._rate_series, expr, start, now, step)
            for res, step, recorded in (("5m", 300.0, q.REQUEST_RATE), ("1m", 60.0, q.REQUEST_RATE_1M))
            for t in plan.tiers
            for expr in [recorded.recorded(t.label_selector) if modes[t.name].covers(self.long_window)
                         else q.REQUEST_RATE.for_tier(t.label_selector, window=res)]
        }  # fmt: skip
        out: dict[str, dict[str, Future[list[float | None]]]] = {"5m": {}, "1m": {}}
        for (res, name), future in futures.items():
            out[res][name] = future
        return out

    def _rate_series(self, expr: str, start: float, end: float, step: float) -> list[float | None]:
        result = self.source.range(expr, start, end, step)
        # Prometheus answers on the grid start + k x step, with millisecond timestamps: match at that precision.
        points: dict[float, float] = {}
        for series in result.series:
            for p in series.points:
                points[round(p.timestamp, 3)] = points.get(round(p.timestamp, 3), 0.0) + p.value
        grid = [round(start + i * step, 3) for i in range(int((end - start) // step) + 1)]
        return [_finite(points.get(t)) for t in grid]

    def demand_history(self, plan: Plan, tier: str, start: float, end: float, step_seconds: float) -> DemandHistory:
        """Demand at whole multiples of the step (so repeated fits see one grid); None where no data."""
        window, sel = _promql_duration(step_seconds), plan.tier(tier).label_selector
        expr = q.DEMAND_RATE.for_tier(sel, window=window)
        span = _promql_duration(end - start)
        if step_seconds >= 300 and self._mode(sel, end, span).covers(span):
            expr = Recorded(q.DEMAND_RATE).expr(sel, window)  # weeks of one series instead of every replica's
        first, last = start - start % step_seconds + step_seconds, end - end % step_seconds
        values = self._rate_series(expr, first, last, step_seconds)
        stamps = tuple(first + i * step_seconds for i in range(len(values)))
        return DemandHistory(tier, step_seconds, stamps, tuple(values), expr)

    def health(self, now: float) -> SourceHealth:
        h = check_health(self.source)
        age = self.source.instant("min(time() - timestamp(vllm:num_requests_running))", at=now) if h.reachable else None
        newest = age.samples[0].value if age and age.samples else None
        return SourceHealth(h.reachable, h.url, h.reason, newest)

    def _observation(
        self, plan: Plan, tier: Tier, fetched: Mapping[tuple[str, ...], Any], now: float, window: str, share: float
    ) -> TierObservation:
        values = {key[1]: v for key, v in fetched.items() if key[0] == "value"}
        values.update(_quantiles(tier, fetched, window))
        values.update(_bad_fractions(plan, tier, fetched, self.burn_windows))
        age, up = values.pop("data_age"), values["replicas_up"]
        spec = values.pop("spec_decode_tokens_per_step")
        if not age.known and age.reason.startswith("no data"):
            age = self._absent(tier, age, now)
            values.update({k: age for k in ("replicas_up", "replicas_ready") if not values[k].known})
        values = speculative_decoding(values, spec)
        prompt: _Buckets = fetched[("buckets", "prompt", window)]
        requests = _requests_seen(prompt.samples, parse_duration(window))
        gated = {k: self._gate(k, v, age, up) for k, v in values.items()}
        for key in _PER_REQUEST:
            gated[key] = self._enough(gated[key], requests, window)
        for key in _OVER_HISTORY:
            gated[key] = history_gate(gated[key], share, self.long_window, self.min_history_share)
        no_ksm = not gated["replicas_ready"].known
        if no_ksm and gated["replicas_up"].known:
            gated["replicas_ready"] = replace(gated["replicas_up"], reason="kube-state-metrics absent: replicas up")
        if gated["cold_start_p95"].value is None and "no data" in gated["cold_start_p95"].reason:
            why = _NO_KSM if no_ksm else f"no replica started in {self.long_window}"
            gated["cold_start_p95"] = replace(gated["cold_start_p95"], reason=why)
        bad = {k.removeprefix("bad:"): v for k, v in gated.items() if k.startswith("bad:")}
        fields = {k: v for k, v in gated.items() if not k.startswith("bad:")}
        extra = {"spec_decode_tokens_per_step": spec} if spec.known else {}
        buckets = {family: _bounds(fetched[("buckets", family, window)].samples) for family in _TOKEN_FAMILIES}
        base = TierObservation(tier=tier.name, evaluated_at=now, window=window, bad_fraction=bad, extra=extra,
                               token_buckets={k: v for k, v in buckets.items() if v})  # fmt: skip
        return replace(base, **cast(dict[str, Any], fields))

    def _absent(self, tier: Tier, age: Measurement, now: float) -> Measurement:
        """Why a tier has no key series, naming the spellings that were found in its place, if any."""
        names = self.source.instant(f"count by (__name__) ({{{_MISSPELT},{_selector(tier)}}})", at=now).samples
        found = sorted(s.labels.get("__name__", "") for s in names)
        hint = (f"found {', '.join(found)} instead: restore vLLM's names with the metric_relabel_configs rule in the "
                "README (Pointing it at a real cluster)") if found else ""  # fmt: skip
        return Measurement.unknown(absent_key_series(str(tier.label_selector), hint), age.query, age.window)

    def _enough(self, value: Measurement, requests: float | None, window: str) -> Measurement:
        """A per-request statistic from a handful of requests is noise: unknown below `min_requests`,
        and otherwise it carries the number of requests it was computed from."""
        if not value.known or requests is None:
            return value
        if requests < self.min_requests:
            reason = f"too few requests: {requests:.0f} finished in {window} (need {self.min_requests})"
            return Measurement.unknown(reason, value.query, value.window)
        return replace(value, samples=round(requests))

    def _gate(self, key: str, value: Measurement, age: Measurement, up: Measurement) -> Measurement:
        if key in _NEEDS_A_REPLICA_UP or key.startswith("bad:"):
            value = gate_down(value, up)
        if key not in _NOT_STALENESS_GATED:
            value = gate_stale(value, age, self.max_age_seconds)
        return value


def _quantiles(tier: Tier, fetched: Mapping[tuple[str, ...], Any], window: str) -> dict[str, Measurement]:
    """p50/p95/p99 from each histogram's bucket vector, exactly as histogram_quantile computes them; each carries
    the fetched bucket query aggregated to the one series it was computed as (`monitor.queries.reproduce`)."""
    out = {}
    for family, (_, fields) in _HISTOGRAMS.items():
        fetched_buckets: _Buckets = fetched[("buckets", family, window)]
        groups = list(buckets_by_group(fetched_buckets.samples).values())
        for field, (quantile, _) in fields.items():
            expr = quantile_expr(quantile, fetched_buckets.expr, fetched_buckets.samples)
            value = merged_quantile(quantile, groups) if groups else None
            bound = merged_quantile_bound(quantile, groups)  # an edge bucket: a bound, not a measurement
            out[field] = (Measurement(value, expr, window, bound=bound) if value is not None
                          else Measurement.unknown("no observations in the window", expr, window))  # fmt: skip
    return out


def _bad_fractions(
    plan: Plan, tier: Tier, fetched: Mapping[tuple[str, ...], Any], windows: Sequence[str]
) -> dict[str, Measurement]:
    """Share of requests over the tier's TTFT and TPOT thresholds per burn window (interpolated in-bucket), with
    the PromQL that computes the same share from the fetched bucket vector."""
    thresholds = dict(zip(("ttft", "tpot"), plan.slo_for(tier), strict=True))
    out = {}
    for family, threshold in thresholds.items():
        for w in windows:
            fetched_buckets: _Buckets = fetched[("buckets", family, w)]
            share = fraction_over_groups(fetched_buckets.samples, threshold)
            expr = fraction_over_expr(fetched_buckets.expr, fetched_buckets.samples, threshold) or fetched_buckets.expr
            unknown = Measurement.unknown(share.reason or "no observations", expr, w)
            out[f"bad:{family}:{w}"] = Measurement(share.fraction, expr, w) if share.fraction is not None else unknown
    return out


# The key series as it reads when a scrape strips vLLM's colons (prometheus_client >= 0.23 under OpenMetrics)
# or Ray Serve exports it (`ray_vllm_` since vLLM sanitises names for Ray, `ray_vllm:` before).
_MISSPELT = '__name__=~"vllm_num_requests_running|ray_vllm[:_]num_requests_running"'
_TOKEN_FAMILIES = ("prompt", "output")
_NO_KSM = "no data: kube-state-metrics reports none of the tier's pods (kube_pod_created, kube_pod_status_ready_time)"


def _selector(tier: Tier) -> str:
    return ",".join(m.render() for m in Selector.of(tier.label_selector).matchers())


def _bounds(samples: Samples) -> tuple[float, ...]:
    """The finite bucket bounds the server exposes (every model of the tier), as histogram_quantile sees them."""
    groups = buckets_by_group(samples)
    return tuple(sorted({b.le for g in groups.values() for b in g if b.le != float("inf")}))


def _requests_seen(bucket_samples: Sequence[tuple[Mapping[str, str], float]], window_seconds: float) -> float | None:
    """Requests finished in the window: the +Inf bucket rate of the prompt-length histogram x the window."""
    rates = [v for labels, v in bucket_samples if labels.get("le") == "+Inf" and v == v]
    return sum(rates) * window_seconds if rates else None


def _finite(value: float | None) -> float | None:
    return value if value is not None and value == value and abs(value) != float("inf") else None


def _promql_duration(seconds: float) -> str:
    return f"{int(seconds)}s" if seconds % 60 else f"{int(seconds // 60)}m"
