"""Each tier's demand forecast from its history in Prometheus: the one forecasting path of check, report and
serve (the edge: it reads through an `Observer`; the forecast itself is pure).

The three share `ForecastWindows`' defaults, so on the same history they plan on the same outlook.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from forecasting import ForecastError
from monitor.advice import DemandOutlook
from monitor.forecasts import TierForecast, forecast_tier, work_week
from monitor.memo import IdentityMemo
from monitor.observe.observer import DemandHistory, Observer
from monitor.plan.model import Plan
from monitor.sizing.workload import tier_workload

__all__ = [
    "DEFAULT_WINDOWS",
    "FittedOutlooks",
    "ForecastWindows",
    "fit_outlooks",
    "fit_tier",
    "plan_peak",
    "read_history",
]


@dataclass(frozen=True)
class ForecastWindows:
    """How much demand history a fit reads, at what resolution, and how far ahead it forecasts (seconds)."""

    history_seconds: float = 28 * 86_400.0
    step_seconds: float = 300.0
    horizon_seconds: float = 86_400.0


DEFAULT_WINDOWS = ForecastWindows()


@dataclass(frozen=True)
class FittedOutlooks:
    """Per tier: the history read, the forecast fitted on it, or why there is none."""

    histories: dict[str, DemandHistory] = field(default_factory=dict)
    forecasts: dict[str, TierForecast] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def outlooks(self) -> dict[str, DemandOutlook]:
        return {name: f.outlook for name, f in self.forecasts.items()}


def fit_tier(
    observer: Observer,
    plan: Plan,
    tier: str,
    now: float,
    windows: ForecastWindows = DEFAULT_WINDOWS,
    previous: TierForecast | None = None,
) -> TierForecast:
    """Read a tier's demand history ending at `now` and forecast it (a refit passes the tier's `previous`
    forecast: `forecast_tier`). Raises ForecastError (history that cannot be forecast) and whatever the
    observer raises (PrometheusUnreachable)."""
    history = read_history(observer, plan, tier, now, windows)
    return forecast_tier(history, now, windows.horizon_seconds, previous, work_week(plan), plan_peak(plan, tier))


def plan_peak(plan: Plan, tier: str) -> float:
    """The tier's model calls/s at the plan's peak (the sizing's demand): what a forecast without a daily cycle
    is held to (`monitor.forecasts.held_to_plan_peak`). Remembered per plan object: a replay refits every
    tier 1,344 times, and the workload's length bands cost more than the lookup."""
    return _PEAKS.get((plan,), (tier,), lambda: tier_workload(plan, plan.tier(tier)).peak_rps)


_PEAKS: IdentityMemo[float] = IdentityMemo(64)


def read_history(
    observer: Observer, plan: Plan, tier: str, now: float, windows: ForecastWindows = DEFAULT_WINDOWS
) -> DemandHistory:
    return observer.demand_history(plan, tier, now - windows.history_seconds, now, windows.step_seconds)


def fit_outlooks(
    observer: Observer, plan: Plan, now: float, windows: ForecastWindows = DEFAULT_WINDOWS
) -> FittedOutlooks:
    """Every tier's history and forecast; a tier whose history cannot be forecast has none, and says why in
    `errors`. Raises what the observer raises (PrometheusUnreachable)."""
    fitted = FittedOutlooks()
    for tier in plan.tiers:
        history = fitted.histories[tier.name] = read_history(observer, plan, tier.name, now, windows)
        try:
            fitted.forecasts[tier.name] = forecast_tier(
                history, now, windows.horizon_seconds, week=work_week(plan), plan_peak_rps=plan_peak(plan, tier.name)
            )
        except ForecastError as exc:
            fitted.errors[tier.name] = str(exc)
    return fitted
