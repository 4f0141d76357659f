"""Rule files as data: recording and alerting rules, groups, and the notes a generated file's header carries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from monitor.rules.promql import duration

__all__ = ["ANNOTATIONS", "AlertRule", "Group", "RecordingRule", "RuleFile", "hold"]

# Every alert carries these, in this order.
ANNOTATIONS = ("summary", "description", "runbook")


def hold(seconds: float, scale: float = 1.0) -> str | None:
    """A `for:` duration: the hold time scaled (tests shorten it), None for no hold."""
    if not scale > 0:
        raise ValueError(f"hold_scale must be positive, got {scale!r}")
    return duration(max(1.0, seconds * scale)) if seconds > 0 else None


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
