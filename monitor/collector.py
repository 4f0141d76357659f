"""The Prometheus-backed Collector: catalog queries per tier -> typed observations (an adapter, I/O).

Every query is per tier and aggregated in PromQL, so the number of queries is fixed per tier (see
`queries_per_tier`) and does not grow with the replica count. They run concurrently on a small thread pool.

Unknown is not zero: a value without data, NaN, older than `max_age_seconds` (the tier's freshest vLLM
sample), or computed over a tier with no replica up, is an unknown with its reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, cast

from monitor import queries as q
from monitor.observe.collector import DemandHistory, SourceHealth
from monitor.observe.fleet import FleetInputs, fleet_observation
from monitor.observe.model import Measurement, TierObservation
from monitor.plan.model import FLEET, Plan, Tier
from monitor.queries.histogram import fraction_over_groups
from monitor.queries.query import Query
from monitor.source import PrometheusSource, gate_down, gate_stale, measurement
from monitor.source import check as check_health
from monitor.units import parse_duration

__all__ = ["BURN_WINDOWS", "PrometheusCollector", "queries_per_tier"]

# Burn windows judged by planwatch itself; the 1d and 3d pairs of the SRE policy run as Prometheus
# recording and alerting rules (`rules/`), where long windows are cheap.
BURN_WINDOWS = ("5m", "30m", "1h", "2h", "6h")

# Observation field -> (catalog query, which window: "window" = the check window, "long" = the long window).
_FIELDS: dict[str, tuple[Query, str]] = {
    "request_rate": (q.REQUEST_RATE, "window"),
    "demand_rate": (q.DEMAND_RATE, "window"),
    "peak_rate": (q.PEAK_REQUEST_RATE.with_window("1h", step="5m"), "long"),
    "average_rate": (q.REQUEST_RATE, "long"),
    "prompt_p50": (q.PROMPT_TOKENS_P50, "window"),
    "prompt_p95": (q.PROMPT_TOKENS_P95, "window"),
    "output_p50": (q.OUTPUT_TOKENS_P50, "window"),
    "output_p95": (q.OUTPUT_TOKENS_P95, "window"),
    "prefix_hit_rate": (q.PREFIX_CACHE_HIT_RATIO, "window"),
    "ttft_p50": (q.TTFT_P50, "window"),
    "ttft_p95": (q.TTFT_P95, "window"),
    "ttft_p99": (q.TTFT_P99, "window"),
    "tpot_p50": (q.TPOT_P50, "window"),
    "tpot_p95": (q.TPOT_P95, "window"),
    "tpot_p99": (q.TPOT_P99, "window"),
    "itl_p95": (q.ITL_P95, "window"),
    "queue_time_p95": (q.QUEUE_TIME_P95, "window"),
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
}
# Rates and ratios that read 0 over a dead fleet: unknown when no replica is up.
_NEEDS_A_REPLICA_UP = {"request_rate", "demand_rate", "output_tokens_per_second_per_replica", "batch_per_replica",
                       "error_ratio", "preemption_rate", "running", "waiting", "prompt_tokens_rate"}  # fmt: skip
# Statistics over finished requests in the window: judged only with enough requests behind them.
_PER_REQUEST = ("prompt_p50", "prompt_p95", "output_p50", "output_p95", "ttft_p50", "ttft_p95", "ttft_p99",
                "tpot_p50", "tpot_p95", "tpot_p99", "itl_p95", "queue_time_p95", "error_ratio",
                "prefix_hit_rate")  # fmt: skip
# Facts about the fleet's state or about history, not fresh engine samples: not gated on staleness.
_NOT_STALENESS_GATED = {"replicas_up", "replicas_ready", "cold_start_p95", "peak_rate", "average_rate"}


def queries_per_tier(burn_windows: tuple[str, ...] = BURN_WINDOWS) -> int:
    """Fixed per tier, whatever the replica count: fields + data age + 3 SLO inputs per burn window + the
    4 fleet-view inputs (two bucket vectors, two rate histories)."""
    return len(_FIELDS) + 1 + 3 * len(burn_windows) + 4


@dataclass
class PrometheusCollector:
    source: PrometheusSource
    long_window: str = "7d"
    max_age_seconds: float = 300.0
    burn_windows: tuple[str, ...] = BURN_WINDOWS
    workers: int = 8
    min_requests: int = 50

    def collect(self, plan: Plan, now: float, window: str) -> dict[str, TierObservation]:
        """One observation per tier, plus the fleet view under `FLEET`."""
        jobs = [(tier, job) for tier in plan.tiers for job in self._jobs(plan, tier, window)]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            results = list(pool.map(lambda tj: (tj[0].name, tj[1].key, tj[1].run(self.source, now)), jobs))
            fleet_inputs = self._fleet_inputs(plan, now, window, pool)
        by_tier: dict[str, dict[str, Measurement]] = {t.name: {} for t in plan.tiers}
        for tier_name, key, value in results:
            by_tier[tier_name][key] = value
        seconds = parse_duration(window)
        tiers = {
            name: self._observation(
                name, values, now, window, _requests_seen(fleet_inputs.prompt_buckets[name], seconds)
            )
            for name, values in by_tier.items()
        }
        return {**tiers, FLEET: fleet_observation(tiers, fleet_inputs, now, window)}

    def _fleet_inputs(self, plan: Plan, now: float, window: str, pool: ThreadPoolExecutor) -> FleetInputs:
        """Per-tier bucket vectors and request-rate histories, merged into the fleet view in Python."""
        long_s = parse_duration(self.long_window)
        sels = {t.name: t.label_selector for t in plan.tiers}
        exprs = {
            "prompt": {n: q.PROMPT_TOKENS_BUCKETS.for_tier(s, window=window) for n, s in sels.items()},
            "output": {n: q.OUTPUT_TOKENS_BUCKETS.for_tier(s, window=window) for n, s in sels.items()},
            "rate_5m": {n: q.REQUEST_RATE.for_tier(s, window="5m") for n, s in sels.items()},
            "rate_1m": {n: q.REQUEST_RATE.for_tier(s, window="1m") for n, s in sels.items()},
        }
        buckets = {kind: dict(zip(exprs[kind], pool.map(self._bucket_samples, exprs[kind].values(), [now] * len(sels)),
                                  strict=True)) for kind in ("prompt", "output")}  # fmt: skip
        rates = {
            kind: dict(zip(exprs[kind], pool.map(self._rate_series, exprs[kind].values(), [now - long_s] * len(sels),
                                                 [now] * len(sels), [step] * len(sels)), strict=True))
            for kind, step in (("rate_5m", 300.0), ("rate_1m", 60.0))
        }  # fmt: skip
        return FleetInputs(buckets["prompt"], buckets["output"], rates["rate_5m"], rates["rate_1m"], self.long_window,
                           {k: " | ".join(v.values()) for k, v in exprs.items()}, self.min_requests)  # fmt: skip

    def _bucket_samples(self, expr: str, now: float) -> list[tuple[dict[str, str], float]]:
        return [(dict(s.labels), s.value) for s in self.source.instant(expr, at=now).samples]

    def _rate_series(self, expr: str, start: float, end: float, step: float) -> list[float | None]:
        result = self.source.range(expr, start, end, step)
        points = {round(p.timestamp): p.value for s in result.series for p in s.points}
        grid = [round(start + i * step) for i in range(int((end - start) // step) + 1)]
        return [_finite(points.get(t)) for t in grid]

    def demand_history(self, plan: Plan, tier: str, start: float, end: float, step_seconds: float) -> DemandHistory:
        window = _promql_duration(step_seconds)
        expr = q.DEMAND_RATE.for_tier(plan.tier(tier).label_selector, window=window)
        result = self.source.range(expr, start, end, step_seconds)
        points = {p.timestamp: p.value for s in result.series[:1] for p in s.points}
        stamps = tuple(start + i * step_seconds for i in range(int((end - start) // step_seconds) + 1))
        values = tuple(_finite(points.get(t)) for t in stamps)
        return DemandHistory(tier, step_seconds, stamps, values, expr)

    def health(self, now: float) -> SourceHealth:
        h = check_health(self.source)
        age = self.source.instant("min(time() - timestamp(vllm:num_requests_running))", at=now) if h.reachable else None
        newest = age.samples[0].value if age and age.samples else None
        return SourceHealth(h.reachable, h.url, h.reason, newest)

    def _jobs(self, plan: Plan, tier: Tier, window: str) -> list[_Job]:
        sel = tier.label_selector
        ttft_slo, tpot_slo = plan.slo_for(tier)
        jobs = [_Job(field, query.for_tier(sel, window=self.long_window if w == "long" else window),
                     self.long_window if w == "long" else window) for field, (query, w) in _FIELDS.items()]  # fmt: skip
        jobs.append(_Job("data_age", q.DATA_AGE.for_tier(sel), "now"))
        for w in self.burn_windows:
            jobs.append(_Job(f"bad:ttft:{w}", q.TTFT_BUCKETS.for_tier(sel, window=w), w, ttft_slo))
            jobs.append(_Job(f"bad:tpot:{w}", q.TPOT_BUCKETS.for_tier(sel, window=w), w, tpot_slo))
            jobs.append(_Job(f"bad:errors:{w}", q.ERROR_RATIO.for_tier(sel, window=w), w))
        return jobs

    def _observation(
        self, tier: str, values: dict[str, Measurement], now: float, window: str, requests: float | None
    ) -> TierObservation:
        age, up = values.pop("data_age"), values["replicas_up"]
        gated = {k: self._gate(k, v, age, up) for k, v in values.items()}
        for key in _PER_REQUEST:
            gated[key] = self._enough(gated[key], requests, window)
        if not gated["replicas_ready"].known and gated["replicas_up"].known:
            ready = gated["replicas_up"]
            gated["replicas_ready"] = replace(ready, reason="kube-state-metrics absent: counting replicas up")
        bad = {k.removeprefix("bad:"): v for k, v in gated.items() if k.startswith("bad:")}
        fields = {k: v for k, v in gated.items() if not k.startswith("bad:")}
        base = TierObservation(tier=tier, evaluated_at=now, window=window, bad_fraction=bad)
        return replace(base, **cast(dict[str, Any], fields))

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


@dataclass(frozen=True)
class _Job:
    key: str
    expr: str
    window: str
    threshold: float | None = None

    def run(self, source: PrometheusSource, now: float) -> Measurement:
        result = source.instant(self.expr, at=now)
        if self.threshold is None:
            return measurement(result, window=self.window)
        share = fraction_over_groups(((s.labels, s.value) for s in result.samples), self.threshold)
        if share.fraction is None:
            return Measurement.unknown(share.reason or "no observations in the window", self.expr, self.window)
        return Measurement(share.fraction, self.expr, self.window, samples=len(result.samples))


def _requests_seen(bucket_samples: Sequence[tuple[Mapping[str, str], float]], window_seconds: float) -> float | None:
    """Requests finished in the window: the +Inf bucket rate of the prompt-length histogram x the window."""
    rates = [v for labels, v in bucket_samples if labels.get("le") == "+Inf" and v == v]
    return sum(rates) * window_seconds if rates else None


def _finite(value: float | None) -> float | None:
    return value if value is not None and value == value and abs(value) != float("inf") else None


def _promql_duration(seconds: float) -> str:
    return f"{int(seconds)}s" if seconds % 60 else f"{int(seconds // 60)}m"
