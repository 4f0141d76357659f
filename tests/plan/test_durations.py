"""One duration grammar: the plan, the settings, the CLI and the forecaster read durations the same way, and a
window written into PromQL is that grammar in whole numbers, so what validates also parses and renders."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from forecasting import parse_duration as forecast_duration
from monitor.cli.main import build_app
from monitor.units import parse_duration, validate_promql_duration
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


@pytest.mark.parametrize("command", ["check", "report"])
def test_a_window_of_a_year_fails_at_validation_with_exit_2(command: str) -> None:
    argv = [command, str(EXAMPLES / "support-copilot.yaml"), "--prometheus", "http://127.0.0.1:9", "--window", "1y"]
    result = CliRunner().invoke(build_app(), argv)
    assert result.exit_code == 2
    assert "--window: '1y'" in result.stderr
