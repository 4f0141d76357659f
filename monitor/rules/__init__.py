"""Prometheus rules generated from one source of truth: the plan, the PromQL catalog and the trigger catalog.

Per plan (`planwatch rules PLAN`): multi-window, multi-burn-rate SLO alerts per tier (TTFT, TPOT,
availability) and drift alerts mirroring the revisit-the-design triggers with the plan's numbers baked in.
Plan-independent (`planwatch rules --advisor`): alerts on planwatch's own metrics. Pure: plan in, text out.
"""

from monitor.rules.document import advisor_rules, plan_rules, render_advisor_rules, render_plan_rules
from monitor.rules.model import AlertRule, Group, RecordingRule, RuleFile

__all__ = [
    "AlertRule",
    "Group",
    "RecordingRule",
    "RuleFile",
    "advisor_rules",
    "plan_rules",
    "render_advisor_rules",
    "render_plan_rules",
]
