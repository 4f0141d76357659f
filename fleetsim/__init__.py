"""fleetsim: an emulator (not a mock) of a vLLM + dcgm-exporter fleet, for demos, tests and what-if.

workload    arrivals (weekly profile, Poisson, bursts), lengths, routing, prefix reuse — pure
traces      Azure CSV / JSONL trace replay
scenarios   realities that contradict the plan, as data (Effects), composable, with start times
replica     one vLLM engine: continuous batching, chunked prefill, paged KV, preemption, roofline steps
pods        pod lifecycle (cold start, failure, drain) and GPU telemetry
fleet       tiers of pods behind a gateway, advanced in simulated time
metrics     the metric catalog (vLLM V1 / legacy, dcgm-exporter, kube-state-metrics, gateway)
exposition  Prometheus text format for every endpoint
state       the resume-state format shared with the history backfill
server, cli `fleetsim serve`: every /metrics endpoint, file_sd and the control API on one listener
"""

__all__ = ["DEFAULT_SCENARIO"]

# The reality every fleetsim entry point (serve, backfill, the demo, `planwatch demo`) emulates unless told
# otherwise: demand as irregular as production's (fleetsim.irregularity: levels, shapes, trends, shifts and
# holidays drawn from the real traces), so the demo and the tests do not flatter the forecaster. `baseline`
# is the plan's own regular week. Here, not in fleetsim.scenarios, so `planwatch --help` imports no numpy.
DEFAULT_SCENARIO = "irregular"
