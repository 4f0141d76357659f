"""Scale advice (pure): replicas now, over the forecast, the ramp schedule, hysteresis, floors and caps."""

from monitor.advice.fleet import advise_fleet
from monitor.advice.model import (
    Action,
    AdviceSettings,
    AdviceState,
    DemandOutlook,
    FleetAdvice,
    Recommendation,
    ScaleStep,
)
from monitor.advice.recommend import advise_tier

__all__ = [
    "Action",
    "AdviceSettings",
    "AdviceState",
    "DemandOutlook",
    "FleetAdvice",
    "Recommendation",
    "ScaleStep",
    "advise_fleet",
    "advise_tier",
]
