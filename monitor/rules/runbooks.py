"""Runbook lines for the alerts: what it means, what to check, what to change (now, and in the plan).

Meaning, mitigation and "revisit when" come from the trigger catalog (`monitor.triggers.catalog`), so an alert
and the advisor's trigger explain a condition in the same words; only the "what to check" hints live here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from monitor.triggers.catalog import CATALOG, trigger_def

__all__ = ["CHECKS", "check_hint", "runbook"]

_GENERIC_CHECK = (
    "the trigger's evidence (observed and plan values, the queries) in the advisor: GET /triggers on planwatch, "
    "or `planwatch check PLAN`"
)
_SLO_CHECK_TTFT = (
    "queue time (tier:vllm_request_queue_time_seconds:p95_5m), prefill load (prompt tokens/s), prefix-hit rate, "
    "replicas up and TTFT p95 (tier:vllm_time_to_first_token_seconds:p95_5m) of the tier"
)
_SLO_CHECK_TPOT = (
    "the running batch per replica against max_num_seqs, inter-token latency p95 "
    "(tier:vllm_inter_token_latency_seconds:p95_5m), chunked-prefill load and preemptions of the tier"
)
_SLO_CHECK_AVAILABILITY = (
    'up of the tier\'s vLLM targets, vllm:request_success_total{finished_reason=~"error|abort"} by reason, '
    "GPU XID errors (DCGM_FI_DEV_XID_ERRORS) and recent rollouts"
)

CHECKS: Mapping[str, str] = MappingProxyType(
    {
        "prompt-p95-above-plan": (
            "the prompt-length distribution (vllm:request_prompt_tokens_bucket) by model and client: a new "
            "integration, more retrieved context or longer conversation history; then KV usage and preemptions"
        ),
        "prefix-hit-below-plan": (
            "whether the system prompt changed or moved, whether per-user or timestamped text now precedes the "
            "shared prefix, and whether routing still sends a prefix to the replica that holds it"
        ),
        "traffic-above-peak": (
            "the request rate of the tier against planwatch_recommended_replicas and the queue "
            "(vllm:num_requests_waiting); whether a client retries or a tool-call loop multiplies calls"
        ),
        "burstier-than-planned": (
            "the 1-minute request rate around the spikes (batch jobs, retries in lockstep, clients without "
            "jitter) and queue time during them"
        ),
        "kv-pressure": (
            "vllm:kv_cache_usage_perc and vllm:num_preemptions_total per replica, the prompt p95 and the running "
            "batch (vllm:num_requests_running) against max_num_seqs"
        ),
        "tool-call-fanout": (
            "gateway_model_calls_total / gateway_user_requests_total by client: a new agent step or a retry loop"
        ),
        "ttft-slo-burn-page": _SLO_CHECK_TTFT,
        "ttft-slo-burn-ticket": _SLO_CHECK_TTFT,
        "tpot-slo-burn-page": _SLO_CHECK_TPOT,
        "tpot-slo-burn-ticket": _SLO_CHECK_TPOT,
        "availability-burn-page": _SLO_CHECK_AVAILABILITY,
        "availability-burn-ticket": _SLO_CHECK_AVAILABILITY,
    }
)


def check_hint(trigger_id: str) -> str:
    """What to look at first; the advisor's evidence for triggers PromQL cannot express."""
    return CHECKS.get(trigger_id, _GENERIC_CHECK)


def runbook(trigger_id: str) -> str:
    """One paragraph: meaning (title, what it invalidates), what to check, mitigation, when to revisit the plan."""
    d = trigger_def(trigger_id)
    return (
        f"Means: {_sentence_case(d.title)}; the plan's assumptions about {_sentence_case(d.invalidates)} no longer "
        "hold. "
        f"Check: {check_hint(trigger_id)}. "
        f"Change now: {d.mitigation}. "
        f"Change the plan: {d.revisit_when}."
    )


def _sentence_case(text: str) -> str:
    """Lower the first letter unless the first word is an acronym (`KV cache ...`, `TTFT SLO ...`)."""
    first = text.split(" ", 1)[0]
    return text if first.isupper() else text[:1].lower() + text[1:]


def _known() -> None:
    unknown = set(CHECKS) - {d.id for d in CATALOG}
    if unknown:
        raise RuntimeError(f"runbook hints for triggers not in the catalog: {', '.join(sorted(unknown))}")


_known()
