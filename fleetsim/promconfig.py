"""What the generated prometheus.yml and alertmanager.yml hold (`fleetsim.promstack` starts the processes).

PrometheusConfig(jobs=(ScrapeJob("vllm", targets=("127.0.0.1:8000",)),)).render()  # the YAML text
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["RESTORE_VLLM_COLONS", "AlertmanagerConfig", "PrometheusConfig", "ScrapeJob"]

# prometheus_client >= 0.23.0 (client_python 831ed02, "UTF-8 Content Negotiation") answers an OpenMetrics 1.0
# scrape that names no `escaping` (Prometheus 2.x's default Accept header) with colons turned into underscores
# on sample lines only (`# TYPE` keeps them): `vllm:num_requests_running` arrives as `vllm_num_requests_running`.
# Text-format scrapes (curl, Prometheus 3, which asks for escaping=allow-utf-8) keep them. Ray Serve exports
# vLLM's metrics as `ray_vllm_*` (vLLM sanitises names for Ray) or `ray_vllm:*` (before that). One rule restores
# the names every dashboard and the planwatch catalog use; it is a no-op on names that are already right.
RESTORE_VLLM_COLONS: Mapping[str, Any] = {
    "source_labels": ["__name__"],
    "regex": "(?:ray_)?vllm[_:](.+)",
    "target_label": "__name__",
    "replacement": "vllm:$1",
}


@dataclass(frozen=True)
class ScrapeJob:
    """One scrape job: static targets and/or file_sd files (fleetsim writes the latter)."""

    name: str
    targets: Sequence[str] = ()
    file_sd: Sequence[Path] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    scrape_interval: str | None = None
    metrics_path: str = "/metrics"
    honor_labels: bool = False
    file_sd_refresh: str = "1s"
    metric_relabel_configs: Sequence[Mapping[str, Any]] = ()

    def render(self) -> dict[str, Any]:
        job: dict[str, Any] = {"job_name": self.name, "metrics_path": self.metrics_path}
        if self.scrape_interval is not None:
            job["scrape_interval"] = self.scrape_interval
        if self.honor_labels:
            job["honor_labels"] = True
        if self.targets:
            static: dict[str, Any] = {"targets": list(self.targets)}
            if self.labels:
                static["labels"] = dict(self.labels)
            job["static_configs"] = [static]
        if self.file_sd:
            job["file_sd_configs"] = [
                {"files": [str(p) for p in self.file_sd], "refresh_interval": self.file_sd_refresh}
            ]
        if self.metric_relabel_configs:
            job["metric_relabel_configs"] = [dict(r) for r in self.metric_relabel_configs]
        return job


@dataclass(frozen=True)
class PrometheusConfig:
    """What the generated prometheus.yml holds, plus the storage flags of the process.

    `data_dir=None` means a fresh directory inside the work directory; pass a directory pre-filled by
    `fleetsim backfill` or `fleetsim.text_blocks.write_text_blocks` to serve a backfilled history.
    """

    jobs: Sequence[ScrapeJob] = ()
    rule_files: Sequence[Path] = ()
    alertmanagers: Sequence[str] = ()
    scrape_interval: str = "1s"
    evaluation_interval: str = "1s"
    scrape_timeout: str | None = None
    external_labels: Mapping[str, str] = field(default_factory=dict)
    data_dir: Path | None = None
    retention: str = "60d"
    extra_args: Sequence[str] = ()
    query_log_file: Path | None = None  # every query Prometheus runs, one JSON line each

    def render(self) -> str:
        timeout = self.scrape_timeout or self.scrape_interval
        doc: dict[str, Any] = {
            "global": {
                "scrape_interval": self.scrape_interval,
                "scrape_timeout": timeout,
                "evaluation_interval": self.evaluation_interval,
            }
        }
        if self.external_labels:
            doc["global"]["external_labels"] = dict(self.external_labels)
        if self.query_log_file is not None:
            doc["global"]["query_log_file"] = str(Path(self.query_log_file).resolve())
        if self.rule_files:
            doc["rule_files"] = [str(Path(p).resolve()) for p in self.rule_files]
        if self.alertmanagers:
            doc["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": list(self.alertmanagers)}]}]}
        doc["scrape_configs"] = [job.render() for job in self.jobs]
        return yaml.safe_dump(doc, sort_keys=False)


@dataclass(frozen=True)
class AlertmanagerConfig:
    """A minimal Alertmanager: one route to a webhook receiver (or to nowhere), short group waits for tests."""

    webhook_urls: Sequence[str] = ()
    group_wait: str = "1s"
    group_interval: str = "1s"
    repeat_interval: str = "1h"
    raw_yaml: str | None = None

    def render(self) -> str:
        if self.raw_yaml is not None:
            return self.raw_yaml
        receiver: dict[str, Any] = {"name": "default"}
        if self.webhook_urls:
            receiver["webhook_configs"] = [{"url": u, "send_resolved": True} for u in self.webhook_urls]
        route = {
            "receiver": "default",
            "group_by": ["alertname"],
            "group_wait": self.group_wait,
            "group_interval": self.group_interval,
            "repeat_interval": self.repeat_interval,
        }
        return yaml.safe_dump({"route": route, "receivers": [receiver]}, sort_keys=False)
