"""Command-line options that reach Prometheus (or any compatible API): shared by check, forecast, report."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

if TYPE_CHECKING:
    from monitor.source import HttpPrometheusSource

__all__ = [
    "BearerFile",
    "Headers",
    "Insecure",
    "PrometheusURL",
    "Timeout",
    "check_prometheus_url",
    "make_source",
    "parse_time",
]

PrometheusURL = Annotated[str, typer.Option("--prometheus", help="Prometheus-compatible query API base URL.")]
Headers = Annotated[
    list[str] | None, typer.Option("--header", help="Extra header 'Name: value' (e.g. X-Scope-OrgID), repeatable.")
]
BearerFile = Annotated[Path | None, typer.Option("--bearer-token-file", help="File holding a bearer token.")]
Insecure = Annotated[bool, typer.Option("--insecure", help="Do not verify the server's TLS certificate.")]
Timeout = Annotated[float, typer.Option("--timeout", help="Seconds per HTTP request.")]


def make_source(url: str, headers: list[str] | None, bearer_file: Path | None, insecure: bool,
                timeout: float) -> HttpPrometheusSource:  # fmt: skip
    # The adapter (requests, and the plan's stack behind monitor.cli.common) loads when a command runs, not when
    # its options are declared: `planwatch forecast --help` imports this module and nothing heavy.
    from monitor.source import HttpPrometheusSource, SourceSettings, TLSOptions

    check_prometheus_url(url)
    parsed: dict[str, str] = {}
    for h in headers or []:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            fail(f"--header {h!r} is not of the form 'Name: value'")
        parsed[name.strip()] = value.strip()
    try:
        settings = SourceSettings(url=url, headers=parsed, bearer_token_file=bearer_file, timeout=timeout,
                                  tls=TLSOptions(insecure_skip_verify=insecure))  # fmt: skip
    except ValueError as exc:
        errors = getattr(exc, "errors", None)
        detail = "; ".join(str(e["msg"]) for e in errors()) if callable(errors) else str(exc)
        fail(f"--prometheus {url!r}: {detail}")
    return HttpPrometheusSource(settings)


def fail(message: str) -> NoReturn:
    """`monitor.cli.common.fail` (exit status 2 with the message), imported when an option is refused."""
    from monitor.cli.common import fail as refuse

    refuse(message)


def check_prometheus_url(url: str) -> None:
    """The mistakes people make with a Prometheus URL, each said with what to write instead."""
    if "://" not in url:
        fail(f"--prometheus {url!r} has no scheme: write http://{url} (or https://{url})")
    scheme, _, rest = url.partition("://")
    if scheme not in ("http", "https") or not rest.strip("/"):
        fail(f"--prometheus {url!r}: give an http:// or https:// URL with a host, e.g. http://127.0.0.1:9090")
    trimmed = url.rstrip("/")
    for suffix in ("/api/v1/query", "/api/v1"):
        if trimmed.endswith(suffix):
            fail(f"--prometheus {url!r}: give the base URL without {suffix}: {trimmed.removesuffix(suffix)}")


def parse_time(text: str | None) -> float | None:
    """ISO 8601 (a naive time is UTC) or Unix seconds; None means now."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        fail(f"--at {text!r} is neither ISO 8601 (2026-12-02T09:00:00Z) nor Unix seconds")
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
