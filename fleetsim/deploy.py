"""The stack's shared Prometheus configuration (deploy/prometheus/prometheus.yml), made runnable on loopback.

docker-compose.yml mounts the file as it is; the local demo and the tests start a real Prometheus from the
same file with its relative paths and service names swapped for local ones, so all three scrape and alert
the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from fleetsim.promstack import PrometheusConfig

__all__ = ["PROMETHEUS_CONFIG", "RawPrometheusConfig", "localized_prometheus_config"]

PROMETHEUS_CONFIG = Path(__file__).resolve().parents[1] / "deploy" / "prometheus" / "prometheus.yml"


@dataclass(frozen=True)
class RawPrometheusConfig(PrometheusConfig):
    """A prometheus.yml given as text (the repository's own), with promstack's process handling."""

    text: str = ""

    def render(self) -> str:
        return self.text


def localized_prometheus_config(
    mounts: Mapping[str, Path], addresses: Mapping[str, str], interval: str | None = None
) -> str:
    """The shared config for processes on this machine: a relative path's first part is looked up in
    `mounts` (`rules` -> the repository's rules/), static targets in `addresses` (`planwatch:8080` ->
    `127.0.0.1:PORT`); Alertmanagers not in `addresses` are left out. `interval` overrides the scrape and
    evaluation intervals (tests use 1s)."""
    doc: dict[str, Any] = yaml.safe_load(PROMETHEUS_CONFIG.read_text())

    def local(path: str) -> str:
        first, *rest = PurePosixPath(path).parts
        return str(mounts[first].joinpath(*rest))

    def known(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
        kept = [{**g, "targets": [addresses[t] for t in g["targets"] if t in addresses]} for g in groups]
        return [g for g in kept if g["targets"]]

    if interval is not None:
        doc["global"] |= {"scrape_interval": interval, "evaluation_interval": interval}
    doc["rule_files"] = [local(p) for p in doc.get("rule_files", [])]
    managers = [{**m, "static_configs": known(m["static_configs"])} for m in doc["alerting"]["alertmanagers"]]
    doc["alerting"]["alertmanagers"] = [m for m in managers if m["static_configs"]]
    for job in doc["scrape_configs"]:
        for sd in job.get("file_sd_configs", []):
            sd["files"] = [local(f) for f in sd["files"]]
        for group in job.get("static_configs", []):
            group["targets"] = [addresses[t] for t in group["targets"]]  # a scrape target must be given
    return yaml.safe_dump(doc, sort_keys=False)
