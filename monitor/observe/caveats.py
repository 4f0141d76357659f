"""What a tier's measurements mean on the engine it runs, said where a user reads them: pure, no I/O.

Two facts change how planwatch's numbers read, and both are said in the measurements' reasons:
- every replica count, the freshness check and the join of GPUs to tiers key on `vllm:num_requests_running`,
  so a tier without that series has none of them, and the reason says why (and what was found instead);
- under speculative decoding vLLM observes its ITL histogram once per output a request streams, and one
  speculative step streams 1 + the accepted draft tokens: ITL is then the time per step, not per token.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from monitor.observe.model import Measurement

__all__ = ["KEY_SERIES", "absent_key_series", "speculative_decoding"]

KEY_SERIES = "vllm:num_requests_running"
_TPOT_FIELDS = ("tpot_p50", "tpot_p95", "tpot_p99")


def absent_key_series(selector: str, found_instead: str = "") -> str:
    """The reason every replica-keyed value of a tier is unknown when `KEY_SERIES` matches nothing."""
    reason = (
        f"no {KEY_SERIES} series for {selector} in the last 5 minutes: freshness, the replica count and the GPU "
        "join all key on it; check that the vLLM targets are scraped and carry the tier's labels"
    )
    return f"{reason}; {found_instead}" if found_instead else reason


def speculative_decoding(values: Mapping[str, Measurement], tokens_per_step: Measurement) -> dict[str, Measurement]:
    """`values` with the ITL and TPOT readings explained where the tier decodes speculatively."""
    out = dict(values)
    if tokens_per_step.value is None:
        return out
    per_step = f"{tokens_per_step.value:.2f}"
    itl = out.get("itl_p95")
    if itl is not None and itl.known:
        out["itl_p95"] = replace(itl, reason=(
            f"speculative decoding: ITL is observed once per streamed output of {per_step} tokens on average "
            "(time per step, not per token); TPOT is read per request"))  # fmt: skip
    for name in _TPOT_FIELDS:
        tpot = out.get(name)
        if tpot is not None and not tpot.known and tpot.reason.startswith("no observations"):
            out[name] = replace(tpot, reason=(
                "speculative decoding without the per-request TPOT histogram (vllm:request_time_per_output_token_"
                f"seconds, vLLM >= 0.11): ITL counts steps of {per_step} tokens, so it cannot stand in"))  # fmt: skip
    return out
