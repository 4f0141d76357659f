"""Forecasting models: each a small class with validated settings, `fit(series)` and `fitted.forecast(h)`."""

from __future__ import annotations

from collections.abc import Callable

from forecasting.calendar import WorkWeek
from forecasting.errors import ForecastInputError
from forecasting.models.base import FittedModel, ForecastModel, PointForecast
from forecasting.models.combination import Combination
from forecasting.models.flat import DayMedian
from forecasting.models.holt_winters import HoltWinters, HoltWintersSettings
from forecasting.models.mstl import MSTLForecaster, MSTLSettings
from forecasting.models.naive import MeanDrift, MeanDriftSettings, SeasonalNaive, SeasonalNaiveSettings, WorkdayNaive
from forecasting.models.profile import ProfileLevel, ProfileLevelSettings

__all__ = [
    "MODEL_FACTORIES",
    "Combination",
    "DayMedian",
    "FittedModel",
    "ForecastModel",
    "HoltWinters",
    "HoltWintersSettings",
    "MSTLForecaster",
    "MSTLSettings",
    "MeanDrift",
    "MeanDriftSettings",
    "PointForecast",
    "ProfileLevel",
    "ProfileLevelSettings",
    "SeasonalNaive",
    "SeasonalNaiveSettings",
    "WorkdayNaive",
    "make_model",
]

MODEL_FACTORIES: dict[str, Callable[[], ForecastModel]] = {
    "seasonal_naive_daily": SeasonalNaive.daily,
    "seasonal_naive_weekly": SeasonalNaive.weekly,
    "holt_winters": HoltWinters,
    "holt_winters_damped": lambda: HoltWinters(HoltWintersSettings(damped_trend=True)),
    "mstl": MSTLForecaster,
    "mstl_daily": lambda: MSTLForecaster(MSTLSettings(weekly=False)),
    "mean_drift": MeanDrift,
    "day_median": DayMedian,
    "profile_level": ProfileLevel,
    "combined": lambda: Combination((HoltWinters(), ProfileLevel())),
}


def make_model(label: str, work_week: WorkWeek | None = None) -> ForecastModel:
    """A model with default settings by its label, e.g. 'mstl' or 'seasonal_naive_weekly';
    'seasonal_naive_workday' needs the `work_week` it repeats days by."""
    if label == WorkdayNaive.name:
        if work_week is None:
            raise ForecastInputError(f"{label} needs the working week (a plan's business days and timezone)")
        return WorkdayNaive(work_week)
    try:
        return MODEL_FACTORIES[label]()
    except KeyError:
        known = ", ".join(sorted([*MODEL_FACTORIES, WorkdayNaive.name]))
        raise ForecastInputError(f"unknown model {label!r} (known: {known})") from None
