"""The replay's policy names, in a module of their own so `planwatch replay --help` offers them without
importing the replay (its physics, matplotlib and statsmodels cost seconds)."""

__all__ = ["POLICIES"]

POLICIES = ("static", "reactive", "predictive", "planwatch", "oracle")
