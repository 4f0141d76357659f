"""Known metric histories for backfill: counters with exact rates, gauges, histograms with chosen buckets.

Series are kept per family and written family by family through `fleetsim.tsdb.OpenMetricsWriter`, so the
text is valid OpenMetrics whatever order a test adds series in.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from fleetsim.tsdb import MetricType, OpenMetricsWriter

__all__ = ["History", "times"]

Value = float | Callable[[float], float]


def times(start: float, end: float, step: float) -> list[float]:
    """start, start+step, ... <= end."""
    n = round((end - start) / step)
    return [start + i * step for i in range(n + 1)]


@dataclass
class _Family:
    type: MetricType
    series: list[tuple[str, dict[str, str], list[tuple[float, float]]]] = field(default_factory=list)


class History:
    """Collects series; `text()` renders them as OpenMetrics with timestamps."""

    def __init__(self, start: float, end: float, step: float = 15.0) -> None:
        self.start, self.end, self.step = start, end, step
        self._families: dict[str, _Family] = {}

    def _family(self, name: str, kind: MetricType) -> _Family:
        fam = self._families.setdefault(name, _Family(kind))
        if fam.type != kind:
            raise ValueError(f"{name} is a {fam.type}, not a {kind}")
        return fam

    def _times(self, start: float | None, end: float | None) -> list[float]:
        return times(self.start if start is None else start, self.end if end is None else end, self.step)

    def gauge(self, name: str, labels: Mapping[str, str], value: Value,
              start: float | None = None, end: float | None = None) -> History:  # fmt: skip
        fn = value if callable(value) else (lambda _t, v=float(value): v)
        points = [(t, fn(t)) for t in self._times(start, end)]
        self._family(name, "gauge").series.append((name, dict(labels), points))
        return self

    def counter(self, name: str, labels: Mapping[str, str], rate: float, initial: float = 1000.0,
                start: float | None = None, end: float | None = None) -> History:  # fmt: skip
        """`name` is the family (no `_total`); the series grows by `rate` per second."""
        ts = self._times(start, end)
        points = [(t, initial + rate * (t - ts[0])) for t in ts]
        self._family(name, "counter").series.append((f"{name}_total", dict(labels), points))
        return self

    def histogram(self, name: str, labels: Mapping[str, str], bucket_rates: Mapping[str, float],
                  sum_rate: float = 0.0, start: float | None = None, end: float | None = None) -> History:  # fmt: skip
        """`bucket_rates` maps each `le` (as exposed: "0.1", "+Inf") to the rate of observations that fall
        *into* that bucket (not cumulative); buckets, _count and _sum grow accordingly."""
        ts = self._times(start, end)
        fam = self._family(name, "histogram")
        cumulative = 0.0
        for le in sorted(bucket_rates, key=lambda b: float(b)):
            cumulative += bucket_rates[le]
            points = [(t, cumulative * (t - ts[0])) for t in ts]
            fam.series.append((f"{name}_bucket", {**labels, "le": le}, points))
        fam.series.append((f"{name}_count", dict(labels), [(t, cumulative * (t - ts[0])) for t in ts]))
        fam.series.append((f"{name}_sum", dict(labels), [(t, sum_rate * (t - ts[0])) for t in ts]))
        return self

    def raw(self, name: str, labels: Mapping[str, str], points: Sequence[tuple[float, float]]) -> History:
        """Exact points, as an `unknown` family (any name, e.g. `up`)."""
        self._family(name, "unknown").series.append((name, dict(labels), list(points)))
        return self

    def text(self) -> str:
        out = io.StringIO()
        with OpenMetricsWriter(out) as writer:
            for family, fam in self._families.items():
                writer.family(family, fam.type)
                for sample_name, labels, points in fam.series:
                    series = writer.series(sample_name, labels)
                    for t, v in points:
                        series.add(t, v)
        return out.getvalue()


# vLLM's token-count bucket bounds (a short list: 1-2-5 steps), as label values.
TOKEN_BUCKETS = ("1", "2", "5", "10", "20", "50", "100", "200", "500", "1000", "2000", "5000", "+Inf")


def copilot_pods(
    start: float, end: float, *, output: tuple[str, float], ttft: tuple[tuple[str, ...], str, float]
) -> str:
    """Two copilot replicas (`llm/copilot-0`, `-1`) from `start` to `end` at 15 s, each finishing a request a second:
    every prompt 1500 tokens (the 2000 bucket), every output in one bucket, `output` = (the bucket, the mean
    tokens), every TTFT in one bucket, `ttft` = (the bucket list, the bucket, the mean seconds)."""
    (out_bucket, out_sum), (ttft_buckets, ttft_bucket, ttft_sum) = output, ttft
    h = History(start, end, 15.0)
    for pod in ("copilot-0", "copilot-1"):
        labels = {"job": "vllm", "instance": f"{pod}:8000", "namespace": "llm", "pod": pod, "tier": "copilot",
                  "model_name": "meta-llama/Llama-3.3-70B-Instruct", "engine": "0"}  # fmt: skip
        h.gauge("vllm:num_requests_running", labels, 4)
        h.counter("vllm:request_success", labels | {"finished_reason": "stop"}, 1.0)
        h.histogram("vllm:request_prompt_tokens", labels, dict.fromkeys(TOKEN_BUCKETS, 0.0) | {"2000": 1.0}, 1500.0)
        h.histogram("vllm:request_generation_tokens", labels,
                    dict.fromkeys(TOKEN_BUCKETS, 0.0) | {out_bucket: 1.0}, out_sum)  # fmt: skip
        h.histogram("vllm:time_to_first_token_seconds", labels,
                    dict.fromkeys(ttft_buckets, 0.0) | {ttft_bucket: 1.0}, ttft_sum)  # fmt: skip
        target = {k: labels[k] for k in ("job", "instance", "namespace", "pod", "tier")}
        h.raw("up", target, [(t, 1.0) for t in times(start, end, 15.0)])
    return h.text()
