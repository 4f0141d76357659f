"""Typed errors of the forecasting package, each carrying the context needed to act on it."""

from __future__ import annotations

__all__ = ["ForecastError", "ForecastInputError", "ForecastModelError"]


class ForecastError(Exception):
    """Base class: anything the forecasting package refuses or fails to do."""


class ForecastInputError(ForecastError, ValueError):
    """The input series or a parameter cannot be used (too short, bad step, bad duration...).

    `source` names where the bad input came from (a file, a tier) when the caller knows it.
    """

    def __init__(self, message: str, *, source: str | None = None) -> None:
        self.source = source
        super().__init__(f"{source}: {message}" if source else message)


class ForecastModelError(ForecastError, RuntimeError):
    """A model failed to fit or forecast (numerical failure), naming the model."""

    def __init__(self, model: str, message: str) -> None:
        self.model = model
        super().__init__(f"{model}: {message}")
