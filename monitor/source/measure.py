"""From query results to `Measurement`s the pure core consumes: unknown is not zero.

The measurement type lives in `monitor.observe` (pure), so the core never imports this adapter. Every
way a number can be missing becomes an unknown with a reason, never 0:
- no series in the result (nothing matched, or the series went stale and Prometheus dropped it);
- NaN or infinity (histogram_quantile over a window without observations, 0/0 ratios);
- a sample older than `max_age` seconds at evaluation time (only backends that return raw sample times,
  or the `DATA_AGE` query, expose it: Prometheus stamps instant results with the evaluation time);
- the tier's replicas all down (`gate_down`), or its freshest sample too old (`gate_stale`).
"""

from __future__ import annotations

import math

from monitor.observe import Measurement
from monitor.source.model import InstantResult, Sample

__all__ = [
    "describe_labels",
    "gate_down",
    "gate_stale",
    "measurement",
    "measurements_by",
]


def describe_labels(sample: Sample) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items())) + "}"


def _from_sample(sample: Sample, result: InstantResult, window: str, max_age: float | None) -> Measurement:
    query = result.query
    if math.isnan(sample.value):
        return Measurement.unknown("not a number (NaN): no observations in the window", query, window)
    if math.isinf(sample.value):
        return Measurement.unknown(f"not a finite number ({sample.value})", query, window)
    age = result.evaluated_at - sample.timestamp
    if max_age is not None and age > max_age:
        return Measurement.unknown(f"stale: sample is {age:.0f}s old (limit {max_age:.0f}s)", query, window)
    return Measurement(sample.value, query=query, window=window, samples=1)


def measurement(result: InstantResult, window: str = "", max_age: float | None = None) -> Measurement:
    """The one number a per-tier query returns. No series -> unknown "no data"; several series (a tier
    spanning models, a selector that is too broad) -> unknown "ambiguous", naming them."""
    if result.empty:
        return Measurement.unknown("no data: the query matched no series", result.query, window)
    if len(result.samples) > 1:
        shown = ", ".join(describe_labels(s) for s in result.samples[:3])
        more = f" and {len(result.samples) - 3} more" if len(result.samples) > 3 else ""
        reason = f"ambiguous: {len(result.samples)} series ({shown}{more}); narrow the tier selector"
        return Measurement.unknown(reason, result.query, window)
    return _from_sample(result.samples[0], result, window, max_age)


def measurements_by(
    result: InstantResult, label: str, window: str = "", max_age: float | None = None
) -> dict[str, Measurement]:
    """One measurement per value of `label` (e.g. per tier from a grouped query, per model)."""
    return {s.labels[label]: _from_sample(s, result, window, max_age) for s in result.samples if label in s.labels}


def gate_stale(value: Measurement, data_age: Measurement, max_age: float) -> Measurement:
    """`value`, or unknown if the tier's freshest sample (`DATA_AGE`) is older than `max_age` seconds or
    its age is itself unknown (no vLLM series at all)."""
    if not value.known:
        return value
    if data_age.value is None:
        return Measurement.unknown(f"stale: no fresh vLLM sample ({data_age.reason})", value.query, value.window)
    if data_age.value > max_age:
        reason = f"stale: newest vLLM sample is {data_age.value:.0f}s old (limit {max_age:.0f}s)"
        return Measurement.unknown(reason, value.query, value.window)
    return value


def gate_down(value: Measurement, replicas_up: Measurement) -> Measurement:
    """`value`, or unknown when no replica of the tier is up: a rate over a dead fleet reads 0 but means
    "no data", and deciding on it would scale a broken tier down."""
    if not value.known or replicas_up.value is None or replicas_up.value > 0:
        return value
    return Measurement.unknown("target down: no replica of the tier is up", value.query, value.window)
