"""The plan's building blocks: its strict base model, the units plan files may write, and the bounds that refuse
a typo or a hostile file at load (shared by every section of `monitor.plan.model`)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from monitor.units import parse_bytes, parse_duration

__all__ = [
    "MAX_LABEL_VALUE",
    "MAX_RPS",
    "MAX_TOKENS",
    "Bytes",
    "Count",
    "NonNegativeSeconds",
    "Seconds",
    "Strict",
    "parse_count",
    "parse_tokens",
]

# Bounds on plan numbers and labels: far past any real fleet, so a typo or a hostile file is refused at load
# instead of becoming a 300-digit GPU count or a query too long for Prometheus to take.
MAX_RPS = 1e7
MAX_TOKENS = 1e8
MAX_LABEL_VALUE = 1024

Seconds = Annotated[float, BeforeValidator(parse_duration), Field(gt=0)]
NonNegativeSeconds = Annotated[float, BeforeValidator(parse_duration), Field(ge=0)]
Bytes = Annotated[float, BeforeValidator(parse_bytes), Field(ge=0)]

_COUNT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([KMBT]?)\s*$", re.IGNORECASE)
_SCALE = {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}


def _scaled(value: object, what: str, examples: str) -> object:
    """A number, or a string such as '70B' or '1.5M' read with its K/M/B/T suffix."""
    if isinstance(value, str):
        match = _COUNT.match(value)
        if not match:
            raise ValueError(f"{value!r} is not a {what} (examples: {examples})")
        return float(match.group(1)) * _SCALE[match.group(2).upper()]
    return value


def parse_count(value: object) -> object:
    """'70B' -> 70e9, '8B' -> 8e9: parameter counts as model cards write them."""
    return _scaled(value, "parameter count", "70B, 8B, 70e9")


def parse_tokens(value: object) -> object:
    """'200M' -> 200e6: token volumes as people write them."""
    return _scaled(value, "token count", "200M, 1.5B, 42000")


Count = Annotated[float, BeforeValidator(parse_count), Field(gt=0)]


class Strict(BaseModel):
    """Every plan section: unknown keys rejected, values frozen, aliases accepted, no NaN or infinity."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False)
