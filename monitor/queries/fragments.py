"""Template building blocks shared by the catalog modules; each one encodes a version pitfall once.

Both vLLM metric generations are handled with `or` *per series, before aggregation*:
`sum by (tier) (rate(new[5m]) or rate(old[5m]))`. Binary operators match label sets without `__name__`, so
on a target that exports both names (vLLM 0.9.2-0.11) the old series has the same labels as the new one and
is dropped: nothing is counted twice. Aggregating first (`sum(new) or sum(old)`) would be wrong in a mixed
fleet: the per-tier sums have equal labels, so every replica still on the old name would be dropped.
A series that carries an extra label (`num_requests_waiting_by_reason{reason}`) has that label aggregated
away before the `or`, otherwise both sides would survive and be added up.
"""

from __future__ import annotations

__all__ = [
    "dcgm",
    "dcgm_join",
    "histogram_quantile",
    "ksm",
    "pod_tier",
    "rate_either",
    "unexport",
    "zero_if_known",
]


def rate_either(new: str, old: str, fn: str = "rate") -> str:
    """`fn(new[w]) or fn(old[w])` on vLLM engine series of the tier (new name preferred)."""
    return f"{fn}({new}{{vsel}}[{{window}}]) or {fn}({old}{{vsel}}[{{window}}])"


def histogram_quantile(q: float, buckets: str) -> str:
    """Quantile `q` from per-series bucket rates `buckets`, aggregated `by (le, model_name, <tier>)`.

    `model_name` stays in the grouping because the token histograms' bucket bounds come from each model's
    max_model_len, and bucket sets also changed in April 2025: summing bucket counters whose `le` sets
    differ makes histogram_quantile interpolate in buckets that do not exist. Result: one series per model
    of the tier (a tier normally serves one model).
    """
    return f"histogram_quantile({q}, sum by ({{by:le,model_name}}) ({buckets}))"


def pod_tier() -> str:
    """`{namespace, pod, <tier>} 1` for every vLLM replica of the tier seen in the window.

    The join key to dcgm-exporter and kube-state-metrics series, which know the pod but not the tier.
    Replicas need `namespace` and `pod` target labels (Kubernetes service discovery relabelling, or the
    fleetsim file_sd labels).
    """
    return 'group by ({by:namespace,pod}) (last_over_time(vllm:num_requests_running{vsel:pod!=""}[{window}]))'


def unexport(expr: str) -> str:
    """`exported_pod`/`exported_namespace` made `pod`/`namespace` again. An exporter that reports other pods
    (dcgm-exporter, kube-state-metrics) scraped with honor_labels false has its own `pod`/`namespace`
    labels renamed by Prometheus, and the target's (the exporter's own pod) put in their place; the join
    to the tier needs the workload's. A series without the exported labels is left as it is."""
    expr = f'label_replace({expr}, "pod", "$1", "exported_pod", "(.+)")'
    return f'label_replace({expr}, "namespace", "$1", "exported_namespace", "(.+)")'


def ksm(expr: str) -> str:
    """kube-state-metrics series with the workload's `namespace`/`pod` (see `unexport`)."""
    return unexport(expr)


def dcgm(expr: str) -> str:
    """dcgm-exporter labels made uniform: the workload's `pod`/`namespace` (`unexport`), and `Hostname`
    (before dcgm-exporter #655) becomes `hostname`. A label that is absent leaves the series unchanged."""
    return f'label_replace({unexport(expr)}, "hostname", "$1", "Hostname", "(.+)")'


def dcgm_join(expr: str) -> str:
    """Per-GPU `expr` (already range-reduced) given the tier of the pod it is allocated to. GPUs that are
    allocated to no pod carry no pod label and drop out."""
    return f"{dcgm(expr)} * on (namespace, pod) group_left ({{by}}) {pod_tier()}"


def zero_if_known(count_expr: str, known_expr: str) -> str:
    """`count_expr`, or 0 for tiers that `known_expr` finds: a count of nothing is 0 only where the tier
    exists; a selector that matches nothing stays empty (unknown), not 0."""
    return f"{count_expr} or 0 * count by ({{by}}) ({known_expr})"
