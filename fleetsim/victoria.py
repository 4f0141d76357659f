"""VictoriaMetrics single-node as a second query backend: it scrapes like Prometheus (the same scrape_configs)
and answers planwatch through its Prometheus-compatible /api/v1 query API.

The process flags make it behave for tests and demos as a fresh Prometheus would: points are visible as soon
as they are written (`-search.latencyOffset=0s`; the default hides the last 30 s), nothing is answered from
the response cache (`-search.disableCache`), history of any age is kept (`-retentionPeriod=100y`) and file_sd
files are re-read every second. Its query semantics stay its own (README, "VictoriaMetrics").
"""

from __future__ import annotations

import math
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import yaml

from fleetsim.promstack import ManagedProcess, PrometheusConfig, _start_on_free_port, _workdir, find_binary

__all__ = ["VictoriaMetricsProcess", "prometheus_text_ms"]


class VictoriaMetricsProcess(ManagedProcess):
    """A running victoria-metrics; `url` is its Prometheus-compatible API base."""

    kind = "victoria-metrics"

    def __init__(self, *args: Any, config: PrometheusConfig, config_path: Path, data_dir: Path) -> None:
        super().__init__(*args)
        self.config = config
        self.config_path = config_path
        self.data_dir = data_dir

    @classmethod
    def start(
        cls, config: PrometheusConfig | None = None, *, workdir: Path | None = None, timeout: float = 30.0
    ) -> VictoriaMetricsProcess:
        """Write the scrape config (rules and alerting are Prometheus's, not VictoriaMetrics' own), start on a
        free port and wait for `/-/ready`."""
        config = config or PrometheusConfig()
        binary = find_binary("victoria-metrics")
        work, owns = _workdir(workdir, "victoria-metrics-")
        config_path = work / "scrape.yml"
        scrape = {"global": {"scrape_interval": config.scrape_interval, "scrape_timeout": config.scrape_timeout or
                             config.scrape_interval}, "scrape_configs": [j.render() for j in config.jobs]}  # fmt: skip
        config_path.write_text(yaml.safe_dump(scrape, sort_keys=False))
        data_dir = Path(config.data_dir) if config.data_dir is not None else work / "data"

        def argv(port: int) -> list[str]:
            return [
                binary,
                f"-storageDataPath={data_dir}",
                f"-httpListenAddr=127.0.0.1:{port}",
                f"-promscrape.config={config_path}",
                "-promscrape.config.strictParse=false",
                "-promscrape.fileSDCheckInterval=1s",
                "-retentionPeriod=100y",
                "-search.latencyOffset=0s",
                "-search.disableCache",
                "-loggerLevel=WARN",
                *config.extra_args,
            ]

        popen, port, log_path = _start_on_free_port(argv, work, "victoria-metrics", timeout, owns)
        return cls(popen, port, work, log_path, owns, config=config, config_path=config_path, data_dir=data_dir)

    def import_openmetrics(self, text: str | Iterable[str], timeout: float = 60.0) -> None:
        """Write a history (OpenMetrics with timestamps in seconds, as fleetsim.tsdb and the test harness write
        it) through /api/v1/import/prometheus, then flush it so the next query sees it."""
        chunks = [text] if isinstance(text, str) else text
        body = "".join(prometheus_text_ms(chunks)).encode()
        request = urllib.request.Request(f"{self.url}/api/v1/import/prometheus", data=body, method="POST")
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
        with urllib.request.urlopen(f"{self.url}/internal/force_flush", timeout=timeout) as response:
            response.read()


def prometheus_text_ms(chunks: Iterable[str]) -> Iterator[str]:
    """Sample lines of OpenMetrics text with the timestamp in milliseconds (the text format's unit); comment
    and `# EOF` lines are dropped. A label value may hold spaces, so value and timestamp are split from the end."""
    for chunk in chunks:
        for line in chunk.splitlines():
            if not line or line.startswith("#"):
                continue
            head, value, stamp = line.rsplit(" ", 2)
            if math.isnan(float(value)):  # staleness markers and NaN samples are not imported
                continue
            yield f"{head} {value} {round(float(stamp) * 1000)}\n"
