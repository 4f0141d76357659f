"""promtool on the committed rules: `check rules` on every file, `test rules` on every unit-test file, and a
coverage check that every alerting rule is tested before its hold (`for:`, or the hold it judges on history)
elapses (no alert) and after (firing).

An alerting rule is identified by its alert name and static labels; an expected alert belongs to the rule of
that name whose static labels it carries, the most specific one when several match (a catch-all rule has
fewer labels).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.units import parse_duration
from tests.harness.stack import require_binaries

RULES = Path(__file__).resolve().parents[2] / "rules"
RULE_FILES = sorted(RULES.glob("*.yml"))
TEST_FILES = sorted((RULES / "tests").glob("*.test.yml"))
GENERATED = ("alerts-planwatch.yml", "capstone-slo.yml", "support-copilot-slo.yml")


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    require_binaries()
    return subprocess.run(["promtool", *args], capture_output=True, text=True, check=False, cwd=RULES / "tests")


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in RULE_FILES])
def test_promtool_accepts_the_rule_file(path: Path) -> None:
    done = _promtool("check", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in TEST_FILES])
def test_promtool_unit_tests_pass(path: Path) -> None:
    done = _promtool("test", "rules", path.name)
    assert done.returncode == 0, done.stdout + done.stderr


@dataclass(frozen=True)
class AlertRule:
    name: str
    labels: frozenset[tuple[str, str]]
    hold_seconds: float

    def describe(self) -> str:
        return f"{self.name}{dict(sorted(self.labels))}"


# An alert held on history (monitor.rules.model.held_over) samples `[hold + step:step]`, with no `for:`.
_HELD_OVER = re.compile(r"count_over_time\(vector\(1\)\[(\w+):(\w+)\]\)")


def _hold_seconds(rule: dict[str, Any]) -> float:
    held = _HELD_OVER.search(rule["expr"])
    if held:
        return parse_duration(held.group(1)) - parse_duration(held.group(2))
    return parse_duration(rule.get("for", "0s"))


def _alert_rules(path: Path) -> list[AlertRule]:
    doc = yaml.safe_load(path.read_text())
    return [
        AlertRule(r["alert"], frozenset(r.get("labels", {}).items()), _hold_seconds(r))
        for g in doc["groups"]
        for r in g["rules"]
        if "alert" in r
    ]


def _owner(rules: list[AlertRule], name: str, labels: dict[str, str]) -> AlertRule | None:
    matching = [r for r in rules if r.name == name and r.labels <= set(labels.items())]
    return max(matching, key=lambda r: len(r.labels), default=None)


def _checks(test_file: Path) -> list[tuple[float, str, list[dict[str, Any]]]]:
    doc = yaml.safe_load(test_file.read_text())
    return [
        (parse_duration(c["eval_time"]), c["alertname"], c.get("exp_alerts") or [])
        for t in doc["tests"]
        for c in t.get("alert_rule_test", [])
    ]


def coverage(rule_file: Path, test_file: Path) -> dict[AlertRule, tuple[bool, bool]]:
    """Per alerting rule: (tested firing with labels and every annotation, tested silent before its `for:`)."""
    rules = _alert_rules(rule_file)
    firing: dict[AlertRule, list[float]] = {r: [] for r in rules}
    silent: dict[str, list[tuple[float, set[AlertRule]]]] = {}
    for at, name, expected in _checks(test_file):
        owners = set()
        for alert in expected:
            owner = _owner(rules, name, alert["exp_labels"])
            assert owner is not None, f"{test_file.name}: an expected {name} matches no rule: {alert['exp_labels']}"
            if set(alert.get("exp_annotations", {})) >= {"summary", "description", "runbook"}:
                firing[owner].append(at)
            owners.add(owner)
        silent.setdefault(name, []).append((at, owners))
    out = {}
    for rule, times in firing.items():
        before = any(
            at < fired and fired - at <= max(rule.hold_seconds, 60.0) and rule not in owners
            for fired in times
            for at, owners in silent.get(rule.name, [])
        )
        out[rule] = (bool(times), before)
    return out


@pytest.mark.parametrize("name", GENERATED)
def test_every_alert_is_tested_before_and_after_its_hold(name: str) -> None:
    result = coverage(RULES / name, RULES / "tests" / name.replace(".yml", ".test.yml"))
    untested = [r.describe() for r, (fired, _) in result.items() if not fired]
    no_before = [r.describe() for r, (fired, before) in result.items() if fired and not before]
    assert not untested, f"alerts never asserted firing: {untested}"
    assert not no_before, f"alerts without a case inside their `for:` before firing: {no_before}"
    assert len(result) >= 1


def test_the_coverage_check_notices_an_untested_alert(tmp_path: Path) -> None:
    rule_file = tmp_path / "r.yml"
    rule_file.write_text(
        yaml.safe_dump({"groups": [{"name": "g", "rules": [
            {"alert": "A", "expr": "x > 1", "for": "5m", "labels": {"severity": "page"}},
            {"alert": "B", "expr": "y > 1", "labels": {"severity": "page"}},
        ]}]})
    )  # fmt: skip
    test_file = tmp_path / "r.test.yml"
    annotations = {"summary": "s", "description": "d", "runbook": "r"}
    test_file.write_text(
        yaml.safe_dump({"tests": [{"alert_rule_test": [
            {"eval_time": "1m", "alertname": "A", "exp_alerts": []},
            {"eval_time": "6m", "alertname": "A", "exp_alerts": [
                {"exp_labels": {"severity": "page"}, "exp_annotations": annotations}]},
        ]}]})
    )  # fmt: skip
    result = {r.name: v for r, v in coverage(rule_file, test_file).items()}
    assert result == {"A": (True, True), "B": (False, False)}


def test_unit_tests_name_the_rule_file_they_test() -> None:
    for path in TEST_FILES:
        files = yaml.safe_load(path.read_text())["rule_files"]
        assert files == [f"../{path.name.replace('.test.yml', '.yml')}"]
        assert re.match(r"^# promtool unit tests for rules/", path.read_text())
