"""planwatch's own metrics (`monitor.service.exporter`) as dashboard queries: every panel expression over a
`planwatch_*` series is defined here, once, and rendered like the catalog's (`Query.for_grafana`).

What they rely on from the exporter:
- the plan's assumptions are `planwatch_plan_*` gauges labelled by `tier`; percentiles are a `percentile`
  label (`p50`, `p95`), not `quantile` (promtool reserves that for summaries);
- unknown is omitted, never 0: a panel over an unknown value shows "no data", not a zero;
- fleet-wide drift and triggers carry `tier="fleet"`, which the `$tier` variable (the plan's tiers) lacks, so
  the tables add it explicitly;
- timestamps are Unix seconds; Grafana's date units count milliseconds, hence `* 1000`.

Each aggregates with `max by (tier)` where the exporter adds labels a panel does not need (`percentile`,
`kind`) or where two planwatch instances could be scraped at once (the same plan, so the same values).
"""

from __future__ import annotations

from monitor.plan.model import FLEET
from monitor.queries.query import Query
from monitor.queries.selector import quote

__all__ = [
    "ALL",
    "BUSINESS_OPEN",
    "CURRENT_REPLICAS",
    "DRIFT_CAPACITY_RATIO",
    "DRIFT_STATUS",
    "FORECAST_PEAK",
    "FORECAST_PEAK_AT",
    "FORECAST_PEAK_UPPER",
    "LAST_EVALUATION_AT",
    "MEASUREMENT_STATUS",
    "NEXT_SCALE_UP_AT",
    "NEXT_SCALE_UP_REPLICAS",
    "PLAN_COLD_START",
    "PLAN_OUTPUT_P95",
    "PLAN_PEAK_RATE",
    "PLAN_PREFIX_HIT",
    "PLAN_PROMPT_P95",
    "PLAN_REPLICAS_MAX",
    "PLAN_REQUESTS_PER_REPLICA",
    "PLAN_TPOT_P95",
    "PLAN_TTFT_P95",
    "PROMETHEUS_UP",
    "RECOMMENDATION_STALE",
    "RECOMMENDED_REPLICAS",
    "TRIGGERS_ACTIVE",
]

_FLEET = "{{tier=" + quote(FLEET).replace("{", "{{").replace("}", "}}") + "}}"


def _q(metric: str, op: str, template: str, unit: str, description: str) -> Query:
    """A dashboard-only expression: an instant read of planwatch's gauges, never a recording rule."""
    return Query(metric, op, template, unit, description, window=None, record=False)


def _per_tier(metric: str, op: str, matchers: str, unit: str, description: str) -> Query:
    sel = "{sel:" + matchers + "}" if matchers else "{sel}"
    return _q(metric, op, f"max by ({{by}}) ({metric}{sel})", unit, description)


PLAN_TTFT_P95 = _per_tier("planwatch_plan_ttft_seconds", "p95", 'percentile="p95"', "seconds",
                          "The tier's TTFT SLO (p95), as the plan writes it.")  # fmt: skip
PLAN_TPOT_P95 = _per_tier("planwatch_plan_tpot_seconds", "p95", 'percentile="p95"', "seconds",
                          "The tier's TPOT SLO (p95), as the plan writes it.")  # fmt: skip
PLAN_PROMPT_P95 = _per_tier("planwatch_plan_prompt_tokens", "p95", 'percentile="p95"', "tokens",
                            "Planned prompt length p95 of the tier (after routing by prompt length).")  # fmt: skip
PLAN_OUTPUT_P95 = _per_tier("planwatch_plan_output_tokens", "p95", 'percentile="p95"', "tokens",
                            "Planned output length p95 of the tier.")  # fmt: skip
PLAN_PREFIX_HIT = _per_tier("planwatch_plan_prefix_cache_hit_ratio", "ratio", "", "ratio",
                            "Planned prefix-cache hit ratio of the tier, in prompt tokens.")  # fmt: skip
PLAN_PEAK_RATE = _per_tier("planwatch_plan_peak_requests_per_second", "peak", "", "requests/s",
                           "Planned peak model calls per second of the tier.")  # fmt: skip
PLAN_REQUESTS_PER_REPLICA = _per_tier(
    "planwatch_plan_requests_per_second_per_replica", "capacity", "", "requests/s",
    "Sized capacity of one replica: requests/s it serves within the SLO at the plan's expected efficiency.",
)  # fmt: skip
PLAN_COLD_START = _per_tier("planwatch_plan_cold_start_seconds", "planned", "", "seconds",
                            "Planned cold start of the tier (pod created to ready).")  # fmt: skip
PLAN_REPLICAS_MAX = _per_tier("planwatch_plan_replicas", "max", 'kind="max"', "replicas",
                              "The plan's replica ceiling for the tier (replicas.max).")  # fmt: skip

RECOMMENDED_REPLICAS = _per_tier("planwatch_recommended_replicas", "now", "", "replicas",
                                 "Replicas planwatch recommends now (what an autoscaler reading it runs).")  # fmt: skip
CURRENT_REPLICAS = _per_tier("planwatch_current_replicas", "observed", "", "replicas",
                             "Ready replicas at planwatch's last evaluation (absent when unknown).")  # fmt: skip
RECOMMENDATION_STALE = _per_tier(
    "planwatch_recommendation_stale", "flag", "", "bool",
    "1 when the recommendation holds the fleet because its inputs are unknown (Prometheus away, no data).",
)  # fmt: skip
NEXT_SCALE_UP_AT = _q(
    "planwatch_next_scale_up_timestamp_seconds", "ms", "max by ({by}) (planwatch_next_scale_up_timestamp_seconds{sel})"
    " * 1000", "ms",
    "When the next scheduled scale-up must start (forecast ramp minus cold start and safety margin), in ms; "
    "absent when none is planned.",
)  # fmt: skip
NEXT_SCALE_UP_REPLICAS = _per_tier("planwatch_next_scale_up_replicas", "target", "", "replicas",
                                   "Replicas the next scheduled scale-up goes to.")  # fmt: skip

FORECAST_PEAK = _per_tier("planwatch_forecast_peak_requests_per_second", "mean", "", "requests/s",
                          "Forecast mean demand at the next peak (model calls/s).")  # fmt: skip
FORECAST_PEAK_UPPER = _per_tier(
    "planwatch_forecast_peak_upper_requests_per_second", "upper80", "", "requests/s",
    "80% upper bound of the forecast at the next peak: what the scale schedule plans for.",
)  # fmt: skip
FORECAST_PEAK_AT = _q(
    "planwatch_forecast_peak_timestamp_seconds", "ms", "max by ({by}) (planwatch_forecast_peak_timestamp_seconds{sel})"
    " * 1000", "ms", "When the next forecast peak is, in ms.",
)  # fmt: skip

TRIGGERS_ACTIVE = _q(
    "planwatch_trigger_active", "active",
    f"planwatch_trigger_active{{sel}} == 1 or planwatch_trigger_active{_FLEET} == 1", "bool",
    "Revisit-the-design triggers that held for their hold time (1), on the chosen tiers and fleet-wide; "
    "pending ones (0) and resolved ones (absent) are left out.",
)  # fmt: skip
DRIFT_STATUS = _q(
    "planwatch_drift_status", "status", f"planwatch_drift_status{{sel}} or planwatch_drift_status{_FLEET}", "enum",
    "Each plan assumption against production: 0 ok, 1 warn, 2 breach; absent when unknown.",
)  # fmt: skip
DRIFT_CAPACITY_RATIO = _q(
    "planwatch_drift_ratio", "capacity",
    'max by ({by}, assumption) (planwatch_drift_ratio{sel:assumption=~"kv_occupancy|throughput_per_replica"})',
    "ratio",
    "Observed over the sizing model's value at the batch production ran: KV occupancy and output tokens/s "
    "per replica (1 = as planned).",
)  # fmt: skip

BUSINESS_OPEN = _q("planwatch_business_open", "now", "max(planwatch_business_open)", "bool",
                   "1 inside the plan's business hours (plan timezone), else 0.")  # fmt: skip
LAST_EVALUATION_AT = _q(
    "planwatch_last_successful_evaluation_timestamp_seconds", "ms",
    "max(planwatch_last_successful_evaluation_timestamp_seconds) * 1000", "ms",
    "Last evaluation that reached Prometheus, in ms: every planwatch panel is at most this old.",
)  # fmt: skip
PROMETHEUS_UP = _q("planwatch_prometheus_up", "now", "min(planwatch_prometheus_up)", "bool",
                   "1 if planwatch's last evaluation reached Prometheus, else 0.")  # fmt: skip

MEASUREMENT_STATUS = _q(
    "planwatch_measurement_status", "status",
    f"planwatch_measurement_status{{sel}} or planwatch_measurement_status{_FLEET}", "enum",
    "Each item of the measurement plan (capstone Step 6): 0 not yet, 1 partly, 2 measured; plan-wide items "
    "(FP8 quality, TP scaling) carry tier fleet.",
)  # fmt: skip

ALL: tuple[Query, ...] = (
    PLAN_TTFT_P95, PLAN_TPOT_P95, PLAN_PROMPT_P95, PLAN_OUTPUT_P95, PLAN_PREFIX_HIT, PLAN_PEAK_RATE,
    PLAN_REQUESTS_PER_REPLICA, PLAN_COLD_START, PLAN_REPLICAS_MAX, RECOMMENDED_REPLICAS, CURRENT_REPLICAS,
    RECOMMENDATION_STALE, NEXT_SCALE_UP_AT, NEXT_SCALE_UP_REPLICAS, FORECAST_PEAK, FORECAST_PEAK_UPPER,
    FORECAST_PEAK_AT, TRIGGERS_ACTIVE, DRIFT_STATUS, DRIFT_CAPACITY_RATIO, BUSINESS_OPEN, LAST_EVALUATION_AT,
    PROMETHEUS_UP, MEASUREMENT_STATUS,
)  # fmt: skip
