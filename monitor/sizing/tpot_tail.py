"""p95 TPOT over requests: each request decodes beside the prompts its replica prefills meanwhile.

A request with g inter-token gaps gets one token per engine step: decode-only steps of t_d, and chunk
steps of c on average while prompts prefill. Prompts reach a replica at lambda per second (the batch over
its slot time) and each brings C chunk steps (ceil(u / room) for its uncached tokens u). A request whose
TPOT is x decoded for g x seconds, so the chunk steps it rode through are those of the prompts that
arrived in that window, Poisson(lambda g x) of them, and with probability phi (the share of time the
replica prefills) the one already queued behind its own when its first token came:

    K = sum of C_j,  mean (lambda g x + phi) E[C],  variance lambda g x E[C^2] + phi E[C^2] - (phi E[C])^2

taken as a gamma with that mean and variance (K is skewed: a short request mostly sees no prompt at all,
sometimes a long one). Its TPOT exceeds x when K > g (x - t_d) / (c - t_d). The p95 over requests mixes
that over the tier's output lengths and is solved for x by bisection.

Why not a binomial over the mean output (each step carrying a chunk with probability f, independently,
which this replaced): chunk steps come a prompt at a time, several per long prompt, so they bunch, and the
short outputs, which see one prompt or none, set the p95. Against fleetsim's live engine at the capstone
plan's SLO knee (per replica: standard 1.165 req/s, long-context 0.34) the binomial said 33 and 18 ms where
the engine measures 44 and 52; this says 40 and 49 (tests/sizing/test_tpot_tail.py holds it within 20%;
`benchmarks/bench_aggregate_live.py` prints the engine's curves; long-context's was 43 before the slot took
its shared steps and bunched gaps, since the same rate is then a higher batch). What it still leaves out is queueing:
prompts that wait bunch their chunk steps tighter still.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["tpot_p95"]

_TAIL = 0.05
_BISECTIONS = 50


def tpot_p95(
    decode_seconds: float,
    chunk_seconds: float,
    prompt_chunks: Sequence[float],
    prefill_seconds: Sequence[float],
    prompts_per_second: float,
    gaps: Sequence[float],
) -> float:
    """p95 over requests of their mean inter-token gap. `chunk_seconds` is a chunk step (the mix's, as the mean
    TPOT takes it: monitor.sizing.capacity.ReplicaModel.chunk_step), `prompt_chunks` and `prefill_seconds` per
    prompt of equal-mass points of the tier's prompt mix (its chunk steps and their seconds), `gaps` per
    request of equal-mass points of its output mix (output - 1, at least 1)."""
    from scipy.special import gammaincc  # scipy takes ~0.4 s to import; every command's --help loads sizing

    chunks = np.asarray(prompt_chunks, dtype=float)
    total = float(chunks.sum())
    if total <= 0 or prompts_per_second <= 0:
        return decode_seconds
    chunk = chunk_seconds
    if chunk <= decode_seconds:
        return decode_seconds
    m1, m2 = float(chunks.mean()), float((chunks * chunks).mean())
    busy = min(0.99, prompts_per_second * float(np.mean(prefill_seconds)))
    g = np.maximum(np.asarray(gaps, dtype=float), 1.0)

    def over(x: float) -> float:
        window = prompts_per_second * g * x  # prompts arriving while a request of TPOT x decodes
        mean = (window + busy) * m1
        var = np.maximum(window * m2 + busy * m2 - (busy * m1) ** 2, 1e-12)
        needed = g * (x - decode_seconds) / (chunk - decode_seconds)
        return float(np.mean(gammaincc(mean * mean / var, needed * mean / var)))

    low, high = decode_seconds, chunk
    if over(high) > _TAIL:
        return chunk
    for _ in range(_BISECTIONS):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if over(mid) > _TAIL else (low, mid)
    return high
