"""Demand forecasting for planwatch: pure functions from a time series to a forecast with honest intervals.

No HTTP, no Prometheus, no clock: time is always a parameter (Unix seconds). The usual entry point is
`forecast(series, ForecastSettings(...))`, which regularizes the series, backtests the candidate models on
recent history, picks the simplest within one standard error of the best MASE against seasonal naive
(`forecasting.selection`), calibrates 80%/95% intervals from the backtest
errors and reports the next peak and the ramp (threshold crossings).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The package's names load on first use (PEP 562): `monitor.units` needs only `forecasting.durations`, and
# importing every model here pulled statsmodels and scipy into each CLI command's --help (about 1 s).
if TYPE_CHECKING:
    from forecasting.backtest import BacktestReport, ModelScore
    from forecasting.calendar import MorningRamp, WorkWeek, is_business_hours, local_time, next_morning_ramp
    from forecasting.choice import ModelChoice
    from forecasting.csv_input import CsvFormatError, parse_csv_series
    from forecasting.durations import format_duration, parse_duration
    from forecasting.errors import ForecastError, ForecastInputError, ForecastModelError
    from forecasting.events import Peak, RampCrossing, next_peak, ramp_crossings
    from forecasting.intervals import Bands, IntervalCalibration
    from forecasting.models import (
        MODEL_FACTORIES,
        FittedModel,
        ForecastModel,
        HoltWinters,
        HoltWintersSettings,
        MeanDrift,
        MeanDriftSettings,
        MSTLForecaster,
        MSTLSettings,
        PointForecast,
        SeasonalNaive,
        SeasonalNaiveSettings,
        make_model,
    )
    from forecasting.pipeline import ForecastSettings, forecast, forecast_many
    from forecasting.regularizing import Regularized, RegularizeReport, infer_step_seconds, regularize
    from forecasting.result import ForecastPoint, ForecastResult
    from forecasting.series import RegularSeries, Series, steps_per_day, steps_per_week
    from forecasting.synthetic import TrafficShape, synthetic_traffic

_HOME: dict[str, str] = {
    "BacktestReport": "forecasting.backtest",
    "Bands": "forecasting.intervals",
    "CsvFormatError": "forecasting.csv_input",
    "FittedModel": "forecasting.models",
    "ForecastError": "forecasting.errors",
    "ForecastInputError": "forecasting.errors",
    "ForecastModel": "forecasting.models",
    "ForecastModelError": "forecasting.errors",
    "ForecastPoint": "forecasting.result",
    "ForecastResult": "forecasting.result",
    "ForecastSettings": "forecasting.pipeline",
    "HoltWinters": "forecasting.models",
    "HoltWintersSettings": "forecasting.models",
    "IntervalCalibration": "forecasting.intervals",
    "MODEL_FACTORIES": "forecasting.models",
    "MSTLForecaster": "forecasting.models",
    "MSTLSettings": "forecasting.models",
    "MeanDrift": "forecasting.models",
    "MeanDriftSettings": "forecasting.models",
    "ModelChoice": "forecasting.choice",
    "ModelScore": "forecasting.backtest",
    "MorningRamp": "forecasting.calendar",
    "WorkWeek": "forecasting.calendar",
    "Peak": "forecasting.events",
    "PointForecast": "forecasting.models",
    "RampCrossing": "forecasting.events",
    "RegularSeries": "forecasting.series",
    "RegularizeReport": "forecasting.regularizing",
    "Regularized": "forecasting.regularizing",
    "SeasonalNaive": "forecasting.models",
    "SeasonalNaiveSettings": "forecasting.models",
    "Series": "forecasting.series",
    "TrafficShape": "forecasting.synthetic",
    "forecast": "forecasting.pipeline",
    "forecast_many": "forecasting.pipeline",
    "format_duration": "forecasting.durations",
    "infer_step_seconds": "forecasting.regularizing",
    "is_business_hours": "forecasting.calendar",
    "local_time": "forecasting.calendar",
    "make_model": "forecasting.models",
    "next_morning_ramp": "forecasting.calendar",
    "next_peak": "forecasting.events",
    "parse_csv_series": "forecasting.csv_input",
    "parse_duration": "forecasting.durations",
    "ramp_crossings": "forecasting.events",
    # The module is not named `regularize`: importing a submodule sets the package attribute of its name, which
    # would then shadow the lazily loaded function.
    "regularize": "forecasting.regularizing",
    "steps_per_day": "forecasting.series",
    "steps_per_week": "forecasting.series",
    "synthetic_traffic": "forecasting.synthetic",
}

__all__ = [
    "MODEL_FACTORIES",
    "BacktestReport",
    "Bands",
    "CsvFormatError",
    "FittedModel",
    "ForecastError",
    "ForecastInputError",
    "ForecastModel",
    "ForecastModelError",
    "ForecastPoint",
    "ForecastResult",
    "ForecastSettings",
    "HoltWinters",
    "HoltWintersSettings",
    "IntervalCalibration",
    "MSTLForecaster",
    "MSTLSettings",
    "MeanDrift",
    "MeanDriftSettings",
    "ModelChoice",
    "ModelScore",
    "MorningRamp",
    "Peak",
    "PointForecast",
    "RampCrossing",
    "RegularSeries",
    "RegularizeReport",
    "Regularized",
    "SeasonalNaive",
    "SeasonalNaiveSettings",
    "Series",
    "TrafficShape",
    "WorkWeek",
    "forecast",
    "forecast_many",
    "format_duration",
    "infer_step_seconds",
    "is_business_hours",
    "local_time",
    "make_model",
    "next_morning_ramp",
    "next_peak",
    "parse_csv_series",
    "parse_duration",
    "ramp_crossings",
    "regularize",
    "steps_per_day",
    "steps_per_week",
    "synthetic_traffic",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'forecasting' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
