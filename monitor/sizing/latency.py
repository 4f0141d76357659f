"""Step 6 of the seeds: TTFT = queueing wait + prefill of the uncached prompt.

Queueing: a replica with a batch limit of B serves up to B requests at once, so r replicas act as an
M/M/c queue with c = r x B slots and a service time of one request's whole stay (prefill + output x
TPOT). Erlang C gives the chance a request must wait, and the 95th percentile of the wait is
ln(C / 0.05) / (c mu - lambda) when C > 0.05 (else 0). Above saturation the wait is unbounded.

Prefill: with chunked prefill a prompt of u uncached tokens is cut into ceil(u / (budget - B)) chunks,
each riding one engine step alongside the running batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.special import gammaincc

from monitor.sizing.capacity import ReplicaModel

__all__ = ["TTFTEstimate", "erlang_c", "first_token_seconds", "prefill_seconds", "ttft_p95", "wait_p95_seconds"]


def erlang_c(servers: int, offered_load: float) -> float:
    """P(wait > 0) in M/M/c with `offered_load` = lambda x service time (Erlangs); 1.0 at or past saturation.

    Erlang B is the Poisson(a) mass at c over its mass up to c, B = pmf(c) / cdf(c), and
    C = c B / (c - a (1 - B)). In log space with the regularized incomplete gamma (cdf(c) = Q(c + 1, a)),
    so a fleet of 1,000 replicas x 256 slots costs the same as one.
    """
    if servers <= 0 or offered_load >= servers:
        return 1.0
    if offered_load <= 0:
        return 0.0
    log_pmf = servers * math.log(offered_load) - offered_load - math.lgamma(servers + 1)
    cdf = float(gammaincc(servers + 1, offered_load))
    blocking = min(1.0, math.exp(log_pmf) / cdf) if cdf > 0 else 1.0
    return servers * blocking / (servers - offered_load * (1.0 - blocking))


def wait_p95_seconds(servers: int, arrival_rps: float, service_seconds: float) -> float:
    """95th percentile of the M/M/c wait: P(W > t) = C exp(-(c mu - lambda) t)."""
    if arrival_rps <= 0:
        return 0.0
    load = arrival_rps * service_seconds
    if servers <= 0 or load >= servers:
        return math.inf
    spare_rate = servers / service_seconds - arrival_rps  # completions/s the queue drains at
    if spare_rate <= 0:
        return math.inf
    c = erlang_c(servers, load)
    if c <= 0.05:
        return 0.0
    return math.log(c / 0.05) / spare_rate


def prefill_seconds(replica: ReplicaModel, uncached_tokens: float, cached_tokens: float, batch: float) -> float:
    """ceil(u / (budget - B)) chunk steps, each a decode step of batch B carrying one chunk."""
    if uncached_tokens <= 0:
        return replica.tpot_step(batch).seconds
    room = max(1.0, replica.chunk_budget_tokens - batch)
    chunks = math.ceil(uncached_tokens / room)
    chunk = uncached_tokens / chunks
    step = replica.engine.decode_step(batch, replica.workload.context_mean, chunk, cached_tokens + uncached_tokens / 2)
    return chunks * step.seconds


def first_token_seconds(replica: ReplicaModel, uncached_tokens: float, cached_tokens: float, batch: float) -> float:
    """Mean TTFT of a request that need not queue for a batch slot."""
    return prefill_seconds(replica, uncached_tokens, cached_tokens, batch)


@dataclass(frozen=True)
class TTFTEstimate:
    wait_p95_seconds: float
    prefill_p95_seconds: float
    operating_batch: float

    @property
    def seconds(self) -> float:
        """Sum of the two p95s: conservative, since the slowest waits and longest prompts rarely coincide."""
        return self.wait_p95_seconds + self.prefill_p95_seconds


def ttft_p95(replica: ReplicaModel, replicas: int, batch_limit: int, arrival_rps: float) -> TTFTEstimate:
    """TTFT p95 of a tier with `replicas` replicas of `batch_limit` slots at `arrival_rps` model calls/s."""
    wl = replica.workload
    service = wl.output_mean * replica.tpot_step(max(batch_limit, 1)).seconds
    per_replica = arrival_rps / replicas if replicas else math.inf
    operating = min(float(batch_limit), per_replica * service) if batch_limit else 1.0
    wait = wait_p95_seconds(replicas * batch_limit, arrival_rps, service)
    cached_p95 = wl.prompt_p95 * wl.prefix_hit_rate
    prefill = prefill_seconds(replica, wl.uncached_prompt_p95, cached_p95, max(operating, 1.0))
    return TTFTEstimate(wait, prefill, operating)
