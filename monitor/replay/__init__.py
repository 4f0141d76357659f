"""Replay: what a plan and each scaling policy would have done with a trace (`planwatch replay`).

demand    a trace as per-minute model calls per tier (request- or rate-level, the plan's timezone, scaling)
curve     one replica's latencies and occupancy at each rate, measured on fleetsim's aggregate physics
fleet     a tier's replicas minute by minute: cold starts, draining scale-down, the queue
observe   what Prometheus would hold, as the Observer the service reads (so the evaluation runs unchanged)
slo       which minutes meet the SLO, and the fewest replicas that would have (the oracle's need)
policies  static, reactive (KEDA + HPA defaults), predictive (Dynamo-style), the hindsight oracle
planwatch the service's own evaluation as a policy
run       all policies over the same demand and physics; summary and render: the figures, JSON, chart, HTML
"""
