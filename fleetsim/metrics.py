"""The metric catalog fleetsim emits, as data, and the per-replica vLLM metric state.

One import for every name, type, label and bucket (reference: /work/shared/reference/vllm-dcgm-metrics.md,
"§" below). Both the live exposition (fleetsim.exposition) and the history backfill (fleetsim.backfill)
read these definitions, so a series looks the same whether it was scraped live or backfilled. The vLLM
families and their generations are defined here; vLLM's bucket lists (fleetsim.vllm_buckets) and the
dcgm-exporter, kube-state-metrics and gateway families (fleetsim.exporter_families) live in their own modules
and are re-exported from this one.

Generations (§1.6, §1.7, §5), each a real era of vLLM's /metrics:
  "v1"      vLLM V1 at HEAD: labels {model_name, engine}; kv_cache_usage_perc, prefix_cache_*,
            inter_token_latency_seconds, request_time_per_output_token_seconds, finished_reason incl.
            error and repetition.
  "legacy"  the older generation (V1 0.8-0.10 names, V0-style labels {model_name} only):
            gpu_cache_usage_perc, gpu_prefix_cache_*, time_per_output_token_seconds; families added after
            0.10 are absent; finished_reason is stop|length|abort (an error is counted as abort).
  "v0"      the V0 engine: labels {model_name} only; no prefix-cache counters, only the
            gpu_prefix_cache_hit_rate gauge (the hit rate since the engine started); legacy names otherwise;
            the bucket sets before #15202 / #17033 (TTFT to 10 s, TPOT to 2.5 s, latencies to 60 s,
            iteration tokens at the CUDA-graph capture sizes).
  "overlap" V1 0.9.2-0.11: labels {model_name, engine}, and one target serves the old and the new names of
            KV usage, prefix cache and ITL side by side (same values); families added after 0.11 are absent.

`VllmMetrics` stores values under *canonical keys*: the V1 name as vLLM declares it (counters without
`_total`, e.g. "vllm:prompt_tokens"; the iteration histogram is declared "vllm:iteration_tokens_total").
Histograms keep per-bucket (non-cumulative) counts internally; `to_state()` gives cumulative `le` counts as
exposed (last = +Inf), which is the resume-state format (fleetsim.state).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Any, Literal

from fleetsim.exporter_families import DCGM_FIELDS, GATEWAY_FAMILIES, KSM_FAMILIES, DcgmField, Kind

# Explicit re-exports of names public here before the split but never in __all__ (exposition uses DCGM_LABELS).
from fleetsim.exporter_families import DCGM_LABELS as DCGM_LABELS
from fleetsim.vllm_buckets import (
    ITERATION_TOKEN_BUCKETS,
    LATENCY_BUCKETS,
    PARAMS_N_BUCKETS,
    TPOT_BUCKETS,
    TTFT_BUCKETS,
    V0_BUCKETS,
    build_1_2_5_buckets,
)
from fleetsim.vllm_buckets import OLD_ITERATION_TOKEN_BUCKETS as OLD_ITERATION_TOKEN_BUCKETS
from fleetsim.vllm_buckets import OLD_LATENCY_BUCKETS as OLD_LATENCY_BUCKETS
from fleetsim.vllm_buckets import OLD_TPOT_BUCKETS as OLD_TPOT_BUCKETS
from fleetsim.vllm_buckets import OLD_TTFT_BUCKETS as OLD_TTFT_BUCKETS

__all__ = [
    "DCGM_FIELDS",
    "FINISHED_REASONS",
    "GATEWAY_FAMILIES",
    "GENERATIONS",
    "ITERATION_TOKEN_BUCKETS",
    "KSM_FAMILIES",
    "LATENCY_BUCKETS",
    "TPOT_BUCKETS",
    "TTFT_BUCKETS",
    "V0_HIT_RATE",
    "VLLM_FAMILIES",
    "DcgmField",
    "Family",
    "Generation",
    "Kind",
    "VllmMetrics",
    "build_1_2_5_buckets",
    "families_for",
    "finished_reasons",
]

Generation = Literal["v1", "legacy", "v0", "overlap"]
GENERATIONS: tuple[Generation, ...] = ("v1", "legacy", "v0", "overlap")
# Oldest first: a family `added` in one generation is exposed by it and every later one.
_ERAS: tuple[Generation, ...] = ("v0", "legacy", "overlap", "v1")
V0_HIT_RATE = "vllm:gpu_prefix_cache_hit_rate"

FINISHED_REASONS = ("stop", "length", "abort", "error", "repetition")
_LEGACY_FINISHED_REASONS = ("stop", "length", "abort")


def finished_reasons(generation: Generation) -> tuple[str, ...]:
    """All finished_reason values pre-created at 0 (§1.4, §5.8): `error` came in Dec 2025, after 0.11."""
    return FINISHED_REASONS if generation == "v1" else _LEGACY_FINISHED_REASONS


@dataclass(frozen=True)
class Family:
    """One vLLM metric family. `buckets == "tokens"` means build_1_2_5_buckets(max_model_len)."""

    key: str
    kind: Kind
    help: str
    label: str | None = None
    label_values: tuple[str, ...] = ()
    buckets: tuple[float, ...] | Literal["tokens"] = ()
    legacy_key: str | None = None  # name in the legacy generation when it differs
    in_legacy: bool = True
    added: Generation = "v0"  # the oldest generation that exposes it (`in_legacy=False` means "overlap" or later)

    def name(self, generation: Generation) -> str:
        """The family's (first) name on the wire (counters gain `_total`)."""
        return self.names(generation)[0]

    def names(self, generation: Generation) -> tuple[str, ...]:
        """Every name the family has on the wire in `generation`: two where 0.9.2-0.11 served both."""
        old = self.legacy_key or self.key
        bases = {"v1": (self.key,), "overlap": tuple(dict.fromkeys((self.key, old)))}.get(generation, (old,))
        return tuple(f"{b}_total" if self.kind == "counter" else b for b in bases)

    def exposed_in(self, generation: Generation) -> bool:
        if self.key == V0_HIT_RATE:
            return generation == "v0"
        # `in_legacy=False` families came after 0.10: in 0.11 where `added` says so, otherwise after it.
        added = self.added if self.in_legacy or self.added != "v0" else "v1"
        return _ERAS.index(generation) >= _ERAS.index(added)

    def values_for(self, generation: Generation) -> tuple[str, ...]:
        if self.label == "finished_reason":
            return finished_reasons(generation)
        return self.label_values

    def bucket_bounds(self, max_model_len: int, generation: Generation = "v1") -> tuple[float, ...]:
        if self.buckets == "tokens":
            return build_1_2_5_buckets(max_model_len)
        return V0_BUCKETS.get(self.buckets, self.buckets) if generation == "v0" else self.buckets


def _h(key: str, help_text: str, buckets: tuple[float, ...] | Literal["tokens"], **kw: Any) -> Family:
    return Family(key, "histogram", help_text, buckets=buckets, **kw)


# §1.2: V1 core metrics, in the order loggers.py declares them.
VLLM_FAMILIES: tuple[Family, ...] = (
    Family("vllm:num_requests_running", "gauge", "Number of requests in model execution batches."),
    Family("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed."),
    Family(
        "vllm:num_requests_waiting_by_reason",
        "gauge",
        "Number of requests waiting, by reason.",
        label="reason",
        label_values=("capacity", "deferred"),
        in_legacy=False,
    ),
    Family(
        "vllm:kv_cache_usage_perc",
        "gauge",
        "KV-cache usage. 1 means 100 percent usage.",
        legacy_key="vllm:gpu_cache_usage_perc",
    ),
    Family(
        "vllm:prefix_cache_queries",
        "counter",
        "Prefix cache queries, in terms of number of queried tokens.",
        legacy_key="vllm:gpu_prefix_cache_queries",
        added="legacy",
    ),
    Family(
        "vllm:prefix_cache_hits",
        "counter",
        "Prefix cache hits, in terms of number of cached tokens.",
        legacy_key="vllm:gpu_prefix_cache_hits",
        added="legacy",
    ),
    Family(V0_HIT_RATE, "gauge", "GPU prefix cache block hit rate."),
    Family("vllm:num_preemptions", "counter", "Cumulative number of preemption from the engine."),
    Family("vllm:prompt_tokens", "counter", "Number of prefill tokens processed."),
    Family(
        "vllm:prompt_tokens_by_source",
        "counter",
        "Number of prompt tokens by source.",
        label="source",
        label_values=("local_compute", "local_cache_hit", "external_kv_transfer"),
        in_legacy=False,
    ),
    Family(
        "vllm:prompt_tokens_cached", "counter", "Number of cached prompt tokens (local + external).", in_legacy=False
    ),
    Family("vllm:generation_tokens", "counter", "Number of generation tokens processed."),
    Family("vllm:request_success", "counter", "Count of successfully processed requests.", label="finished_reason"),
    _h("vllm:request_prompt_tokens", "Number of prefill tokens processed.", "tokens"),
    _h("vllm:request_generation_tokens", "Number of generation tokens processed.", "tokens"),
    _h(
        "vllm:request_prefill_kv_computed_tokens",
        "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
        "tokens",
        in_legacy=False,
    ),
    _h("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", ITERATION_TOKEN_BUCKETS),
    _h(
        "vllm:request_max_num_generation_tokens",
        "Histogram of maximum number of requested generation tokens.",
        "tokens",
    ),
    _h("vllm:request_params_n", "Histogram of the n request parameter.", PARAMS_N_BUCKETS),
    _h("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", "tokens"),
    _h("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", TTFT_BUCKETS),
    _h(
        "vllm:inter_token_latency_seconds",
        "Histogram of inter-token latency in seconds.",
        TPOT_BUCKETS,
        legacy_key="vllm:time_per_output_token_seconds",
    ),
    _h(
        "vllm:request_time_per_output_token_seconds",
        "Histogram of time_per_output_token_seconds per request.",
        TPOT_BUCKETS,
        in_legacy=False,
        added="overlap",
    ),
    _h("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", LATENCY_BUCKETS),
    _h("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", LATENCY_BUCKETS),
    _h("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", LATENCY_BUCKETS),
    _h("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", LATENCY_BUCKETS),
    _h("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", LATENCY_BUCKETS),
    Family(
        "vllm:engine_sleep_state",
        "gauge",
        "Engine sleep state; awake = 0 means engine is sleeping; "
        "awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means "
        "sleep level 2.",
        label="sleep_state",
        label_values=("awake", "weights_offloaded", "discard_all"),
        in_legacy=False,
    ),
)
_BY_KEY = {f.key: f for f in VLLM_FAMILIES}
CACHE_CONFIG_HELP = "Information of the LLMEngine CacheConfig"


def families_for(generation: Generation) -> tuple[Family, ...]:
    """The vLLM families one generation exposes (plus vllm:cache_config_info, rendered separately)."""
    return tuple(f for f in VLLM_FAMILIES if f.exposed_in(generation))


class VllmMetrics:
    """Counters, gauges and histograms of one vLLM engine, recorded as PrometheusStatLogger does (§1.4).

    Values only grow (counters, histograms) until `reset()`, which a simulated process restart calls.
    Labelled families are stored as {label value: value} with every value pre-created at 0.
    """

    def __init__(self, max_model_len: int, created_unix: float, generation: Generation = "v1"):
        self.max_model_len = max_model_len
        self.created_unix = created_unix
        self.bounds: dict[str, tuple[float, ...]] = {
            f.key: f.bucket_bounds(max_model_len, generation) for f in VLLM_FAMILIES if f.kind == "histogram"
        }
        self.scalars: dict[str, float] = {}
        self.labelled: dict[str, dict[str, float]] = {}
        self.buckets: dict[str, list[int]] = {}
        self.sums: dict[str, float] = {}
        self.reset(created_unix)

    def reset(self, created_unix: float) -> None:
        """Everything back to 0: what a restarted process exposes."""
        self.created_unix = created_unix
        for f in VLLM_FAMILIES:
            if f.kind == "histogram":
                self.buckets[f.key] = [0] * (len(self.bounds[f.key]) + 1)
                self.sums[f.key] = 0.0
            elif f.label:
                self.labelled[f.key] = dict.fromkeys(
                    FINISHED_REASONS if f.label == "finished_reason" else f.label_values, 0.0
                )
            else:
                self.scalars[f.key] = 0.0
        self.labelled["vllm:engine_sleep_state"]["awake"] = 1.0

    def inc(self, key: str, amount: float = 1.0, label: str | None = None) -> None:
        if label is None:
            self.scalars[key] += amount
        else:
            self.labelled[key][label] += amount

    def set(self, key: str, value: float, label: str | None = None) -> None:
        if label is None:
            self.scalars[key] = value
        else:
            self.labelled[key][label] = value

    def value(self, key: str, label: str | None = None) -> float:
        return self.scalars[key] if label is None else self.labelled[key][label]

    def observe(self, key: str, value: float, count: int = 1) -> None:
        """`count` observations of the same value (a run of identical decode steps)."""
        self.buckets[key][bisect_left(self.bounds[key], value)] += count
        self.sums[key] += value * count

    def cumulative(self, key: str) -> list[int]:
        """Cumulative counts per `le` as exposed; the last one (+Inf) equals `_count`."""
        out, running = [], 0
        for c in self.buckets[key]:
            running += c
            out.append(running)
        return out

    def count(self, key: str) -> int:
        return sum(self.buckets[key])

    def to_state(self) -> dict[str, Any]:
        """{"counters": {key: value | {label: value}}, "histograms": {key: {"buckets": cumulative, "sum"}}}."""
        counters: dict[str, Any] = {}
        for f in VLLM_FAMILIES:
            if f.kind == "counter":
                counters[f.key] = dict(self.labelled[f.key]) if f.label else self.scalars[f.key]
        histograms = {key: {"buckets": self.cumulative(key), "sum": self.sums[key]} for key in self.buckets}
        return {"counters": counters, "histograms": histograms}

    def load_state(self, state: dict[str, Any]) -> None:
        """Continue from a backfill's end state (fleetsim.state); bucket sets must match."""
        for key, value in state.get("counters", {}).items():
            if isinstance(value, dict):
                self.labelled[key].update({k: float(v) for k, v in value.items()})
            else:
                self.scalars[key] = float(value)
        for key, hist in state.get("histograms", {}).items():
            cumulative = [int(c) for c in hist["buckets"]]
            if len(cumulative) != len(self.buckets[key]):
                raise ValueError(f"{key}: state has {len(cumulative)} buckets, this replica {len(self.buckets[key])}")
            self.buckets[key] = [b - a for a, b in zip([0, *cumulative[:-1]], cumulative, strict=True)]
            self.sums[key] = float(hist["sum"])


def family(key: str) -> Family:
    return _BY_KEY[key]
