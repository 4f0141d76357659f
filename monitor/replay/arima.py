"""The predictive policy's load predictor: NVIDIA Dynamo's SLA planner style, ARIMA on the request rate one
decision interval ahead, last value when the fit fails or the history is short.

Dynamo (`planner/utils/load_predictor.py`, `ARIMAPredictor`) keeps the last 100 interval rates, returns the last
value below 5 of them, and refits `pmdarima.auto_arima` on the window at every adjustment. Here the fit is
statsmodels' ARIMA(1, 1, 1) by maximum likelihood: a level that wanders (d = 1) with short-lived momentum (one
AR term) and measurement noise (one MA term), the low order auto_arima settles on for minute-level rates. A
likelihood fit costs about 0.1 s, so refitting every minute of a 14-day, 4-tier replay would take hours: the
parameters are refitted every `refit_every` observations (an hour of minutes), and every interval's forecast
applies them to the newest rates through the ARMA recursion on the differences, the conditional one-step
expectation statsmodels' `forecast(1)` also computes once its filter has forgotten its start (the MA part is
invertible, so it does, within a few steps).
"""

from __future__ import annotations

import math
import warnings
from collections import deque
from dataclasses import dataclass, field

import numpy as np

__all__ = ["ARIMA_ORDER", "ArimaPredictor"]

ARIMA_ORDER = (1, 1, 1)
WINDOW = 100  # Dynamo's window_size
MIN_POINTS = 5  # Dynamo's minimum_data_points: below it, the last value


@dataclass
class ArimaPredictor:
    """Feed each interval's rate with `add`, ask `predict` for the next one."""

    window: int = WINDOW
    min_points: int = MIN_POINTS
    refit_every: int = 60
    fits: int = 0  # how many statsmodels fits ran (for tests and the benchmark's account)
    _rates: deque[float] = field(default_factory=deque)
    _since_fit: int = 0
    _ar: tuple[float, ...] | None = None
    _ma: tuple[float, ...] = ()

    def add(self, rate: float) -> None:
        self._rates.append(rate if math.isfinite(rate) else 0.0)  # Dynamo counts a NaN rate as 0
        if len(self._rates) > self.window:
            self._rates.popleft()
        self._since_fit += 1

    def predict(self) -> float:
        """The next interval's rate: the ARIMA forecast, or the last value (short history, failed fit)."""
        if not self._rates:
            return 0.0
        last = self._rates[-1]
        if len(self._rates) < self.min_points:
            return last
        if self._ar is None or self._since_fit >= self.refit_every:
            self._fit()
        if self._ar is None:
            return last
        value = one_step_forecast(np.fromiter(self._rates, float), self._ar, self._ma)
        return max(0.0, value) if math.isfinite(value) else last

    def _fit(self) -> None:
        self._since_fit = 0
        self.fits += 1
        y = np.fromiter(self._rates, float)
        if np.ptp(y) == 0.0:  # a flat history: nothing to fit, and the last value is the forecast
            self._ar = None
            return
        from statsmodels.tsa.arima.model import ARIMA  # statsmodels loads only when a replay predicts

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # convergence and start-parameter warnings: the fit is checked below
                result = ARIMA(y, order=ARIMA_ORDER).fit(cov_type="none")
            ar, ma = tuple(float(v) for v in result.arparams), tuple(float(v) for v in result.maparams)
        except (ValueError, np.linalg.LinAlgError):
            self._ar = None
            return
        self._ar, self._ma = (ar, ma) if all(map(math.isfinite, ar + ma)) else (None, ())


def one_step_forecast(y: np.ndarray, ar: tuple[float, ...], ma: tuple[float, ...]) -> float:
    """E[y(n+1) | y(1..n)] for ARIMA(p, 1, q) with these coefficients. On the differences x, each step's
    innovation is e(t) = x(t) - sum(ar_i x(t-i)) - sum(ma_j e(t-j)), started at zero: a linear filter with
    numerator 1 - ar and denominator 1 + ma (scipy's lfilter, one pass); the forecast is the last rate plus the
    next difference's prediction, sum(ar_i x(n+1-i)) + sum(ma_j e(n+1-j))."""
    from scipy.signal import lfilter

    x = np.diff(y)
    errors = lfilter(np.r_[1.0, -np.asarray(ar)], np.r_[1.0, np.asarray(ma)], x)
    ahead = sum(phi * x[-i] for i, phi in enumerate(ar, start=1) if i <= x.size)
    ahead += sum(theta * errors[-j] for j, theta in enumerate(ma, start=1) if j <= x.size)
    return float(y[-1] + ahead)
