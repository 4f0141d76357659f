"""One duration grammar: the plan, the settings, the CLI and the forecaster read durations the same way, and a
window written into PromQL is that grammar in whole numbers, so what validates also parses and renders. One
writer (`format_duration`) writes it for the rules, the observer's queries and the messages alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from fleetsim.cli import app as fleetsim_app
from forecasting import parse_duration as forecast_duration
from monitor.cli.main import build_app
from monitor.units import format_duration, parse_duration, validate_promql_duration
from tests.builders import EXAMPLES


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("50ms", 0.05, id="milliseconds"),
        pytest.param("1.2s", 1.2, id="decimal seconds"),
        pytest.param("20m", 1200.0, id="minutes"),
        pytest.param("1h30m", 5400.0, id="compound, as Prometheus writes it"),
        pytest.param("2w", 1_209_600.0, id="weeks"),
        pytest.param("300", 300.0, id="a plain number is seconds"),
    ],
)
def test_the_plan_and_the_forecaster_read_a_duration_alike(text: str, seconds: float) -> None:
    assert parse_duration(text) == forecast_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("1y", id="years are not in the grammar"),
        pytest.param("10min", id="nor is min"),
        pytest.param("5x", id="nor an unknown unit"),
    ],
)
def test_what_the_grammar_refuses_both_refuse(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text)
    with pytest.raises(ValueError, match="is not a duration"):
        forecast_duration(text)


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        pytest.param("5m", True, id="a whole number of minutes is a PromQL range"),
        pytest.param("1h30m", True, id="so is a compound one"),
        pytest.param("1.5h", False, id="a decimal parses but PromQL refuses it"),
        pytest.param("1y", False, id="a year is refused before it reaches Prometheus"),
        pytest.param("5m) or vector(1", False, id="anything else could inject PromQL"),
    ],
)
def test_promql_windows_are_the_grammar_in_whole_numbers(text: str, ok: bool) -> None:
    if ok:
        assert validate_promql_duration(text) == text and parse_duration(text) > 0
    else:
        with pytest.raises(ValueError, match="is not a PromQL duration planwatch accepts"):
            validate_promql_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        pytest.param(5, "5s", id="seconds"),
        pytest.param(60, "1m", id="a minute, the observer's demand step"),
        pytest.param(1800, "30m", id="minutes"),
        pytest.param(3600.0, "1h", id="an hour"),
        pytest.param(5400, "1h30m", id="compound, largest unit first, as Prometheus writes it"),
        pytest.param(90, "1m30s", id="ninety seconds are a minute and a half"),
        pytest.param(86_400, "1d", id="a day"),
        pytest.param(604_800, "7d", id="a week is written in days"),
        pytest.param(2_592_000, "30d", id="so is a 30-day SLO window, not 4w2d"),
        pytest.param(90_061, "1d1h1m1s", id="every unit once"),
        pytest.param(0.05, "50ms", id="milliseconds"),
        pytest.param(1.4, "1s400ms", id="a fraction of a second is kept to the millisecond, not rounded away"),
        pytest.param(86_399.9999, "1d", id="rounded to the millisecond"),
    ],
)
def test_one_writer_writes_the_grammar_in_whole_numbers(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert validate_promql_duration(text) == text and parse_duration(text) == pytest.approx(seconds, abs=5e-4)


@pytest.mark.parametrize(
    "seconds",
    [
        pytest.param(0.0, id="zero"),
        pytest.param(0.0004, id="under a millisecond"),
        pytest.param(-60.0, id="negative"),
        pytest.param(float("nan"), id="not a number"),
        pytest.param(float("inf"), id="infinite"),
    ],
)
def test_the_writer_refuses_what_is_no_duration(seconds: float) -> None:
    with pytest.raises(ValueError, match="is not a positive duration"):
        format_duration(seconds)


COPILOT = str(EXAMPLES / "support-copilot.yaml")
DEAD = ["--prometheus", "http://127.0.0.1:9"]  # nothing listens: a bad duration must be caught before asking


def _bad_config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "planwatch.yaml"
    path.write_text(text)
    return str(path)


def _bad_plan(tmp_path: Path) -> str:
    path = tmp_path / "plan.yaml"
    path.write_text((EXAMPLES / "support-copilot.yaml").read_text().replace("cold_start: 10m", "cold_start: 10min"))
    return str(path)


@pytest.mark.parametrize(
    ("argv", "env", "where"),
    [
        pytest.param(["check", COPILOT, *DEAD, "--window", "1y"], {}, "--window: '1y'", id="check --window 1y"),
        pytest.param(["check", COPILOT, *DEAD, "--long-window", "1y"], {}, "--long-window: '1y'",
                     id="check --long-window 1y"),
        pytest.param(["check", COPILOT, *DEAD, "--history", "10min"], {}, "--history: '10min'",
                     id="check --history 10min"),
        pytest.param(["report", COPILOT, *DEAD, "--window", "1y"], {}, "--window: '1y'", id="report --window 1y"),
        pytest.param(["report", COPILOT, *DEAD, "--horizon", "1y"], {}, "--horizon: '1y'", id="report --horizon 1y"),
        pytest.param(["forecast", COPILOT, *DEAD, "--horizon", "1y"], {}, "--horizon: '1y'",
                     id="forecast --horizon 1y, before Prometheus is asked"),
        pytest.param(["forecast", COPILOT, *DEAD, "--step", "10min"], {}, "--step: '10min'",
                     id="forecast --step 10min"),
        pytest.param(["forecast", COPILOT, *DEAD, "--history", "1y"], {}, "--history: '1y'",
                     id="forecast --history 1y"),
        pytest.param(["forecast", "--csv", COPILOT, "--horizon", "0s"], {}, "--horizon: '0s' is not a positive",
                     id="forecast --horizon 0s on a CSV"),
        pytest.param(["measurements", COPILOT, *DEAD, "--window", "1y"], {}, "--window: '1y'",
                     id="measurements --window 1y"),
        pytest.param(["replay", COPILOT, "--trace", "fleetsim", "--decision-interval", "1y"], {},
                     "--decision-interval: '1y'",
                     id="replay --decision-interval 1y"),
        pytest.param(["serve", COPILOT, *DEAD], {"PLANWATCH_LONG_WINDOW": "1y"}, "long_window: '1y' is not a PromQL",
                     id="serve with PLANWATCH_LONG_WINDOW=1y"),
        pytest.param(["serve", COPILOT, *DEAD, "--config", "CONFIG"], {}, "evaluation_interval: '10min' is not a",
                     id="serve with evaluation_interval 10min in its file"),
        pytest.param(["size", "PLAN"], {}, "tiers[0].cold_start (line 45): '10min' is not a duration",
                     id="a plan whose cold start is 10min"),
    ],
)  # fmt: skip
def test_every_entry_point_refuses_a_bad_duration_naming_it_with_exit_2(
    argv: list[str], env: dict[str, str], where: str, tmp_path: Path
) -> None:
    files = {"CONFIG": _bad_config(tmp_path, "evaluation_interval: 10min\n"), "PLAN": _bad_plan(tmp_path)}
    result = CliRunner().invoke(build_app(), [files.get(a, a) for a in argv], env=env)
    assert result.exit_code == 2, result.output
    assert where in " ".join(result.stderr.split())


@pytest.mark.parametrize(
    ("option", "value"),
    [
        pytest.param("--step", "10min", id="fleetsim backfill --step 10min"),
        pytest.param("--end", "-1y", id="fleetsim backfill --end -1y"),
        pytest.param("--block", "1y", id="fleetsim backfill --block 1y"),
    ],
)
def test_fleetsim_backfill_refuses_a_bad_duration_naming_it_with_exit_2(
    option: str, value: str, tmp_path: Path
) -> None:
    argv = ["backfill", COPILOT, "--prometheus-data", str(tmp_path / "data"), option, value]
    result = CliRunner().invoke(fleetsim_app, argv)
    assert result.exit_code == 2, result.output
    assert f"{option}" in result.stderr and repr(value) in result.stderr
    assert not (tmp_path / "data").exists()
