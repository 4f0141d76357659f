"""Observations: what production did, per tier and window, as typed values where unknown is explicit."""

from monitor.observe.model import Measurement, TierObservation

__all__ = ["Measurement", "TierObservation"]
