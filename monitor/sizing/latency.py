"""Step 6 of the seeds: TTFT = queueing wait + the step in flight + prefill of the uncached prompt.

Queueing: a replica's engine runs up to L sequences at once, L = max_num_seqs or the sequences whose KV
fits, whichever is lower (`ReplicaModel.admission_limit`); below L vLLM admits every request, whatever that
does to TPOT, so the SLO's batch is a rate the advice keeps to, not a limit the engine enforces (a queue of
SLO-batch slots had requests waiting for slots the engine never withholds). Behind a router each vLLM
engine queues its own requests (its scheduler's waiting queue): a request routed to a full replica waits
there even while another replica has a free slot. So each replica is its own M/M/c queue with c = L slots
at lambda / r, not one queue of r x L slots pooled across the tier (which would promise the shorter wait of a
single shared queue; the replay's physics queues per replica too). The service time is one request's
whole stay (prefill + output x TPOT, the time a request holds its slot). Erlang C gives the chance a
request must wait, and the 95th percentile of the wait is ln(C / 0.05) / (c mu - lambda) when C > 0.05
(else 0). Above saturation the wait is unbounded.

Prompts ahead: a replica prefills FIFO, so a prompt also waits for those that arrived before it (an
M/G/1 queue on the prefill work, over the tier's prompt mix).

Step in flight: a request that arrives mid-step is scheduled at the next step boundary, half a step
later on average and up to one step at p95.

Prefill: with chunked prefill a prompt of u uncached tokens is cut into ceil(u / (budget - B)) chunks,
each riding one engine step alongside the running batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from monitor.sizing.capacity import ReplicaModel

__all__ = [
    "TTFTEstimate",
    "erlang_c",
    "first_token_seconds",
    "prefill_seconds",
    "prefill_wait_seconds",
    "step_in_flight_seconds",
    "ttft_p95",
    "wait_p95_seconds",
]


def erlang_c(servers: int, offered_load: float) -> float:
    """P(wait > 0) in M/M/c with `offered_load` = lambda x service time (Erlangs); 1.0 at or past saturation.

    Erlang B is the Poisson(a) mass at c over its mass up to c, B = pmf(c) / cdf(c), and
    C = c B / (c - a (1 - B)). In log space with the regularized incomplete gamma (cdf(c) = Q(c + 1, a)),
    so a queue of thousands of slots costs the same as one of a few.
    """
    if servers <= 0 or offered_load >= servers:
        return 1.0
    if offered_load <= 0:
        return 0.0
    from scipy.special import gammaincc  # scipy takes ~0.4 s to import; every command's --help loads this module

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
    """ceil(u / (budget - B)) chunk steps, each carrying u / chunks beside the B decodes."""
    return replica.prefill_seconds(uncached_tokens, cached_tokens, batch)


def prefill_wait_seconds(replica: ReplicaModel, per_replica_rps: float, batch: float, quantile: float = 0.5) -> float:
    """Waiting for the prompts ahead: a replica prefills FIFO, one prompt's chunks after another, so its
    prefill is a single server with utilization rho = rate x E[S] over the tier's prompt mix (M/G/1). The
    mean wait is Pollaczek-Khinchine's, rho E[S] (1 + cv^2) / (2 (1 - rho)); the p95 the exponential tail
    with that scale, E[S] (1 + cv^2) ln(rho / 0.05) / (2 (1 - rho)). The prompts' spread (cv^2 of their
    prefill) is what lengthens the wait over a queue of equal prompts: a long prompt ahead holds everyone
    behind it. Unbounded at rho >= 1."""
    mix = replica.prefill_mix(batch)
    service, spread = mix.mean_seconds, (1.0 + mix.variation) / 2.0
    rho = per_replica_rps * service
    if rho >= 1.0:
        return math.inf
    if quantile >= 0.95:
        return service * spread * math.log(rho / 0.05) / (1.0 - rho) if rho > 0.05 else 0.0
    return rho * service * spread / (1.0 - rho)


def step_in_flight_seconds(replica: ReplicaModel, batch: float, quantile: float = 0.5) -> float:
    """A request arriving mid-step waits for it to end: half a mean step on average, a whole one at p95."""
    return (1.0 if quantile >= 0.95 else 0.5) * replica.tpot_step(batch).seconds


def first_token_seconds(
    replica: ReplicaModel, uncached_tokens: float, cached_tokens: float, batch: float, per_replica_rps: float = 0.0
) -> float:
    """Mean TTFT of a request that need not queue for a slot: the step in flight, the prompts ahead of it,
    then its own prefill."""
    return (
        step_in_flight_seconds(replica, batch)
        + prefill_wait_seconds(replica, per_replica_rps, batch)
        + prefill_seconds(replica, uncached_tokens, cached_tokens, batch)
    )


@dataclass(frozen=True)
class TTFTEstimate:
    wait_p95_seconds: float
    prefill_p95_seconds: float
    operating_batch: float
    step_wait_p95_seconds: float = 0.0
    prefill_wait_p95_seconds: float = 0.0
    slots: int = 0  # the replica's queue: the sequences its engine admits at once

    @property
    def seconds(self) -> float:
        """Sum of the p95s: conservative, since the slowest waits and longest prompts rarely coincide."""
        waits = self.wait_p95_seconds + self.step_wait_p95_seconds + self.prefill_wait_p95_seconds
        return waits + self.prefill_p95_seconds


def ttft_p95(replica: ReplicaModel, replicas: int, batch_limit: float, arrival_rps: float) -> TTFTEstimate:
    """TTFT p95 of a tier with `replicas` replicas run at a batch of `batch_limit` at `arrival_rps` model
    calls/s spread evenly by the router: queueing for a slot in the replica's own queue (the engine's
    admission limit at arrival_rps / replicas) + the step in flight + the prompts ahead + the prefill of the
    p95 uncached prompt."""
    wl = replica.workload
    service = replica.slot_seconds(max(batch_limit, 1))
    per_replica = arrival_rps / replicas if replicas else math.inf
    operating = min(float(batch_limit), per_replica * service) if batch_limit else 1.0
    slots = max(math.ceil(batch_limit), replica.admission_limit)  # never fewer than the batch asked about
    wait = wait_p95_seconds(slots, per_replica, service)  # each replica its own queue
    cached_p95 = wl.cached_prompt_p95
    batch = max(operating, 1.0)
    prefill = prefill_seconds(replica, wl.uncached_prompt_p95, cached_p95, batch)
    step = step_in_flight_seconds(replica, batch, 0.95)
    ahead = prefill_wait_seconds(replica, per_replica, batch, 0.95)
    return TTFTEstimate(wait, prefill, operating, step, ahead, slots)
