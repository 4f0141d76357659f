"""How to reach a Prometheus-compatible query API (Prometheus, VictoriaMetrics, Thanos Query, Mimir).

The service embeds this model as its `prometheus:` section (monitor.service.settings). `from_any` also takes
a mapping or any object with the same attribute names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

__all__ = ["SourceSettings", "TLSOptions"]


class TLSOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    ca_file: Path | None = Field(default=None, description="CA bundle that signs the server certificate.")
    cert_file: Path | None = Field(default=None, description="Client certificate (mutual TLS).")
    key_file: Path | None = Field(default=None, description="Client key (mutual TLS).")
    insecure_skip_verify: bool = Field(default=False, description="Do not verify the server certificate.")

    @model_validator(mode="after")
    def _pair(self) -> Self:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")
        return self

    @property
    def verify(self) -> bool | str:
        """What requests wants: False, True, or the CA bundle path."""
        if self.insecure_skip_verify:
            return False
        return str(self.ca_file) if self.ca_file is not None else True


class SourceSettings(BaseModel):
    """Connection settings. Extra headers carry tenancy (`X-Scope-OrgID` for Mimir/Cortex)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = Field(default="http://127.0.0.1:9090", pattern=r"^https?://", description="Base URL of the API.")
    timeout: float = Field(default=10.0, gt=0, description="Seconds per HTTP request (connect and read).")
    retries: int = Field(default=2, ge=0, le=10, description="Retries on connection errors, 429 and 502-504.")
    retry_backoff: float = Field(default=0.5, ge=0, description="Backoff factor: sleeps 0, 2b, 4b ... seconds.")
    headers: dict[str, str] = Field(default_factory=dict, description="Sent with every request.")
    bearer_token: SecretStr | None = None
    bearer_token_file: Path | None = Field(default=None, description="Re-read on every request (rotating tokens).")
    username: str | None = Field(default=None, description="Basic auth user.")
    password: SecretStr | None = Field(default=None, description="Basic auth password.")
    tls: TLSOptions = TLSOptions()
    method: Literal["GET", "POST"] = Field(default="GET", description="POST for very long queries.")

    @field_validator("url")
    @classmethod
    def _strip(cls, url: str) -> str:
        return url.rstrip("/")

    @model_validator(mode="after")
    def _one_auth(self) -> Self:
        bearer = self.bearer_token is not None or self.bearer_token_file is not None
        if bearer and self.username is not None:
            raise ValueError("set a bearer token or username/password, not both")
        if self.bearer_token is not None and self.bearer_token_file is not None:
            raise ValueError("set bearer_token or bearer_token_file, not both")
        if (self.username is None) != (self.password is None):
            raise ValueError("username and password go together")
        if bearer and any(k.lower() == "authorization" for k in self.headers):
            raise ValueError("an Authorization header and a bearer token conflict")
        return self

    @classmethod
    def from_any(cls, settings: Any) -> SourceSettings:
        """From this class, a mapping, or any object with the same attribute names: fields it lacks keep
        their defaults, attributes we do not know are ignored."""
        if isinstance(settings, cls):
            return settings
        if isinstance(settings, dict):
            return cls.model_validate(settings)
        names = [n for n in cls.model_fields if hasattr(settings, n)]
        values = {n: getattr(settings, n) for n in names}
        if "tls" in values and not isinstance(values["tls"], TLSOptions):
            values["tls"] = TLSOptions.model_validate(values["tls"], from_attributes=True)
        return cls.model_validate(values)
