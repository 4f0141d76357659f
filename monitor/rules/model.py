"""Rule files as data: recording and alerting rules, groups, and the notes a generated file's header carries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from monitor.triggers.hold import hold_step_ms, window_ms
from monitor.units import format_duration

__all__ = ["ANNOTATIONS", "AlertRule", "Group", "RecordingRule", "RuleFile", "held_over"]

# Every alert carries these, in this order.
ANNOTATIONS = ("summary", "description", "runbook")


def held_over(expr: str, seconds: float, scale: float = 1.0) -> str:
    """`expr` (a filter: a series per case the condition holds) where it also held over the hold period, judged
    on the history Prometheus holds as `monitor.triggers.hold` defines it: at every step of the subquery
    `[hold + step:step]`, as planwatch's `check` and `serve` judge it. An alert on this needs no `for:`, so a
    condition the history already shows fires at once (a `for:` would wait out the hold from the rule's first
    evaluation, after every Prometheus restart too). `scale` shortens the hold (tests only)."""
    if not scale > 0:
        raise ValueError(f"hold_scale must be positive, got {scale!r}")
    if seconds <= 0:
        return expr
    hold_ms = max(1000, round(seconds * scale * 1000))
    sampled = f"[{_ms(window_ms(hold_ms))}:{_ms(hold_step_ms(hold_ms))}]"
    # Sampled at every step (count of the condition) == samples in the range (count of an always-true vector).
    return (
        f"({expr}) and (count_over_time(({expr}){sampled}) >= on () group_left () count_over_time(vector(1){sampled}))"
    )


def _ms(milliseconds: int) -> str:
    return format_duration(milliseconds / 1000)


@dataclass(frozen=True)
class RecordingRule:
    record: str
    expr: str
    labels: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"record": self.record, "expr": self.expr}
        if self.labels:
            out["labels"] = dict(self.labels)
        return out


@dataclass(frozen=True)
class AlertRule:
    alert: str
    expr: str
    hold: str | None
    labels: Mapping[str, str]
    annotations: Mapping[str, str]

    def __post_init__(self) -> None:
        if tuple(self.annotations) != ANNOTATIONS or not all(self.annotations.values()):
            raise ValueError(f"alert {self.alert}: needs non-empty annotations {', '.join(ANNOTATIONS)}")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"alert": self.alert, "expr": self.expr}
        if self.hold is not None:
            out["for"] = self.hold
        out["labels"] = dict(self.labels)
        out["annotations"] = dict(self.annotations)
        return out


@dataclass(frozen=True)
class Group:
    name: str
    rules: tuple[RecordingRule | AlertRule, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "rules": [r.to_dict() for r in self.rules]}


@dataclass(frozen=True)
class RuleFile:
    """Groups plus the notes for the header: what was left out and why."""

    groups: tuple[Group, ...]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"groups": [g.to_dict() for g in self.groups]}

    @property
    def alerts(self) -> tuple[AlertRule, ...]:
        return tuple(r for g in self.groups for r in g.rules if isinstance(r, AlertRule))
