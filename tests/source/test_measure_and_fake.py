"""Unknown is not zero (pure) and settings validation."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from monitor.observe import Measurement
from monitor.source import (
    InstantResult,
    Sample,
    SourceSettings,
    gate_down,
    gate_stale,
    measurement,
    measurements_by,
)

NOW = 1_790_000_000.0


def _result(*samples: tuple[dict[str, str], float, float]) -> InstantResult:
    return InstantResult("q", NOW, tuple(Sample(labels, value, ts) for labels, value, ts in samples))


@pytest.mark.parametrize(
    ("result", "max_age", "value", "reason"),
    [
        pytest.param(_result(({}, 3.0, NOW)), None, 3.0, "", id="one finite sample is the value"),
        pytest.param(_result(({}, 0.0, NOW)), None, 0.0, "", id="a real zero stays zero"),
        pytest.param(_result(), None, None, "no data: the query matched no series", id="no series is unknown"),
        pytest.param(_result(({}, math.nan, NOW)), None, None, "not a number (NaN): no observations in the window",
                     id="NaN (an empty histogram) is unknown"),
        pytest.param(_result(({}, math.inf, NOW)), None, None, "not a finite number (inf)",
                     id="an infinity (x/0) is unknown"),
        pytest.param(_result(({}, 3.0, NOW - 600)), 300.0, None, "stale: sample is 600s old (limit 300s)",
                     id="a sample older than the bound is stale"),
        pytest.param(_result(({}, 3.0, NOW - 200)), 300.0, 3.0, "", id="a sample within the bound is fine"),
        pytest.param(_result(({"model_name": "x"}, 1.0, NOW), ({"model_name": "y"}, 2.0, NOW)), None, None,
                     'ambiguous: 2 series ({model_name="x"}, {model_name="y"}); narrow the tier selector',
                     id="several series for a per-tier value are ambiguous"),
    ],
)  # fmt: skip
def test_measurement_makes_missing_values_explicit(
    result: InstantResult, max_age: float | None, value: float | None, reason: str
) -> None:
    m = measurement(result, window="5m", max_age=max_age)
    assert (m.value, m.reason, m.query, m.window) == (value, reason, "q", "5m")


def test_measurements_by_label_keep_each_tiers_own_verdict() -> None:
    got = measurements_by(_result(({"tier": "a"}, 1.0, NOW), ({"tier": "b"}, math.nan, NOW), ({}, 5.0, NOW)), "tier")
    assert {k: m.value for k, m in got.items()} == {"a": 1.0, "b": None}


@pytest.mark.parametrize(
    ("age", "max_age", "reason"),
    [
        pytest.param(Measurement.of(10.0), 60.0, "", id="a fresh tier keeps its value"),
        pytest.param(Measurement.of(90.0), 60.0, "stale: newest vLLM sample is 90s old (limit 60s)",
                     id="an old newest sample makes the value unknown"),
        pytest.param(Measurement.unknown("no data"), 60.0, "stale: no fresh vLLM sample (no data)",
                     id="no sample at all makes the value unknown"),
    ],
)  # fmt: skip
def test_gate_stale(age: Measurement, max_age: float, reason: str) -> None:
    out = gate_stale(Measurement.of(5.0, "q", "5m"), age, max_age)
    assert (out.reason, out.value) == (reason, None if reason else 5.0)


@pytest.mark.parametrize(
    ("up", "known"),
    [
        pytest.param(Measurement.of(0.0), False, id="no replica up: the value is unknown, not a zero rate"),
        pytest.param(Measurement.of(2.0), True, id="replicas up: the value stands"),
        pytest.param(Measurement.unknown("no data"), True, id="an unknown replica count does not erase the value"),
    ],
)
def test_gate_down(up: Measurement, known: bool) -> None:
    out = gate_down(Measurement.of(0.0, "rate", "5m"), up)
    assert out.known is known
    assert known or out.reason == "target down: no replica of the tier is up"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param({"url": "prometheus:9090"}, "should match pattern", id="a URL without scheme"),
        pytest.param({"bearer_token": "t", "username": "u", "password": "p"}, "not both",
                     id="bearer and basic auth together"),
        pytest.param({"username": "u"}, "go together", id="a user without a password"),
        pytest.param({"bearer_token": "t", "headers": {"Authorization": "x"}}, "conflict",
                     id="a bearer token and an Authorization header"),
        pytest.param({"timeout": 0}, "greater than 0", id="a zero timeout"),
        pytest.param({"tls": {"cert_file": "c.pem"}}, "go together", id="a client cert without its key"),
        pytest.param({"retries": 11}, "less than or equal", id="too many retries"),
    ],
)  # fmt: skip
def test_invalid_settings_are_refused(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        SourceSettings(**fields)


def test_settings_convert_from_any_object_with_the_same_names() -> None:
    legacy = SimpleNamespace(
        url="https://mimir.example/prometheus/", timeout=5.0, headers={"X-Scope-OrgID": "t"},
        bearer_token="tok", tls=SimpleNamespace(ca_file=None, cert_file=None, key_file=None, insecure_skip_verify=True),
        unrelated="ignored",
    )  # fmt: skip
    ours = SourceSettings.from_any(legacy)
    assert ours.url == "https://mimir.example/prometheus"
    assert (ours.timeout, ours.headers, ours.tls.verify) == (5.0, {"X-Scope-OrgID": "t"}, False)
    assert ours.bearer_token is not None and ours.bearer_token.get_secret_value() == "tok"
    assert SourceSettings.from_any({"url": "http://x:9090"}).retries == 2
    assert SourceSettings.from_any(ours) is ours
