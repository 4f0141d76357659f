"""`planwatch forecast --csv`: bad input is one clear line with exit 2; json, table and png outputs."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from monitor.cli.forecast import register
from tests.forecasting.helpers import traffic

runner = CliRunner()


def _app() -> typer.Typer:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

    @app.callback()
    def main() -> None:
        """planwatch (test build)."""

    register(app)
    return app


def _write_traffic_csv(path: Path, days: float, *, iso: bool) -> Path:
    series = traffic(days, seed=8)
    rows = ["timestamp,value"]
    for ts, value in zip(series.timestamps_s, series.values, strict=True):
        stamp = datetime.fromtimestamp(ts, UTC).isoformat() if iso else f"{ts:.0f}"
        rows.append(f"{stamp},{value:.3f}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def demand_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write_traffic_csv(tmp_path_factory.mktemp("csv") / "demand.csv", 5, iso=True)


def _bad_csv(lines_before: int, bad_line: str, header: str = "timestamp,value") -> str:
    rows = [header] + [f"{1_700_000_000 + 300 * i},{10 + i % 7}" for i in range(lines_before)]
    return "\n".join([*rows, bad_line, "1800000000,3"]) + "\n"


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        pytest.param(
            _bad_csv(15, "1700004800,abc"), [], "demand.csv:17: value 'abc' is not a number", id="a word as a value"
        ),
        pytest.param(
            _bad_csv(3, "yesterday,5"),
            [],
            "demand.csv:5: timestamp 'yesterday' is neither ISO 8601 nor Unix seconds",
            id="a timestamp that is neither ISO nor a number",
        ),
        pytest.param(
            _bad_csv(2, "1700000900"), [], "demand.csv:4: expected at least 2 columns, got 1", id="a short row"
        ),
        pytest.param(
            _bad_csv(2, "1700000900000,4"),
            [],
            "demand.csv:4: timestamp '1700000900000' looks like milliseconds",
            id="milliseconds instead of seconds",
        ),
        pytest.param(
            _bad_csv(2, "1700000900,inf"), [], "demand.csv:4: value 'inf' is not finite", id="an infinite value"
        ),
        pytest.param(
            _bad_csv(2, "1700000900,4"),
            ["--value-column", "rps"],
            "demand.csv:1: no column 'rps' (columns: timestamp, value)",
            id="a value column that is not in the header",
        ),
        pytest.param("timestamp,value\n", [], "demand.csv: no data rows", id="a header and nothing else"),
        pytest.param(
            "timestamp,value\n1700000000,1\n",
            [],
            "demand.csv: cannot infer the step: fewer than two distinct timestamps",
            id="a single data row",
        ),
        pytest.param(
            _bad_csv(300, "1700090300,5"),
            ["--horizon", "1x"],
            "--horizon: '1x' is not a duration",
            id="a bad horizon, named by its option",
        ),
        pytest.param(
            _bad_csv(300, "1700090300,5"), ["--timezone", "Paris"], "unknown timezone 'Paris'", id="a bad timezone"
        ),
        pytest.param(
            _bad_csv(300, "1700090300,5"),
            ["--workdays", "mon-funday"],
            "--workdays 'mon-funday': 'mon-funday' is not a day or a range of days (e.g. mon-fri)",
            id="a working week that is not days, named by its option",
        ),
    ],
)
def test_bad_input_is_one_clear_line_and_exit_status_2(
    tmp_path: Path, content: str, args: list[str], message: str
) -> None:
    path = tmp_path / "demand.csv"
    path.write_text(content, encoding="utf-8")
    result = runner.invoke(_app(), ["forecast", "--csv", str(path), *args])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    expected = f"error: {tmp_path}/{message}" if message.startswith("demand.csv") else f"error: {message}"
    assert result.stderr.startswith(expected), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_missing_file_and_a_missing_csv_option_are_errors_too(tmp_path: Path) -> None:
    missing = runner.invoke(_app(), ["forecast", "--csv", str(tmp_path / "nope.csv")])
    assert missing.exit_code == 2 and "nope.csv: cannot read" in missing.stderr
    no_csv = runner.invoke(_app(), ["forecast"])
    assert no_csv.exit_code == 2 and "give either --csv FILE, or PLAN with --prometheus URL" in no_csv.stderr


def test_json_is_the_apis_forecast_shape_plus_the_ramp(demand_csv: Path) -> None:
    """The forecast is written as /v1/forecast writes a tier's (monitor.export.forecast_shape), then the ramp."""
    result = runner.invoke(
        _app(), ["forecast", "--csv", str(demand_csv), "--format", "json", "--threshold", "20", "--horizon", "12h"]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert list(document) == ["name", "model", "reason", "fitted_at", "step_seconds", "history_points",
                              "backtest_mase", "next_peak", "interval", "timestamps", "mean", "lower", "upper",
                              "ramp"]  # fmt: skip
    assert document["name"] == demand_csv.stem and document["interval"] == "80%"
    assert all(len(document[k]) == 144 for k in ("timestamps", "mean", "lower", "upper"))
    bands = zip(document["lower"], document["mean"], document["upper"], strict=True)
    assert all(lower <= mean <= upper for lower, mean, upper in bands)
    assert set(document["next_peak"]) == {"at", "requests_per_second", "upper_requests_per_second"}
    (ramp,) = document["ramp"]
    assert set(ramp) == {"threshold", "timestamp", "earliest", "latest"} and ramp["threshold"] == 20.0
    assert np.all(np.diff(document["timestamps"]) == 300.0) and document["step_seconds"] == 300.0
    assert document["fitted_at"] < document["timestamps"][0]


def test_json_with_backtest_adds_one_entry_per_model(demand_csv: Path) -> None:
    result = runner.invoke(_app(), ["forecast", "--csv", str(demand_csv), "--format", "json", "--backtest"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert list(document)[-1] == "backtest"
    models = {entry["model"] for entry in document["backtest"]}
    assert document["model"] in models and "seasonal_naive_daily" in models
    keys = {"model", "mae", "mase", "coverage_80", "coverage_95", "peak_error"}
    assert all(set(entry) == keys for entry in document["backtest"])


def test_the_table_labels_units_times_and_thresholds(tmp_path: Path) -> None:
    path = _write_traffic_csv(tmp_path / "unix.csv", 3, iso=False)
    result = runner.invoke(
        _app(),
        ["forecast", "--csv", str(path), "--threshold", "25", "--timezone", "Europe/Paris", "--backtest"],
        env={"COLUMNS": "160"},
    )
    assert result.exit_code == 0, result.output
    for text in ("Demand forecast", "next peak", "req/s", "Ramp: upward threshold crossings", "Europe/Paris"):
        assert text in result.stdout, text
    assert "Backtest:" in result.stdout and "morning ramp" in result.stdout


def test_png_is_written_where_asked_and_needs_out(demand_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "forecast.png"
    result = runner.invoke(
        _app(), ["forecast", "--csv", str(demand_csv), "--format", "png", "--out", str(out), "--threshold", "30"]
    )
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    assert f"wrote {out}" in result.stderr.replace("\n", "")
    refused = runner.invoke(_app(), ["forecast", "--csv", str(demand_csv), "--format", "png"])
    assert refused.exit_code == 2 and "--format png needs --out" in refused.stderr


def test_the_png_title_names_what_is_forecast(
    demand_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import matplotlib.axes

    titles: list[str] = []
    original = matplotlib.axes.Axes.set_title
    monkeypatch.setattr(
        matplotlib.axes.Axes, "set_title", lambda ax, text, *a, **k: titles.append(text) or original(ax, text, *a, **k)
    )
    out = tmp_path / "forecast.png"
    result = runner.invoke(_app(), ["forecast", "--csv", str(demand_csv), "--format", "png", "--out", str(out)])
    assert result.exit_code == 0, result.output
    (title,) = titles
    assert title.startswith(f"{demand_csv.name}: demand forecast"), title


def test_json_stays_strict_when_a_metric_is_infinite(tmp_path: Path) -> None:
    """Every day the same square wave: the daily naive baseline is perfect, so other models' MASE is infinite,
    shown as null. (A constant series is no longer backtested at all: tests/forecasting/test_constant_history.py.)"""
    path = tmp_path / "square.csv"
    values = [5 if (i % 288) < 144 else 7 for i in range(5 * 288)]
    path.write_text("timestamp,value\n" + "".join(f"{1_700_000_000 + 300 * i},{v}\n" for i, v in enumerate(values)))
    result = runner.invoke(_app(), ["forecast", "--csv", str(path), "--format", "json", "--backtest"])
    assert result.exit_code == 0, result.output

    def refuse(constant: str) -> None:
        raise AssertionError(f"non-standard JSON constant {constant}")

    document = json.loads(result.stdout, parse_constant=refuse)
    assert {mean for mean in document["mean"]} == {5.0, 7.0}
    assert any(entry["mase"] is None for entry in document["backtest"])


@pytest.mark.parametrize(
    ("text", "days"),
    [
        pytest.param("mon-fri", {0, 1, 2, 3, 4}, id="a range of days"),
        pytest.param("Sun,mon, tue", {6, 0, 1}, id="a list of days, any case and spacing"),
        pytest.param("fri-mon", {4, 5, 6, 0}, id="a range that wraps the weekend"),
    ],
)
def test_workdays_are_read_as_a_plan_writes_its_business_days(text: str, days: set[int]) -> None:
    from monitor.cli.forecast_run import parse_workdays

    assert parse_workdays(text) == days


def test_a_csv_forecast_with_the_working_week_copies_friday_into_monday(tmp_path: Path) -> None:
    series = traffic(7.25, seed=8)  # Monday to the next Monday 06:00, Europe/Paris
    path = tmp_path / "demand.csv"
    rows = [f"{t:.0f},{v:.3f}" for t, v in zip(series.timestamps_s, series.values, strict=True)]
    path.write_text("timestamp,value\n" + "\n".join(rows) + "\n", encoding="utf-8")
    week = ["--workdays", "mon-fri", "--timezone", "Europe/Paris"]
    known = runner.invoke(_app(), ["forecast", "--csv", str(path), "--format", "json", *week])
    plain = runner.invoke(_app(), ["forecast", "--csv", str(path), "--format", "json"])
    assert known.exit_code == 0 and plain.exit_code == 0, known.output + plain.output
    assert json.loads(known.stdout)["model"] == "seasonal_naive_workday"
    assert json.loads(plain.stdout)["model"] != "seasonal_naive_workday"
    # Monday 09:00-10:00: Friday's morning, not Sunday's
    assert np.mean(json.loads(known.stdout)["mean"][36:48]) > 2 * np.mean(json.loads(plain.stdout)["mean"][36:48])
