"""A plan is rejected with every problem listed, each with its YAML path (and line) and a plain reason."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from monitor.cli.main import build_app
from monitor.plan import PlanError, load_plan, parse_plan

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CAPSTONE = (EXAMPLES / "capstone.yaml").read_text()


def _edit(text: str, edit: dict[str, object]) -> str:
    """Apply dotted-path edits ('tiers.1.weight_dtype': 'bf16'); a value of ... deletes the key."""
    data = yaml.safe_load(text)
    for path, value in edit.items():
        *parents, leaf = path.split(".")
        node = data
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        key = int(leaf) if leaf.isdigit() else leaf
        if value is ...:
            del node[key]
        else:
            node[key] = value
    return yaml.safe_dump(data, sort_keys=False)


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(EXAMPLES / "capstone.yaml", id="the capstone plan with four tiers loads"),
        pytest.param(EXAMPLES / "support-copilot.yaml", id="the support copilot plan loads"),
    ],
)
def test_examples_load(path: Path) -> None:
    assert load_plan(path).tiers


@pytest.mark.parametrize(
    ("edit", "path", "reason"),
    [
        pytest.param(
            {"tiers.2.weight_dtype": "bf16", "tiers.2.tensor_parallel": 1},
            "tiers[2]",
            "70B weights in bf16 (140.00 GB) leave no room for KV cache on 1 x H200-141GB",
            id="70B BF16 weights on one H200 leave no room for KV cache",
        ),
        pytest.param(
            {"models.llama-70b.layrs": 80},
            "models.llama-70b.layrs",
            "unknown key",
            id="a misspelled key is an error, not a silent default",
        ),
        pytest.param({"slo.ttft_p95": "fast"}, "slo.ttft_p95", "not a duration", id="a duration must parse"),
        pytest.param({"tiers.1.gpu": "B300"}, "tiers[1].gpu", "unknown GPU 'B300'", id="an unknown GPU is named"),
        pytest.param(
            {"tiers.0.model": "llama-405b"},
            "tiers[0].model",
            "unknown model 'llama-405b'",
            id="an unknown model is named",
        ),
        pytest.param(
            {"costs.gpu_hour_usd": {"H100-SXM-80GB": 3.0}},
            "costs.gpu_hour_usd",
            "no price for 'H200-141GB'",
            id="a GPU without a price is reported",
        ),
        pytest.param(
            {"workload.prompt_tokens.p95": 100},
            "workload.prompt_tokens",
            "p95 (100) is below p50",
            id="p95 below p50 is rejected",
        ),
        pytest.param(
            {"tiers.1.routing.prompt_tokens.max": 12000},
            "tiers[].routing",
            "prompts of 12000-16000 tokens are routed with shares summing to 0",
            id="a gap in prompt-length routing is reported with the band",
        ),
        pytest.param(
            {"workload.business_hours.timezone": "Mars/Olympus"},
            "workload.business_hours.timezone",
            "not an IANA timezone",
            id="an unknown timezone is rejected",
        ),
        pytest.param(
            {"tiers.1.replicas.planned": 20},
            "tiers[1].replicas",
            "min <= planned <= max",
            id="planned replicas above max are rejected",
        ),
        pytest.param({"tiers.1.name": "fast"}, "tiers[1].name", "used twice", id="tier names are unique"),
        pytest.param(
            {"tiers.1.selector": {"bad-label": "x"}},
            "tiers[1].selector",
            "not a Prometheus label name",
            id="selector label names must be valid Prometheus label names",
        ),
        pytest.param(
            {"tolerances.assumptions": {"prompt_p99": {"warn": 0.1}}},
            "tolerances.assumptions",
            "unknown assumption",
            id="tolerances name known assumptions only",
        ),
    ],
)
def test_invalid_plans_name_the_path_and_reason(edit: dict[str, object], path: str, reason: str) -> None:
    with pytest.raises(PlanError) as info:
        parse_plan(_edit(CAPSTONE, edit), source="plan.yaml")
    rendered = [str(p) for p in info.value.problems]
    assert any(r.startswith(path) and reason in r for r in rendered), rendered


def test_every_problem_is_listed_at_once() -> None:
    text = _edit(CAPSTONE, {"slo.tpot_p95": "slow", "models.llama-8b.layers": -1, "tiers.0.typo": 1})
    with pytest.raises(PlanError) as info:
        parse_plan(text)
    assert {p.path for p in info.value.problems} == {
        "slo.tpot_p95",
        "models.llama-8b.layers",
        "tiers[0].typo",
    }


def test_problems_carry_the_yaml_line() -> None:
    text = CAPSTONE.replace("    layers: 80\n", "    layers: -80\n", 1)
    with pytest.raises(PlanError) as info:
        parse_plan(text)
    (problem,) = info.value.problems
    assert problem.line == CAPSTONE.splitlines().index("    layers: 80") + 1


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        pytest.param("name: [unclosed\n", "(yaml)", id="broken YAML is reported with its line"),
        pytest.param("- a list\n", "must be a YAML mapping", id="a plan must be a mapping"),
        pytest.param("name: a\nname: b\n", "duplicate key 'name'", id="a repeated key is an error"),
    ],
)
def test_malformed_yaml(text: str, reason: str) -> None:
    with pytest.raises(PlanError, match=r"(?s)" + reason.replace("(", r"\(").replace(")", r"\)")):
        parse_plan(text)


def test_cli_rejects_a_bad_plan_with_exit_2_and_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(_edit(CAPSTONE, {"tiers.2.weight_dtype": "bf16", "tiers.2.tensor_parallel": 1}))
    result = CliRunner().invoke(build_app(), ["size", str(bad)])
    assert result.exit_code == 2
    assert "leave no room for KV cache on 1 x H200-141GB" in result.output
    assert "Traceback" not in result.output


def test_cli_reports_a_missing_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(build_app(), ["size", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert "cannot read" in result.output
