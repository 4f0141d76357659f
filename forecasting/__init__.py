"""Demand forecasting for planwatch: pure functions from a time series to a forecast with honest intervals.

No HTTP, no Prometheus, no clock: time is always a parameter (Unix seconds). The usual entry point is
`forecast(series, ForecastSettings(...))`, which regularizes the series, backtests the candidate models on
recent history, picks one by MASE against seasonal naive, calibrates 80%/95% intervals from the backtest
errors and reports the next peak and the ramp (threshold crossings).
"""

from forecasting.backtest import BacktestReport, ModelScore
from forecasting.calendar import MorningRamp, is_business_hours, local_time, next_morning_ramp
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
from forecasting.regularize import Regularized, RegularizeReport, infer_step_seconds, regularize
from forecasting.result import ForecastPoint, ForecastResult
from forecasting.series import RegularSeries, Series, steps_per_day, steps_per_week
from forecasting.synthetic import TrafficShape, synthetic_traffic

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
