"""The typed output of a forecast run: the path with its bands, the next peak, the ramp, the backtest."""

from __future__ import annotations

from dataclasses import dataclass

from forecasting.backtest import BacktestReport
from forecasting.choice import ModelChoice
from forecasting.events import Peak, RampCrossing
from forecasting.intervals import Bands, IntervalCalibration
from forecasting.regularizing import RegularizeReport
from forecasting.series import FloatArray, RegularSeries

__all__ = ["ForecastPoint", "ForecastResult"]


@dataclass(frozen=True)
class ForecastPoint:
    timestamp_s: float
    mean: float
    lower: float
    upper: float


@dataclass(frozen=True, eq=False)
class ForecastResult:
    """Everything a forecast run decided and produced; times are Unix seconds.

    `history` is the regularized series the models saw (its end is "now" for this forecast).
    """

    model: str
    reason: str
    history: RegularSeries
    timestamps_s: FloatArray
    mean: FloatArray
    bands: Bands
    next_peak: Peak
    ramp: tuple[RampCrossing, ...]
    calibration: IntervalCalibration
    backtest: BacktestReport | None
    regularize_report: RegularizeReport | None
    choice: ModelChoice | None = None  # what the backtest decided: hand it to the next refit's `forecast`

    @property
    def step_seconds(self) -> float:
        return self.history.step_seconds

    def points(self, level: int = 80) -> list[ForecastPoint]:
        """The forecast as (timestamp, mean, lower, upper) rows at the 80% or 95% level."""
        if level not in (80, 95):
            raise ValueError(f"interval level must be 80 or 95, got {level}")
        lower = self.bands.lower_80 if level == 80 else self.bands.lower_95
        upper = self.bands.upper_80 if level == 80 else self.bands.upper_95
        return [
            ForecastPoint(float(t), float(m), float(lo), float(up))
            for t, m, lo, up in zip(self.timestamps_s, self.mean, lower, upper, strict=True)
        ]
