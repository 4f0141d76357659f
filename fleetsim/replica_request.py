"""One call as a replica holds it (`Request`), and the per-request metrics vLLM records from it (§1.4).

Apart from the scheduler (fleetsim.replica) so that the KV cache (fleetsim.kv_cache), which holds requests'
blocks, can share the type without importing the scheduler; the per-request observations need nothing but a
request's own timestamps and token counts, so they live with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleetsim.metrics import VllmMetrics
from fleetsim.workload import Call

__all__ = ["Request", "record_finished", "record_first_token"]


@dataclass(slots=True, eq=False)
class Request:
    call: Call
    prompt: int
    target: int  # tokens it will generate
    reason: str  # finish reason when it reaches target: "stop" or "length"
    arrival: float
    cached: int = 0  # prefix-cache hit tokens at first scheduling
    shared: int = 0  # tokens of the shared-prefix pool it references (block aligned)
    computed: int = 0  # tokens whose KV is in the cache
    generated: int = 0
    blocks: int = 0  # private KV blocks held
    scheduled_at: float = -1.0
    first_token_at: float = -1.0
    last_token_at: float = 0.0
    looked_up: bool = False
    finish_reason: str = ""
    finished_at: float = -1.0

    @property
    def need(self) -> int:
        """Tokens that must be in KV before the next sample (prompt + generated; recompute included)."""
        return self.prompt + self.generated


def record_first_token(m: VllmMetrics, r: Request, now: float) -> None:
    """TTFT and the prompt's tokens by source, counted when the first token is sampled."""
    m.observe("vllm:time_to_first_token_seconds", now - r.arrival)
    m.inc("vllm:prompt_tokens", r.prompt)
    m.inc("vllm:prompt_tokens_cached", r.cached)
    m.inc("vllm:prompt_tokens_by_source", r.prompt - r.cached, "local_compute")
    m.inc("vllm:prompt_tokens_by_source", r.cached, "local_cache_hit")


def record_finished(m: VllmMetrics, r: Request, reason: str, now: float) -> None:
    """One observation per finished request in every per-request histogram (§1.4)."""
    m.inc("vllm:request_success", 1.0, reason)
    started = r.scheduled_at if r.scheduled_at >= 0 else now
    first = r.first_token_at if r.first_token_at >= 0 else started
    last = r.last_token_at if r.first_token_at >= 0 else started
    m.observe("vllm:e2e_request_latency_seconds", now - r.arrival)
    m.observe("vllm:request_queue_time_seconds", started - r.arrival)
    m.observe("vllm:request_prefill_time_seconds", first - started)
    m.observe("vllm:request_decode_time_seconds", last - first)
    m.observe("vllm:request_inference_time_seconds", last - started)
    m.observe("vllm:request_prompt_tokens", r.prompt)
    m.observe("vllm:request_generation_tokens", r.generated)
    m.observe("vllm:request_prefill_kv_computed_tokens", r.prompt - r.cached if r.first_token_at >= 0 else 0)
    m.observe("vllm:request_max_num_generation_tokens", r.call.max_tokens)
    m.observe("vllm:request_params_max_tokens", r.call.max_tokens)
    m.observe("vllm:request_params_n", 1)
    if r.generated > 1:
        m.observe("vllm:request_time_per_output_token_seconds", (last - first) / (r.generated - 1))
