"""Plan vs production: every assumption of the capacity plan next to what the fleet does (the home dashboard)."""

from __future__ import annotations

from monitor import queries as q
from monitor.dashboards import planwatch_queries as pw
from monitor.dashboards.grafana import Dashboard, Panel, Row, Series, Status

__all__ = ["DRIFT_STATUS", "SEVERITY", "dashboard"]

_P95 = "{{tier}} p95 ({{model_name}})"
_PLAN = "{{tier}} plan"
DRIFT_STATUS = (Status("0", "ok", "green"), Status("1", "warn", "orange"), Status("2", "breach", "red"))
SEVERITY = (Status("critical", "critical", "red"), Status("warning", "warning", "orange"))


def _slos() -> Row:
    return Row("Latency against the SLOs", (
        Panel("TTFT p95 vs SLO", "Time to first token, 95th percentile per tier and model, against the tier's "
              "TTFT SLO (dashed).",
              (Series(q.TTFT_P95, _P95), Series(pw.PLAN_TTFT_P95, "{{tier}} SLO", plan=True)), unit="s", min=0),
        Panel("TPOT p95 vs SLO", "Time per output token per request (vLLM's per-request mean; the per-token ITL "
              "where the engine predates it), 95th percentile, against the tier's TPOT SLO (dashed).",
              (Series(q.TPOT_P95, _P95), Series(pw.PLAN_TPOT_P95, "{{tier}} SLO", plan=True)), unit="s", min=0),
    ))  # fmt: skip


def _workload() -> Row:
    return Row("Workload against the plan", (
        Panel("Prompt length p95 vs plan", "Prompt tokens per finished request, 95th percentile (interpolated in "
              "vLLM's 1-2-5 buckets), against the plan's p95 for the tier after routing (dashed). The p95, not the "
              "mean, sets KV memory and TTFT.",
              (Series(q.PROMPT_TOKENS_P95, _P95), Series(pw.PLAN_PROMPT_P95, _PLAN, plan=True)), unit="none",
              min=0, width=8),
        Panel("Output length p95 vs plan", "Output tokens per finished request, 95th percentile, against the "
              "plan's p95 (dashed).",
              (Series(q.OUTPUT_TOKENS_P95, _P95), Series(pw.PLAN_OUTPUT_P95, _PLAN, plan=True)), unit="none",
              min=0, width=8),
        Panel("Prefix-cache hit ratio vs plan", "Share of prompt tokens served from the prefix cache, against the "
              "plan's hit ratio (dashed). Below plan means more prefill compute per request.",
              (Series(q.PREFIX_CACHE_HIT_RATIO), Series(pw.PLAN_PREFIX_HIT, _PLAN, plan=True)), unit="percentunit",
              min=0, max=1, width=8),
        Panel("Demand vs planned peak", "Arrival estimate (finished requests plus queue growth) against the "
              "plan's peak model calls per second (dashed).",
              (Series(q.DEMAND_RATE, "{{tier}} demand"), Series(pw.PLAN_PEAK_RATE, "{{tier}} planned peak", plan=True)),
              unit="reqps", min=0, width=24),
    ))  # fmt: skip


def _engine() -> Row:
    return Row("Engine against the sizing model", (
        Panel("KV-cache occupancy", "KV-cache block usage of the tier: mean over engines and the window, and the "
              "fullest engine. Preemptions start when an engine runs out of blocks.",
              (Series(q.KV_USAGE_MEAN, "{{tier}} mean"), Series(q.KV_USAGE_MAX, "{{tier}} max")),
              unit="percentunit", min=0, max=1, width=8),
        Panel("Preemptions", "Requests preempted per second (KV cache exhausted: evicted and recomputed). The plan "
              "assumes none.", (Series(q.PREEMPTION_RATE),), unit="ops", min=0, width=8),
        Panel("Observed / sizing model at the observed batch", "planwatch's drift ratio for KV occupancy and "
              "output tokens/s per replica: production over what the sizing model predicts at the batch "
              "production actually ran (1 = as planned; throughput below 1 or KV above 1 is the harmful side).",
              (Series(pw.DRIFT_CAPACITY_RATIO, "{{tier}} {{assumption}}"),), unit="none", width=8),
        Panel("Requests/s per replica vs sized capacity", "The load one replica carries against the sizing "
              "model's capacity of one replica within the SLO (dashed): the gap is the headroom per replica.",
              (Series(q.REQUEST_RATE_PER_REPLICA, "{{tier}} observed"),
               Series(pw.PLAN_REQUESTS_PER_REPLICA, "{{tier}} sized capacity", plan=True)), unit="reqps", min=0),
        Panel("Output tokens/s per replica and batch", "Observed decode throughput per replica (left) with the "
              "running batch per replica (right). planwatch exports no tokens/s-versus-batch curve of the "
              "sizing model; the observed/model ratio at the observed batch is in the panel above.",
              (Series(q.GENERATION_TOKENS_PER_REPLICA, "{{tier}} tokens/s"),
               Series(q.BATCH_PER_REPLICA, "{{tier}} batch", right_axis=True)),
              unit="short", right_unit="short", min=0),
    ))  # fmt: skip


def _health() -> Row:
    return Row("Revisit the design", (
        Panel("Active triggers", "Revisit-the-design triggers that held for their hold time, on the chosen tiers "
              "and fleet-wide. Evidence and mitigation: planwatch's /v1/triggers.",
              (Series(pw.TRIGGERS_ACTIVE, ""),), kind="table", status=SEVERITY,
              columns={"trigger": "trigger", "tier": "tier", "severity": "severity"}, status_column="severity"),
        Panel("Assumption drift", "Each plan assumption against production at planwatch's last evaluation "
              "(unknown assumptions are left out).",
              (Series(pw.DRIFT_STATUS, ""),), kind="table", status=DRIFT_STATUS,
              columns={"tier": "tier", "assumption": "assumption", "Value": "status"}, status_column="status"),
    ))  # fmt: skip


MEASUREMENT_STATUS = (Status("0", "not yet", "purple"), Status("1", "partly", "orange"),
                      Status("2", "measured", "green"))  # fmt: skip


def _measurements() -> Row:
    return Row("Measurement plan", (
        Panel("Measurement plan", "Each item of the capstone's measurement plan, judged from history by planwatch "
              "and kept in its state past Prometheus's retention. Evidence, dates, engine and GPU: "
              "/v1/measurements or `planwatch measurements`.",
              (Series(pw.MEASUREMENT_STATUS, ""),), kind="table", status=MEASUREMENT_STATUS,
              columns={"item": "item", "tier": "tier", "Value": "status"}, status_column="status", width=24),
    ))  # fmt: skip


def dashboard() -> Dashboard:
    return Dashboard(
        uid="planwatch-plan-vs-production",
        title="planwatch / Plan vs production",
        description="The capacity plan's assumptions against what production does. Generated by "
        "`python -m monitor.dashboards` from monitor/queries and planwatch's metrics; do not edit by hand.",
        tier_values="planwatch_plan_replicas",
        rows=(_health(), _slos(), _workload(), _engine(), _measurements()),
    )
