"""Hostile label values from a plan stay inside their string literals in every query Prometheus runs.

A real Prometheus logs each query it evaluates (`query_log_file`); `planwatch check` runs its whole catalog
against it for a plan whose selector values are built to break out of a PromQL string. Each logged query is
taken apart with PromQL's own literal syntax: every marker must be inside a literal whose decoded value is
exactly the plan's value, and nothing of a hostile value may be left outside the literals.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from typer.testing import CliRunner

from monitor.cli.main import build_app
from tests.builders import EXAMPLES
from tests.conftest import PrometheusFactory
from tests.harness.stack import wait_for

HOSTILE = {
    "tier": 'x"} or absent(INJECTED_A) #',
    "namespace": 'a\\"b\nc\tINJECTED_B\\',
    "cluster": 'ünï "INJECTED_C"}[5m])) or vector(1)',
    "pool": "`INJECTED_D` ' .*|$ {{sel}} %s",
}
# PromQL string literals: "..." and '...' with backslash escapes, `...` raw.
_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', re.DOTALL)
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "\\": "\\", '"': '"', "'": "'"}


def _decode(literal: str) -> str:
    body = literal[1:-1]
    if literal[0] == "`":
        return body
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
        elif body[i + 1] == "x":
            out.append(chr(int(body[i + 2 : i + 4], 16)))
            i += 4
        else:
            out.append(_ESCAPES[body[i + 1]])
            i += 2
    return "".join(out)


def _hostile_plan(tmp_path: Path) -> Path:
    plan = yaml.safe_load((EXAMPLES / "support-copilot.yaml").read_text())
    plan["tiers"][0]["selector"] = HOSTILE
    path = tmp_path / "hostile.yaml"
    path.write_text(yaml.safe_dump(plan, allow_unicode=True))
    return path


def test_hostile_selector_values_stay_inside_their_literals(
    tmp_path: Path, prometheus_factory: PrometheusFactory
) -> None:
    log = tmp_path / "queries.log"
    prometheus = prometheus_factory(query_log_file=log)
    for recorded in ("--recording-rules", "--raw-series"):
        result = CliRunner().invoke(
            build_app(), ["check", str(_hostile_plan(tmp_path)), "--prometheus", prometheus.url, recorded]
        )
        assert result.exit_code in (0, 1), result.output  # judged (unknown data), not refused
    queries = wait_for(lambda: [json.loads(line)["params"]["query"] for line in log.read_text().splitlines()],
                       what="the query log")  # fmt: skip
    seen: set[str] = set()
    for query in queries:
        literals = [_decode(m.group()) for m in _LITERAL.finditer(query)]
        outside = _LITERAL.sub("", query)
        assert "INJECTED" not in outside, query
        for value in literals:
            if "INJECTED" in value:
                assert value in HOSTILE.values(), (value, query)
                seen.add(value)
    assert seen == set(HOSTILE.values()), f"{len(queries)} queries; values seen: {seen}"
