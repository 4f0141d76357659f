"""Builders for the backfill tests: small plans, specs without the CLI, and text parsing."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from fleetsim.backfill_run import BackfillSpec, history_text
from fleetsim.metrics import Generation
from fleetsim.scenarios import Scenario
from monitor.plan.load import parse_plan
from monitor.plan.model import Plan
from tests.fleetsim.helpers import one_tier_plan_data

WEDNESDAY_NOON_UTC = 1_715_169_600.0  # 2024-05-08 12:00 UTC; stamps are multiples of 15 s and 60 s


def diurnal_plan_data(
    peak: float = 4.0, average: float = 1.0, replicas: int = 1, max_model_len: int = 131072, timezone: str = "UTC"
) -> dict[str, Any]:
    """The fleetsim tests' one-tier plan with a business-hours profile."""
    arrival = {"peak_rps": peak, "average_rps": average, "peak_hours_per_day": 6}
    hours = {"timezone": timezone, "start": "08:00", "end": "18:00"}
    return one_tier_plan_data("diurnal", arrival, hours, replicas, 8, max_model_len=max_model_len)


def diurnal_plan(**kw: Any) -> Plan:
    return parse_plan(yaml.safe_dump(diurnal_plan_data(**kw)), source="diurnal")


def write_plan(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


def spec_for(
    plan: Plan,
    start: float,
    end: float,
    step: int = 15,
    scenarios: Sequence[Scenario] = (),
    seed: int = 1,
    generation: Generation = "v1",
    instance: str = "127.0.0.1:9400",
    data_dir: Path | None = None,
    families: tuple[str, ...] = (),
) -> BackfillSpec:
    return BackfillSpec(
        plan,
        tuple(scenarios),
        start,
        end,
        step,
        seed,
        generation,
        data_dir or Path("/nonexistent"),
        instance,
        21600,
        families=families,
    )


def series_of_text(text: str) -> set[frozenset[tuple[str, str]]]:
    """Every series (name and labels) in OpenMetrics or Prometheus text, named as on the wire (as Prometheus
    stores it: the metadata lines are dropped so the parser does not add `_total` to typed counters)."""
    samples = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    out: set[frozenset[tuple[str, str]]] = set()
    for family in text_string_to_metric_families(samples + "\n"):
        for sample in family.samples:
            out.add(frozenset({("__name__", sample.name), *sample.labels.items()}))
    return out


def backfill_text(spec: BackfillSpec) -> str:
    buffer = io.BytesIO()
    history_text(spec, buffer)
    return buffer.getvalue().decode()
