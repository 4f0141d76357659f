"""Typed observations. A missing series, a NaN quantile, a down target or a stale sample is a Measurement
with no value and a reason, never 0: no decision is made on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

from monitor.histogram import QuantileBound
from monitor.queries.reproduce import quotient

__all__ = ["STEADY_BATCH_RATIO", "Measurement", "TierObservation"]


@dataclass(frozen=True)
class Measurement:
    """One observed number with its provenance: the query that produced it, over which window."""

    value: float | None
    query: str = ""
    window: str = ""
    samples: int = 0
    reason: str = ""
    # A quantile read from the histogram's first or top bucket: `value` is what histogram_quantile answers,
    # but what is known is only "at most"/"above" this bound (rendered and judged as such).
    bound: QuantileBound | None = None

    @classmethod
    def unknown(cls, reason: str, query: str = "", window: str = "") -> Measurement:
        return cls(None, query=query, window=window, reason=reason)

    @classmethod
    def of(cls, value: float | None, query: str = "", window: str = "", samples: int = 1) -> Measurement:
        """A value, or an unknown if it is missing or not a finite number (NaN from an empty histogram)."""
        if value is None or not math.isfinite(value):
            return cls.unknown("no data" if value is None else f"not a number ({value})", query, window)
        return cls(float(value), query=query, window=window, samples=samples)

    @property
    def known(self) -> bool:
        return self.value is not None

    def ratio_to(self, other: Measurement) -> Measurement:
        """self / other, unknown when either is unknown or other is 0; its query divides the two queries (none
        when either has none: then no single query reproduces it)."""
        query = quotient(self.query, other.query) if self.query and other.query else ""
        if self.value is None or other.value is None:
            return Measurement.unknown(self.reason or other.reason, query, self.window)
        if other.value == 0:
            return Measurement.unknown("denominator is 0", query, self.window)
        return Measurement(self.value / other.value, query, self.window, min(self.samples, other.samples))


_UNSEEN = Measurement.unknown("not collected")
# How far the batch now may sit from the window's mean batch for the window's mean to stand for it
# (`TierObservation.unsteady_batch`), either side.
STEADY_BATCH_RATIO = 1.5
# How far the replicas a window's tokens were spread over may sit from those ready now: wider than the batch's,
# since its requests per replica come from the plan's mean output, which production's own may drift from.
_SPREAD_RATIO = 2.0


@dataclass(frozen=True)
class TierObservation:
    """What one tier did over `window` (rates per second, lengths in tokens, times in seconds)."""

    tier: str
    evaluated_at: float
    window: str
    request_rate: Measurement = _UNSEEN  # model calls finished per second, mean over the window
    demand_rate: Measurement = _UNSEEN  # finished plus queue growth: what arrived, not what was served
    request_rate_now: Measurement = _UNSEEN  # the two over the last `NOW_WINDOW` (5m): what the advice sizes on
    demand_rate_now: Measurement = _UNSEEN
    peak_rate: Measurement = _UNSEEN  # highest 5-minute request rate over the long window (sustained peak)
    burst_peak_rate: Measurement = _UNSEEN  # highest 1-minute request rate over the long window (bursts)
    # A minute's demand variance beyond Poisson's over the long window: alpha of phi m + alpha m^2, 0 when
    # indistinguishable from Poisson (monitor.observe.dispersion); the advice's minute margin adds it.
    minute_overdispersion: Measurement = _UNSEEN
    average_rate: Measurement = _UNSEEN  # mean request rate over the long window
    prompt_tokens_rate: Measurement = _UNSEEN  # prompt tokens/s, cached included: weighs prefix-hit rates
    prompt_p50: Measurement = _UNSEEN
    prompt_p95: Measurement = _UNSEEN
    output_p50: Measurement = _UNSEEN
    output_p95: Measurement = _UNSEEN
    prefix_hit_rate: Measurement = _UNSEEN
    ttft_p50: Measurement = _UNSEEN
    ttft_p95: Measurement = _UNSEEN
    ttft_p99: Measurement = _UNSEEN
    tpot_p50: Measurement = _UNSEEN
    tpot_p95: Measurement = _UNSEEN
    tpot_p99: Measurement = _UNSEEN
    itl_p95: Measurement = _UNSEEN  # per token: chunked-prefill stalls show here before they move TPOT
    ttft_over_slo: Measurement = _UNSEEN  # fraction of requests whose TTFT exceeded the SLO threshold
    tpot_over_slo: Measurement = _UNSEEN
    queue_time_p95: Measurement = _UNSEEN
    kv_occupancy_mean: Measurement = _UNSEEN
    kv_occupancy_max: Measurement = _UNSEEN
    preemption_rate: Measurement = _UNSEEN
    running: Measurement = _UNSEEN
    waiting: Measurement = _UNSEEN
    output_tokens_per_second_per_replica: Measurement = _UNSEEN
    batch_per_replica: Measurement = _UNSEEN  # mean running requests per replica over the window
    error_ratio: Measurement = _UNSEEN  # errored and aborted over finished requests
    replicas_up: Measurement = _UNSEEN
    replicas_ready: Measurement = _UNSEEN
    cold_start_p95: Measurement = _UNSEEN
    calls_per_request: Measurement = _UNSEEN
    gpu_utilization: Measurement = _UNSEEN  # 0-100, dcgm GPU_UTIL
    gpu_dram_active: Measurement = _UNSEEN  # 0-1
    gpu_memory_used_fraction: Measurement = _UNSEEN
    gpu_power_watts: Measurement = _UNSEEN
    gpu_xid_errors: Measurement = _UNSEEN  # GPUs with a new XID in the window
    tokens_rate_long: Measurement = _UNSEEN  # prompt + output tokens/s over the long window (per-token billing)
    gpus_mean_long: Measurement = _UNSEEN  # GPUs held by the tier, mean over the long window (GPU-hours per hour)
    # Share of requests breaking each SLO per burn window, keyed "ttft:1h", "tpot:5m", "errors:6h".
    bad_fraction: dict[str, Measurement] = field(default_factory=dict)
    extra: dict[str, Measurement] = field(default_factory=dict)
    # Finite `le` bounds the server exposes per token histogram ("prompt", "output"): the plan is read through
    # these, not through the bounds its own max_model_len would give (custom buckets, another max_model_len).
    token_buckets: dict[str, tuple[float, ...]] = field(default_factory=dict)

    def unsteady_batch(self, tokens_per_request: float | None = None) -> str | None:
        """Why the window's mean batch per replica does not stand for the batch now (None when it does, or when
        neither test can be made: the running gauge, the ready replicas and the rate now unknown).

        Why it matters: tokens/s per replica is compared with the model's tokens/s at the window's mean batch
        (drift's throughput check, the advice's calibration), and tokens/s is concave in the batch, so a window
        that mixed batches reads the engine slow (Jensen). Batches 1.5x apart read it at most 1% slow on the
        example plans' tiers; a replay of real traffic mixed a queue drained at a batch of ~55 with 40 quiet
        minutes at ~5 and read 0.65 of the model.

        Three tests, any says the window mixed loads: the batch now against the window's mean, the rate
        served over the last 5 minutes against the window's, and (given the mean output, `tokens_per_request`)
        the replicas the window's tokens were spread over against those ready now. The second is needed
        because a mixed window's mean can match the batch now by chance: a replay of ServeGen read 40 idle
        minutes then 20 at a batch of ~36, the batch now matched the hour's mean, and the factor of 0.54 it let
        through asked for 24 replicas where 4 served. The third (within 2x) because an evening's scale-down
        keeps both ends of a window within 1.5x while the replica count falls: the slow-cold-start replay read
        an hour whose tokens were spread over about 6 long-context replicas, with 2 ready at its end, at a
        factor of 0.87, and sized the next morning's ramp on it."""
        return self._batch_moved() or self._rate_moved() or self._replicas_moved(tokens_per_request)

    def _batch_moved(self) -> str | None:
        batch, running, ready = self.batch_per_replica.value, self.running.value, self.replicas_ready.value
        if batch is None or running is None or not ready:
            return None
        now = running / ready
        if batch / STEADY_BATCH_RATIO <= now <= batch * STEADY_BATCH_RATIO:
            return None
        return (f"the window's mean batch {batch:.1f} per replica is not the batch now, {now:.1f}: a window that "
                "mixes a queue with quiet minutes reads the engine slow")  # fmt: skip

    def _rate_moved(self) -> str | None:
        window, now = self.request_rate.value, self.request_rate_now.value
        if not window or now is None or self.request_rate_now.window == self.window:
            return None
        if window / STEADY_BATCH_RATIO <= now <= window * STEADY_BATCH_RATIO:
            return None
        return (f"the window served {window:.3g} req/s and the last {self.request_rate_now.window} {now:.3g}: a window "
                "that mixes loads reads the engine slow at its mean batch")  # fmt: skip

    def _replicas_moved(self, tokens_per_request: float | None) -> str | None:
        rate, tps, ready = (
            self.request_rate.value,
            self.output_tokens_per_second_per_replica.value,
            self.replicas_ready.value,
        )
        if not rate or tps is None or not ready or not tokens_per_request:
            return None
        per_replica, spread = rate / ready, tps / tokens_per_request  # req/s per replica: ready now, by tokens
        if spread / _SPREAD_RATIO <= per_replica <= spread * _SPREAD_RATIO:
            return None
        return (f"the window's tokens say {spread:.3g} req/s per replica, its {rate:.3g} req/s over the {ready:g} "
                f"replicas ready now {per_replica:.3g}: the replica count moved within the window")  # fmt: skip

    @property
    def peak_to_average(self) -> Measurement:
        """Burstiness: the highest 1-minute rate over the long window's mean."""
        return self.burst_peak_rate.ratio_to(self.average_rate)

    def measurements(self) -> dict[str, Measurement]:
        """Every measurement by name (for JSON and the API)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if isinstance(getattr(self, f.name), Measurement)}
        out["peak_to_average"] = self.peak_to_average
        burn = {f"bad_fraction:{k}": v for k, v in self.bad_fraction.items()}
        return {**out, **burn, **self.extra}
