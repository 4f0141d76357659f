"""Generic alerts on planwatch's own metrics (rules/alerts-planwatch.yml): its triggers, and its health.

Triggers: one rule per trigger id of the catalog, all named PlanwatchTriggerActive, on
`planwatch_trigger_active{trigger="<id>"} == 1` (1 = held for the trigger's hold time; 0 = pending). One rule
per id rather than one per severity because each trigger has its own runbook (meaning, mitigation, when to
revisit the plan, from the catalog), and annotations cannot look text up by label; the severity is already
on the series. A last rule catches ids this file does not know (a newer planwatch than the rules), with the
generic runbook, so a new trigger is never dropped. `for: 1m` only rides over one odd scrape: planwatch
already held the condition for the trigger's hold time.

Health: PlanwatchDown (scrape fails) and PlanwatchAbsent (no target at all) page, because the availability
SLO alerts are gated on planwatch's business-hours gauge and go quiet without it; a stale evaluation, no
successful evaluation since start, or Prometheus unreachable from planwatch open a ticket (advice and
triggers are stale, alerting still works).
"""

from __future__ import annotations

import re

from monitor.queries.selector import Matcher
from monitor.rules.model import AlertRule, Group
from monitor.rules.runbooks import check_hint, runbook
from monitor.triggers.catalog import CATALOG
from monitor.triggers.model import TriggerDef
from monitor.units import format_duration

__all__ = ["JOB", "STALE_AFTER_SECONDS", "TRIGGER_ALERT", "advisor_groups"]

JOB = "planwatch"
TRIGGER_ALERT = "PlanwatchTriggerActive"
# Ten evaluation intervals at planwatch's default of 60 s.
STALE_AFTER_SECONDS = 600
_UP = f'up{{job="{JOB}"}}'
_LAST = f'planwatch_last_successful_evaluation_timestamp_seconds{{job="{JOB}"}}'


def advisor_groups() -> tuple[Group, ...]:
    return (
        Group("planwatch-advisor-health", _health()),
        Group("planwatch-advisor-triggers", (*(_trigger(d) for d in CATALOG), _unknown_trigger())),
    )


def _held(seconds: float) -> str:
    return "no hold time" if seconds <= 0 else f"its hold time of {format_duration(seconds)}"


def _trigger(d: TriggerDef) -> AlertRule:
    return AlertRule(
        alert=TRIGGER_ALERT,
        expr=f"planwatch_trigger_active{{{Matcher('trigger', '=', d.id).render()}}} == 1",
        hold="1m",
        labels={"trigger": d.id},
        annotations={
            "summary": f"{d.title} on tier {{{{ $labels.tier }}}} (planwatch trigger {d.id})",
            "description": (
                f"planwatch found trigger {d.id} on tier {{{{ $labels.tier }}}} and it held for "
                f"{_held(d.hold_seconds)} (judged over {d.window}). It invalidates: {d.invalidates}. The evidence "
                "(observed and plan values, queries) is on planwatch's GET /triggers."
            ),
            "runbook": runbook(d.id),
        },
    )


def _unknown_trigger() -> AlertRule:
    known = "|".join(re.escape(d.id) for d in CATALOG)
    return AlertRule(
        alert=TRIGGER_ALERT,
        expr=f"planwatch_trigger_active{{{Matcher('trigger', '!~', known).render()}}} == 1",
        hold="1m",
        labels={},
        annotations={
            "summary": "planwatch trigger {{ $labels.trigger }} on tier {{ $labels.tier }}",
            "description": (
                "planwatch reports trigger {{ $labels.trigger }}, which these rules do not know: planwatch is newer "
                "than rules/alerts-planwatch.yml. Regenerate the rules for its runbook."
            ),
            "runbook": (
                f"Means: a revisit-the-design trigger held on the tier. Check: {check_hint('')}. Change: follow the "
                "trigger's mitigation in the advisor's evidence, and regenerate these rules."
            ),
        },
    )


def _health() -> tuple[AlertRule, ...]:
    down_runbook = (
        "Means: nothing holds the fleet against its plan, and the availability SLO alerts (gated on "
        "planwatch_business_open) cannot fire. Check: the planwatch process and its logs, `/readyz`, the scrape "
        "target. Change: restart or redeploy planwatch; nothing in the plan changes."
    )
    stale_runbook = (
        "Means: advice, drift and triggers are old; KEDA/HPA read an old planwatch_recommended_replicas. Check: "
        "planwatch_prometheus_up, planwatch_evaluations_total by outcome, planwatch's logs (slow or failing "
        "queries). Change: fix the Prometheus connection or the query timeout in planwatch's settings."
    )
    return (
        AlertRule(
            "PlanwatchDown", f"{_UP} == 0", "5m", {"severity": "page"},
            {"summary": "planwatch {{ $labels.instance }} is down",
             "description": "Prometheus cannot scrape planwatch at {{ $labels.instance }} (up == 0 for 5m).",
             "runbook": down_runbook},
        ),
        AlertRule(
            "PlanwatchAbsent", f"absent({_UP})", "10m", {"severity": "page"},
            {"summary": "planwatch is not scraped",
             "description": f'No scrape target with job="{JOB}" for 10m: planwatch is not deployed, or service '
                            "discovery lost it.",
             "runbook": down_runbook},
        ),
        AlertRule(
            "PlanwatchEvaluationStale", f"time() - {_LAST} > {STALE_AFTER_SECONDS}", "5m", {"severity": "ticket"},
            {"summary": "planwatch's last successful evaluation is {{ $value | humanizeDuration }} old",
             "description": f"planwatch at {{{{ $labels.instance }}}} has not evaluated successfully for more "
                            f"than {format_duration(STALE_AFTER_SECONDS)} "
                            "(planwatch_last_successful_evaluation_timestamp_seconds).",
             "runbook": stale_runbook},
        ),
        AlertRule(
            "PlanwatchNeverEvaluated", f"{_UP} == 1 unless on (job, instance) {_LAST}", "15m",
            {"severity": "ticket"},
            {"summary": "planwatch {{ $labels.instance }} has not evaluated successfully since it started",
             "description": "planwatch is up but exports no planwatch_last_successful_evaluation_timestamp_seconds "
                            "after 15m: every evaluation so far failed.",
             "runbook": stale_runbook},
        ),
        AlertRule(
            "PlanwatchPrometheusUnreachable", f'planwatch_prometheus_up{{job="{JOB}"}} == 0', "5m",
            {"severity": "ticket"},
            {"summary": "planwatch {{ $labels.instance }} cannot reach Prometheus",
             "description": "planwatch's last evaluations failed to reach Prometheus (planwatch_prometheus_up == 0 "
                            "for 5m): its advice holds the fleet as it is.",
             "runbook": stale_runbook},
        ),
    )  # fmt: skip
