"""Revisit-the-design triggers: one catalog, a pure evaluator, and their evidence."""

from monitor.triggers.carryover import Reconciled, reconcile
from monitor.triggers.catalog import CATALOG, trigger_def
from monitor.triggers.evaluate import evaluate_triggers
from monitor.triggers.model import (
    EvalResult,
    Evidence,
    Severity,
    TierInputs,
    TriggerDef,
    TriggerInputs,
    TriggerRecord,
    TriggerState,
)

__all__ = [
    "CATALOG",
    "EvalResult",
    "Evidence",
    "Reconciled",
    "Severity",
    "TierInputs",
    "TriggerDef",
    "TriggerInputs",
    "TriggerRecord",
    "TriggerState",
    "evaluate_triggers",
    "reconcile",
    "trigger_def",
]
