"""Read what the measurement plan needs from Prometheus (an adapter, I/O): the observation over the whole
window (the observer's, with the window as its one burn window), history at `step` for load and latency per
step, the failure events, and the engine configuration and GPU models it all ran on."""

from __future__ import annotations

from collections.abc import Mapping

from monitor.measurements.model import LoadPoint, Readings, TierReadings
from monitor.observe.model import TierObservation
from monitor.observer import PrometheusObserver
from monitor.plan.model import Plan, Tier
from monitor.queries import (
    KV_USAGE_MAX,
    REPLICAS_DOWN,
    REQUEST_RATE,
    REQUEST_RATE_PER_REPLICA,
    TPOT_P50,
    TPOT_P95,
    TPOT_P99,
    TTFT_P50,
    TTFT_P95,
    TTFT_P99,
)
from monitor.queries.inventory import ENGINE_CONFIG, GPU_MODELS, GPUS_NOW, PROMPTS_OVER_100K, REPLICAS_DOWN_MAX
from monitor.queries.query import Query
from monitor.sizing.plan_sizing import PlanSizing
from monitor.source import PrometheusSource, measurement
from monitor.triggers.model import EvalResult
from monitor.units import parse_duration

__all__ = ["read_measurements"]

_RATE_WINDOW = "5m"
_HISTORY: dict[str, Query] = {
    "per_replica": REQUEST_RATE_PER_REPLICA, "rate": REQUEST_RATE, "gpus": GPUS_NOW,
    "ttft50": TTFT_P50, "ttft95": TTFT_P95, "ttft99": TTFT_P99,
    "tpot50": TPOT_P50, "tpot95": TPOT_P95, "tpot99": TPOT_P99, "down": REPLICAS_DOWN, "kv": KV_USAGE_MAX,
}  # fmt: skip
# Labels of vllm:cache_config_info that say where a series came from, not how the engine was configured.
_TARGET_LABELS = {"__name__", "job", "instance", "pod", "namespace", "tier", "engine", "service", "container"}


def read_measurements(source: PrometheusSource, plan: Plan, sizing: PlanSizing, now: float, window: str = "7d",
                      step_seconds: float = 300.0, evals: tuple[EvalResult, ...] = ()) -> Readings:  # fmt: skip
    observer = PrometheusObserver(source, long_window=window, burn_windows=(window,))
    observations = observer.collect(plan, now, window)
    start = now - parse_duration(window)
    tiers = {
        t.name: _tier(source, plan, sizing, t, observations[t.name], start, now, window, step_seconds)
        for t in plan.tiers
        if t.name in observations
    }
    return Readings(window, start, now, tiers, evals)


def _tier(source: PrometheusSource, plan: Plan, sizing: PlanSizing, tier: Tier, obs: TierObservation,
          start: float, now: float, window: str, step: float) -> TierReadings:  # fmt: skip
    sel = tier.label_selector
    history = {k: _series(source, q.for_tier(sel, window=_RATE_WINDOW), start, now, step) for k, q in _HISTORY.items()}
    s = sizing.tier(tier.name).sizing
    sized_per_replica = s.workload.peak_rps / max(1, s.expected.replicas)
    load = tuple(_points(history, sized_per_replica))
    down = measurement(source.instant(REPLICAS_DOWN_MAX.for_tier(sel, window=window), at=now), window=window)
    long = measurement(source.instant(PROMPTS_OVER_100K.for_tier(sel, window=window), at=now), window=window)
    return TierReadings(tier.name, obs, load, down, long, _engine(source, sel, window, now),
                        _hardware(source, sel, window, now))  # fmt: skip


def _series(source: PrometheusSource, expr: str, start: float, end: float, step: float) -> dict[float, float]:
    """Per timestamp the largest value over the series (a tier serves one model; quantiles per model)."""
    out: dict[float, float] = {}
    for series in source.range(expr, start, end, step).series:
        for p in series.points:
            if p.value == p.value:
                t = round(p.timestamp, 3)
                out[t] = max(out.get(t, p.value), p.value)
    return out


def _points(history: Mapping[str, dict[float, float]], sized_per_replica: float) -> list[LoadPoint]:
    if sized_per_replica <= 0:
        return []
    out = []
    for t, per_replica in sorted(history["per_replica"].items()):
        ttft = (history["ttft50"].get(t), history["ttft95"].get(t), history["ttft99"].get(t))
        tpot = (history["tpot50"].get(t), history["tpot95"].get(t), history["tpot99"].get(t))
        out.append(LoadPoint(t, per_replica / sized_per_replica, ttft, tpot, history["rate"].get(t),
                             history["gpus"].get(t), history["down"].get(t), history["kv"].get(t)))  # fmt: skip
    return out


def _engine(source: PrometheusSource, sel: Mapping[str, str], window: str, now: float) -> str:
    configs = {
        ", ".join(f"{k}={v}" for k, v in sorted(s.labels.items()) if k not in _TARGET_LABELS)
        for s in source.instant(ENGINE_CONFIG.for_tier(sel, window=window), at=now).samples
    }
    return "vllm:cache_config_info " + " | ".join(sorted(configs)) if configs else ""


def _hardware(source: PrometheusSource, sel: Mapping[str, str], window: str, now: float) -> str:
    samples = source.instant(GPU_MODELS.for_tier(sel, window=window), at=now).samples
    return ", ".join(f"{s.value:g} x {s.labels.get('modelName', '?')}" for s in samples)
