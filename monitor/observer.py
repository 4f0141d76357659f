"""The Prometheus-backed Observer: catalog queries per tier -> typed observations (an adapter, I/O).

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

import math
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from dataclasses import field as dataclass_field
from functools import cache
from typing import Any, cast

from monitor import observer_fields as reads
from monitor import queries as q
from monitor.batch_collect import with_batch_readings
from monitor.histogram import buckets_by_group, fraction_over_groups, merged_quantile, merged_quantile_bound
from monitor.observe.caveats import Pods, absent_key_series, explain_gpus, gpus_unexplained, speculative_decoding
from monitor.observe.dispersion import fit_bursts, overdispersion
from monitor.observe.fleet import MIN_HISTORY_SHARE, FleetInputs, covered, fleet_observation, history_gate
from monitor.observe.model import Measurement, TierObservation
from monitor.observe.observer import DemandHistory, SourceHealth
from monitor.plan.model import FLEET, Plan, Tier
from monitor.queries.recorded import Recorded, earliest, freshness
from monitor.queries.reproduce import fraction_over_expr, quantile_expr
from monitor.queries.selector import Selector
from monitor.source import PrometheusSource, PrometheusUnreachable, gate_down, gate_stale, measurement
from monitor.source import check as check_health
from monitor.units import format_duration, parse_duration

__all__ = ["BURN_WINDOWS", "PrometheusObserver", "queries_per_tier"]

# Re-exported where the replay and the benchmarks have always read them.
BURN_WINDOWS = reads.BURN_WINDOWS
queries_per_tier = reads.queries_per_tier

Samples = list[tuple[dict[str, str], float]]


@dataclass(frozen=True)
class _Buckets:
    """A bucket vector as fetched: the expression sent and the samples it answered."""

    expr: str
    samples: Samples


# The rate series read over the long window, by key: (resolution, the query, the query whose recorded series
# stands in once the rules cover the window).
_RATE_SERIES = {
    "5m": ("5m", q.REQUEST_RATE, q.REQUEST_RATE),
    "1m": ("1m", q.REQUEST_RATE, q.REQUEST_RATE_1M),
    "demand_1m": ("1m", q.ARRIVAL_RATE_1M, q.ARRIVAL_RATE_1M),
}

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
class PrometheusObserver:
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
    # The probe the last `collect` started with: `health` at the same evaluation time reuses it, so a service
    # cycle (collect, then health) probes Prometheus once, not twice.
    _probe: SourceHealth | None = dataclass_field(default=None, init=False, repr=False, compare=False)

    def collect(self, plan: Plan, now: float, window: str) -> dict[str, TierObservation]:
        """One observation per tier, plus the fleet view under `FLEET`. The first PrometheusUnreachable
        ends the collection at once: the queries still queued are cancelled, not retried one by one."""
        ends = time.monotonic() + self.cycle_timeout if self.cycle_timeout else None
        probe = self._probe = check_health(self.source, now)  # one cheap query first, not a fan-out of doomed ones
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
        gpus = cache(lambda: self._gpu_pods(plan, window, now))  # fleet-wide: read once a cycle, if a tier needs it
        tiers = {t.name: self._observation(plan, t, values[t.name], now, window, shares[t.name], gpus)
                 for t in plan.tiers}  # fmt: skip
        prompt = {n: cast(_Buckets, v[("buckets", "prompt", window)]).samples for n, v in values.items()}
        output = {n: cast(_Buckets, v[("buckets", "output", window)]).samples for n, v in values.items()}
        queries = {kind: {n: cast(_Buckets, v[("buckets", kind, window)]).expr for n, v in values.items()}
                   for kind in ("prompt", "output")}  # fmt: skip
        queries.update({f"rate_{key}": exprs for key, exprs in self._rate_exprs(plan, modes).items()})
        demand_1m = queries["rate_demand_1m"]
        for t in plan.tiers:  # the recorded series missing (rules older than planwatch's, or not yet evaluated)
            if modes[t.name].covers(self.long_window) and all(v is None for v in rates["demand_1m"][t.name]):
                expr = q.ARRIVAL_RATE_1M.for_tier(t.label_selector, window="1m")
                rates["demand_1m"][t.name] = self._long_series(expr, now, 60.0)
                demand_1m[t.name] = expr
        tiers = {name: replace(t, minute_overdispersion=self._bursts(rates["demand_1m"][name], demand_1m[name]))
                 for name, t in tiers.items()}  # fmt: skip
        inputs = FleetInputs(prompt, output, rates["5m"], rates["1m"], self.long_window, queries, self.min_requests,
                             self.min_history_share)  # fmt: skip
        observed = {**tiers, FLEET: fleet_observation(tiers, inputs, now, window)}
        return with_batch_readings(self.source, plan, now, observed)

    def _bursts(self, demand_1m: Sequence[float | None], expr: str) -> Measurement:
        """The tier's minute bursts over the long window (`monitor.observe.dispersion`): judged by the fit's own
        test and its minimum of minutes, not by the window's coverage (an hour of bursty minutes shows them). No
        series at all says which (recorded rules older than planwatch's lack the 1-minute arrivals)."""
        if all(v is None for v in demand_1m):
            return Measurement.unknown(f"no 1-minute arrivals over {self.long_window}: {expr}", "", self.long_window)
        return overdispersion(fit_bursts(demand_1m), self.long_window)

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
        for name, (query, w) in reads.FIELDS.items():
            over = self.long_window if w == "long" else window if w == "window" else w
            reading = reads.RECORDED.get(name) if mode.covers(over) else None
            expr = reading.expr(sel, over) if reading else query.for_tier(sel, window=over)
            jobs[("value", name)] = pool.submit(self._value, expr, over, now)
        jobs[("value", "data_age")] = pool.submit(self._value, q.DATA_AGE.for_tier(sel), "now", now)
        spec = q.SPEC_DECODE_TOKENS_PER_STEP.for_tier(sel, window=window)
        jobs[("value", "spec_decode_tokens_per_step")] = pool.submit(self._value, spec, window, now)
        for family, (buckets, _) in reads.HISTOGRAMS.items():
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

    def _rate_exprs(self, plan: Plan, modes: Mapping[str, _Mode]) -> dict[str, dict[str, str]]:
        """Each tier's request-rate expression at 5-minute and 1-minute resolution (the fleet's peaks), and its
        arrivals at 1-minute (the bursts the advice's minute margin reads), keyed by `_RATE_SERIES`."""
        return {
            key: {t.name: recorded.recorded(t.label_selector) if modes[t.name].covers(self.long_window)
                  else raw.for_tier(t.label_selector, window=res) for t in plan.tiers}
            for key, (res, raw, recorded) in _RATE_SERIES.items()
        }  # fmt: skip

    def _rate_histories(
        self, plan: Plan, now: float, pool: ThreadPoolExecutor, modes: Mapping[str, _Mode]
    ) -> dict[str, dict[str, Future[list[float | None]]]]:
        """Each tier's request rate over the long window, asked on the multiples of the step inside it: the grid
        a subquery (`max_over_time(...[7d:5m])`, the fleet value's query) evaluates on."""
        out: dict[str, dict[str, Future[list[float | None]]]] = {}
        for key, exprs in self._rate_exprs(plan, modes).items():
            step = parse_duration(_RATE_SERIES[key][0])
            out[key] = {name: pool.submit(self._long_series, expr, now, step) for name, expr in exprs.items()}
        return out

    def _long_series(self, expr: str, now: float, step: float) -> list[float | None]:
        """`expr` over the long window, on the multiples of `step` inside it."""
        start = now - parse_duration(self.long_window)
        return self._rate_series(expr, math.ceil(start / step) * step, math.floor(now / step) * step, step)

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
        window, sel = format_duration(step_seconds), plan.tier(tier).label_selector
        expr = q.DEMAND_RATE.for_tier(sel, window=window)
        span = format_duration(end - start)
        if step_seconds >= 300 and self._mode(sel, end, span).covers(span):
            expr = Recorded(q.DEMAND_RATE).expr(sel, window)  # weeks of one series instead of every replica's
        first, last = start - start % step_seconds + step_seconds, end - end % step_seconds
        values = self._rate_series(expr, first, last, step_seconds)
        stamps = tuple(first + i * step_seconds for i in range(len(values)))
        return DemandHistory(tier, step_seconds, stamps, tuple(values), expr)

    def health(self, now: float) -> SourceHealth:
        """The probe of this cycle's `collect` (or a new one), and the age of the newest vLLM sample."""
        probe = self._probe
        h = probe if probe is not None and probe.checked_at == now else check_health(self.source, now)
        if not h.reachable:
            return h
        try:
            age = self.source.instant("min(time() - timestamp(vllm:num_requests_running))", at=now)
        except PrometheusUnreachable as exc:  # gone since the probe
            return replace(h, reachable=False, reason=exc.reason)
        return replace(h, newest_sample_age_seconds=_finite(age.samples[0].value) if age.samples else None)

    def _observation(
        self,
        plan: Plan,
        tier: Tier,
        fetched: Mapping[tuple[str, ...], Any],
        now: float,
        window: str,
        share: float,
        gpus: Callable[[], Pods],
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
        for key in reads.PER_REQUEST:
            gated[key] = self._enough(gated[key], requests, window)
        for key in reads.OVER_HISTORY:
            gated[key] = history_gate(gated[key], share, self.long_window, self.min_history_share)
        if gpus_unexplained(gated):
            gated = explain_gpus(gated, gpus(), self._tier_pods(tier, window, now))
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

    # The two sides of the GPU join, read only when a GPU value is "no data" (to say why): every GPU by pod, which
    # is the same for every tier (so `collect` reads it once a cycle), and the tier's replicas by pod.
    def _gpu_pods(self, plan: Plan, window: str, now: float) -> Pods:
        expr = q.GPU_PODS.for_tier(plan.tiers[0].label_selector, window=window)  # no tier selector in it
        return Pods.of([(s.labels, s.value) for s in self.source.instant(expr, at=now).samples])

    def _tier_pods(self, tier: Tier, window: str, now: float) -> Pods:
        expr = q.TIER_PODS.for_tier(tier.label_selector, window=window)
        return Pods.of([(s.labels, s.value) for s in self.source.instant(expr, at=now).samples])

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
        if key in reads.NEEDS_A_REPLICA_UP or key.startswith("bad:"):
            value = gate_down(value, up)
        if key not in reads.NOT_STALENESS_GATED:
            value = gate_stale(value, age, self.max_age_seconds)
        return value


def _quantiles(tier: Tier, fetched: Mapping[tuple[str, ...], Any], window: str) -> dict[str, Measurement]:
    """p50/p95/p99 from each histogram's bucket vector, exactly as histogram_quantile computes them; each carries
    the fetched bucket query aggregated to the one series it was computed as (`monitor.queries.reproduce`)."""
    out = {}
    for family, (_, fields) in reads.HISTOGRAMS.items():
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
