"""What a forecast's backtest decided (the model, its intervals, its anchors, its peak bound), and when a
later refit may reuse it instead of backtesting again.

The backtest is most of a forecast's cost: every candidate is fitted at a dozen origins 6 h apart
(`ForecastSettings.calibration_spacing_seconds`). A service refitting every 15 minutes would re-choose on windows
that moved by 15 minutes of the three days they span, and on the history it already chose from. So a refit
handed the previous `ModelChoice` keeps it (and refits only the chosen model on the new history, anchored
at the new recent level) while both hold:
- the history ends less than one calibration spacing after the history the choice was made on, and not
  before it (a clock that went back, or another series, chooses afresh);
- the selection would be planned the same way: the same step, candidates, number of origins and window
  (a history that crossed a threshold, e.g. the week that lets weekly models in, chooses afresh);
- the choice was not the constant-history shortcut (a history that moved needs its backtest).
Once a spacing has passed, the next refit backtests again, so a choice is never more than one origin old.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from forecasting.anchoring import HorizonAnchor
from forecasting.durations import format_duration

if TYPE_CHECKING:  # the models and the backtest load statsmodels; a refit's caller only holds the choice
    from forecasting.backtest import BacktestReport
    from forecasting.intervals import IntervalCalibration, PeakCalibration
    from forecasting.models import ForecastModel
    from forecasting.selection import SelectionPlan

__all__ = ["ModelChoice", "plan_signature"]


def plan_signature(plan: SelectionPlan, step_seconds: float) -> tuple[object, ...]:
    """What makes two selection plans the same question: step, candidates, origins and window."""
    return (
        step_seconds,
        tuple(m.label for m in plan.candidates),
        plan.baseline.label,
        len(plan.origins),
        plan.backtest_horizon_steps,
        tuple(m.label for m in plan.day_ahead),
    )


@dataclass(frozen=True)
class ModelChoice:
    """What the backtest decided: the model, its intervals, the reason, the report (None: no backtest);
    `made_at_s` is the end of the history it was made on, `signature` the plan it answered."""

    model: ForecastModel
    calibration: IntervalCalibration
    reason: str
    report: BacktestReport | None
    peak: PeakCalibration | None = None
    anchors: Mapping[str, HorizonAnchor] | None = None
    made_at_s: float = float("nan")
    signature: tuple[object, ...] = ()
    constant: bool = False
    far: ForecastModel | None = None  # the day-ahead model (`forecasting.day_ahead`) when not `model`

    @property
    def label(self) -> str:
        """The model, or the first hour's and the day ahead's: 'holt_winters then day_median'."""
        return self.model.label if self.far is None else f"{self.model.label} then {self.far.label}"

    def anchor(self, label: str, step_seconds: float) -> HorizonAnchor:
        return (self.anchors or {}).get(label) or HorizonAnchor.none(step_seconds)

    def reusable(self, end_s: float, signature: tuple[object, ...], spacing_s: float) -> bool:
        """May a refit on a history ending at `end_s`, planned as `signature`, keep this choice?"""
        return not self.constant and signature == self.signature and not self.aged(end_s, spacing_s)

    def aged(self, end_s: float, spacing_s: float) -> bool:
        """Whether a refit on a history ending at `end_s` is too late (or too early) to keep this choice: a
        calibration spacing or more after it (or before it was made)."""
        return not 0.0 <= end_s - self.made_at_s < spacing_s

    def describe(self, end_s: float, spacing_s: float) -> str:
        """The reason as a fit on a history ending at `end_s` reports it: said to be kept when it is older."""
        age = end_s - self.made_at_s
        if not age >= 0.001:
            return self.reason
        kept = f"kept from the backtest {format_duration(age)} ago, re-chosen every {format_duration(spacing_s)}"
        return f"{self.reason} ({kept})"
