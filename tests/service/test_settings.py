"""Configuration: file, then PLANWATCH_* environment, then flags; unknown keys are errors that name the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from monitor.service.settings import ConfigError, load_settings, parse_listen


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "planwatch.yaml"
    path.write_text(text)
    return path


def test_the_example_configuration_loads() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "planwatch.yaml"
    s = load_settings(example, env={})
    assert s.prometheus.url.startswith("http") and s.evaluation_interval == 60.0
    assert s.forecast_history == 28 * 86_400.0


@pytest.mark.parametrize(
    ("file", "env", "flags", "key", "expected"),
    [
        pytest.param("evaluation_interval: 30s\n", {}, {}, "evaluation_interval", 30.0, id="the file sets a duration"),
        pytest.param(
            "evaluation_interval: 30s\n", {"PLANWATCH_EVALUATION_INTERVAL": "45"}, {}, "evaluation_interval", 45.0,
            id="the environment overrides the file",
        ),
        pytest.param(
            "listen: 0.0.0.0:80\n", {"PLANWATCH_LISTEN": "127.0.0.1:81"}, {"listen": "127.0.0.1:82"}, "listen",
            "127.0.0.1:82", id="a flag overrides the environment and the file",
        ),
        pytest.param(
            "prometheus:\n  url: http://a:9090\n  timeout: 5\n", {"PLANWATCH_PROMETHEUS__URL": "http://b:9090"}, {},
            "prometheus", ("http://b:9090", 5.0), id="a nested variable overrides one key and keeps its siblings",
        ),
        pytest.param(
            "prometheus:\n  url: http://a:9090\n  timeout: 5\n", {"PLANWATCH_PROMETHEUS__TIMEOUT": "7"},
            {"prometheus": {"url": "http://c:9090"}}, "prometheus", ("http://c:9090", 7.0),
            id="a nested flag (serve --prometheus) overrides the url and keeps the environment's timeout",
        ),
        pytest.param(
            "", {"PLANWATCH_API_TOKEN": "from-env"}, {}, "api_token", "from-env",
            id="the API token can come from PLANWATCH_API_TOKEN",
        ),
        pytest.param(
            "advice:\n  scale_down_cooldown: 1h\n", {}, {}, "advice", (300.0, 3600.0),
            id="advice settings read durations",
        ),
    ],
)  # fmt: skip
def test_layering(
    tmp_path: Path, file: str, env: dict[str, str], flags: dict[str, Any], key: str, expected: object
) -> None:
    s = load_settings(_write(tmp_path, file), flags, env)
    value: object = getattr(s, key)
    if key == "prometheus":
        value = (s.prometheus.url, s.prometheus.timeout)
    elif key == "api_token":
        value = s.api_token.get_secret_value() if s.api_token else None
    elif key == "advice":
        value = (s.advice.safety_margin, s.advice.scale_down_cooldown)
    assert value == expected


@pytest.mark.parametrize(
    ("file", "env", "message"),
    [
        pytest.param("evaluation_intervall: 30s\n", {}, "evaluation_intervall: unknown key",
                     id="a misspelt top-level key is named"),
        pytest.param("prometheus:\n  urll: http://x\n", {}, "prometheus.urll: unknown key",
                     id="a misspelt nested key is named with its path"),
        pytest.param("evaluation_interval: soon\n", {}, "evaluation_interval:", id="a bad duration names its key"),
        pytest.param("protect_reads: true\n", {}, "protect_reads needs an api_token",
                     id="protected reads without a token are refused"),
        pytest.param("listen: localhost\n", {}, "is not host:port", id="a listen address without a port is refused"),
        pytest.param("- a\n- b\n", {}, "top level must be a mapping", id="a list is not a configuration"),
        pytest.param("a: [\n", {}, "not valid YAML", id="broken YAML says so"),
        pytest.param("", {"PLANWATCH_EVALUATION_INTERVAL": "-1"}, "evaluation_interval",
                     id="a bad environment value names its key"),
        pytest.param("prometheus:\n  url: prometheus:9090\n", {}, "prometheus.url", id="a URL needs its scheme"),
    ],
)  # fmt: skip
def test_problems_name_the_key(tmp_path: Path, file: str, env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        load_settings(_write(tmp_path, file), env=env)


def test_an_unreadable_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings(tmp_path / "missing.yaml", env={})


@pytest.mark.parametrize(
    ("listen", "expected"),
    [
        pytest.param("127.0.0.1:8080", ("127.0.0.1", 8080), id="IPv4 with a port"),
        pytest.param("[::1]:9000", ("::1", 9000), id="IPv6 in brackets"),
        pytest.param("localhost:80", ("localhost", 80), id="a host name"),
    ],
)
def test_parse_listen(listen: str, expected: tuple[str, int]) -> None:
    assert parse_listen(listen) == expected


def test_the_data_age_limit_defaults_to_three_evaluation_intervals() -> None:
    assert load_settings(overrides={"evaluation_interval": "20s"}, env={}).data_age_limit_seconds == 60.0
    assert load_settings(overrides={"stale_after": "5m"}, env={}).data_age_limit_seconds == 300.0
