"""The advisor service's configuration: a YAML file, then `PLANWATCH_*` environment variables, then CLI flags.

Later sources win: flags over the environment over the file over the defaults. Every key is known; an
unknown key in the file (or a typo in a nested one) is an error that names it, so a misspelt
`evaluation_interval` never silently runs with the default.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from monitor.advice import AdviceSettings
from monitor.outlooks import DEFAULT_WINDOWS, ForecastWindows
from monitor.plan import reader
from monitor.source import SourceSettings
from monitor.units import parse_duration, validate_promql_duration

__all__ = ["AdviceConfig", "ConfigError", "Settings", "load_settings", "parse_listen"]

ENV_PREFIX = "PLANWATCH_"


def _seconds(value: object) -> object:
    """A duration as the file writes it ('30s', '1h') or as the environment does ('45': seconds)."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return parse_duration(value)
    return value


Seconds = Annotated[float, BeforeValidator(_seconds), Field(gt=0)]
# A PromQL range: the same grammar in whole numbers; a bad one is reported under its own key.
PromqlRange = Annotated[str, AfterValidator(validate_promql_duration)]
# (config file, environment) for the Settings being built by `load_settings`; None outside it.
_LAYERS: ContextVar[tuple[Path | None, Mapping[str, str] | None] | None] = ContextVar(
    "planwatch_settings_layers", default=None
)
_LISTEN = re.compile(r"^(?P<host>\[[0-9a-fA-F:.]+\]|[^:\s]+):(?P<port>[0-9]{1,5})$")


class ConfigError(Exception):
    """A configuration that cannot be used: every problem, each with the key it is about."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AdviceConfig(_Strict):
    safety_margin: Seconds = Field(default=300.0, description="Scale-ups finish this long before they are needed.")
    scale_down_cooldown: Seconds | None = Field(
        default=None,
        description="Demand stays lower this long before a cut (default: the cold start plus the safety margin "
        "in business hours, a cold start outside them).",
    )
    gpu_failures_per_gpu_hour: float = Field(
        default=AdviceSettings.gpu_failures_per_gpu_hour,
        ge=0,
        lt=1,
        description="GPU failure rate for replicas.spare: auto (default: Llama 3's 2e-5 per GPU-hour).",
    )

    def to_advice_settings(self) -> AdviceSettings:
        return AdviceSettings(
            safety_margin_seconds=self.safety_margin,
            scale_down_cooldown_seconds=self.scale_down_cooldown,
            gpu_failures_per_gpu_hour=self.gpu_failures_per_gpu_hour,
        )


class Settings(BaseSettings):
    """Everything `planwatch serve` reads. Durations accept seconds or '60s', '1h', '28d'."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", frozen=True)

    plan: Path | None = Field(default=None, description="The capacity plan YAML file.")
    listen: str = Field(default="127.0.0.1:8080", description="host:port the API listens on.")
    prometheus: SourceSettings = Field(
        default=SourceSettings(), description="The Prometheus adapter's settings (monitor.source.SourceSettings)."
    )
    evaluation_interval: Seconds = Field(default=60.0, description="How often to collect and evaluate.")
    # 15 minutes: the advice reads the outlook's first minutes (a cold start and the margin ahead), whose
    # level is the one at the refit. A refit keeps its backtest choice for 6 h (forecasting.choice), so it
    # costs one model fit per tier; on the 14-day ServeGen replay hourly refits spent 2.4% more GPU-hours
    # for the same SLO minutes (the upper bound at the lead grew from 1.33x to 1.42x demand over the hour).
    forecast_interval: Seconds = Field(default=900.0, description="How often to refit the demand forecasts.")
    measurement_interval: Seconds = Field(
        default=3600.0, description="How often to record the plan's measurements (the heaviest range queries)."
    )
    forecast_horizon: Seconds = Field(
        default=DEFAULT_WINDOWS.horizon_seconds, description="How far ahead the forecast looks."
    )
    forecast_history: Seconds = Field(
        default=DEFAULT_WINDOWS.history_seconds, description="Demand history a refit reads."
    )
    forecast_step: Seconds = Field(
        default=DEFAULT_WINDOWS.step_seconds, description="Resolution of history and forecast."
    )
    observation_window: PromqlRange = Field(default="1h", description="PromQL range of the observations (1h, 30m).")
    long_window: PromqlRange = Field(default="7d", description="PromQL range of the peak and average rates.")
    recording_rules: bool = Field(
        default=True,
        description="Read the tier:* series of rules/recording.yml where they are fresh and reach back over a "
        "window (much cheaper on large fleets); false reads the raw series only.",
    )
    stale_after: Seconds | None = Field(
        default=None, description="Data older than this makes /readyz degraded; default 3 evaluation intervals."
    )
    state_db: Path = Field(
        default=Path(".planwatch/state.db"),  # a state directory of its own (git-ignored), not the working folder
        description="SQLite file (WAL) for the state; its folder is created if missing.",
    )
    api_token: SecretStr | None = Field(default=None, description="Bearer token for writes (and protected reads).")
    protect_reads: bool = Field(default=False, description="Reads need the token too.")
    advice: AdviceConfig = AdviceConfig()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Flags (what is passed in), then the environment, then the file: the layers `load_settings` asked for.

        Built without `load_settings` (no layers set), only what is passed in: nothing read from the process."""
        layers = _LAYERS.get()
        if layers is None:
            return (init_settings,)
        config, env = layers
        file = (_file_source(settings_cls, config),) if config else ()
        return (init_settings, _env_source(settings_cls, env), *file)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        parse_listen(self.listen)
        if self.protect_reads and self.api_token is None:
            raise ValueError("protect_reads needs an api_token (or PLANWATCH_API_TOKEN)")
        if self.forecast_history < 2 * self.forecast_step:
            raise ValueError("forecast_history must cover at least two forecast steps")
        return self

    @property
    def forecast_windows(self) -> ForecastWindows:
        """The history, step and horizon a refit reads (serve's refit job and the replay's planwatch)."""
        return ForecastWindows(self.forecast_history, self.forecast_step, self.forecast_horizon)

    @property
    def data_age_limit_seconds(self) -> float:
        return self.stale_after if self.stale_after is not None else 3 * self.evaluation_interval


def parse_listen(listen: str) -> tuple[str, int]:
    """'127.0.0.1:8080' -> ('127.0.0.1', 8080); '[::1]:8080' -> ('::1', 8080)."""
    match = _LISTEN.match(listen.strip())
    if not match or not 0 < int(match.group("port")) < 65536:
        raise ValueError(f"listen {listen!r} is not host:port (examples: 127.0.0.1:8080, [::1]:8080, 0.0.0.0:80)")
    return match.group("host").strip("[]"), int(match.group("port"))


def load_settings(
    config: Path | None = None, overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """File, then environment (`PLANWATCH_API_TOKEN`, `PLANWATCH_PROMETHEUS__URL` ...), then `overrides`.

    pydantic-settings layers them (its sources, nested keys merged); `env` replaces the process environment
    (tests pass `{}`). The file and environment reach `settings_customise_sources` through a context variable,
    the public hook having no other way to take them per call."""
    token = _LAYERS.set((config, env))
    try:
        return Settings(**dict(overrides or {}))
    except ValidationError as exc:
        raise ConfigError(_describe(exc, str(config) if config else "configuration")) from None
    finally:
        _LAYERS.reset(token)


def _file_source(settings_cls: type[BaseSettings], config: Path) -> InitSettingsSource:
    """The file as a source: what the plan's bounded reader made of it (not `yaml.safe_load`), served by the
    public source of given values, as pydantic-settings' own YAML source serves what it read. Read now: the file
    was asked for by name, so a missing one is an error ("cannot read"), not silently skipped."""
    return InitSettingsSource(settings_cls, init_kwargs=_read_file(Path(config).expanduser()))


def _read_file(path: Path) -> dict[str, Any]:
    """The plan's bounded YAML reader (no alias bombs, deep nesting, non-UTF-8 or non-finite numbers)."""
    try:
        data = reader.construct(*reader.compose(reader.decode(path.read_bytes())))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except reader.ReadProblem as exc:
        where = f" (line {exc.line})" if exc.line else ""
        raise ConfigError(f"{path}{where}: not valid YAML: {exc.message}") from None
    bad = next(reader.value_problems(data), None)
    if bad is not None:
        raise ConfigError(f"{path}: {bad[0]}: {bad[1]}")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of settings, not {type(data).__name__}")
    return data


def _env_source(settings_cls: type[BaseSettings], env: Mapping[str, str] | None) -> EnvSettingsSource:
    """pydantic-settings' own parsing of PLANWATCH_* (nested with __, JSON for mappings)."""
    source = EnvSettingsSource(settings_cls, case_sensitive=False, env_prefix=ENV_PREFIX, env_nested_delimiter="__")
    if env is not None:
        source.env_vars = {k.lower(): v for k, v in env.items()}
    return source


def _describe(exc: ValidationError, source: str) -> str:
    lines = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        message = "unknown key" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        lines.append(f"  - {key}: {message}")
    return f"{source}: {len(lines)} problem(s) in the configuration\n" + "\n".join(lines)
