"""Every query planwatch runs, by recording-rule name: the one place the advisor, the recording rules and
the dashboards look them up."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from monitor.queries import cost, engine, gpu, inventory, latency, traffic
from monitor.queries.query import Query

__all__ = ["ALL", "BY_NAME", "get", "recorded"]

ALL: tuple[Query, ...] = (*traffic.QUERIES, *latency.QUERIES, *engine.QUERIES, *gpu.QUERIES, *cost.QUERIES,
                           *inventory.QUERIES)  # fmt: skip


def _index(queries: tuple[Query, ...]) -> Mapping[str, Query]:
    index: dict[str, Query] = {}
    for query in queries:
        if query.name in index:
            raise ValueError(f"two catalog queries are named {query.name}")
        index[query.name] = query
    return MappingProxyType(index)


BY_NAME: Mapping[str, Query] = _index(ALL)


def get(name: str) -> Query:
    """The query recorded as `name` (e.g. `tier:vllm_time_to_first_token_seconds:p95_5m`)."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"no catalog query named {name!r}; known: {', '.join(sorted(BY_NAME))}") from None


def recorded() -> tuple[Query, ...]:
    """The queries that become recording rules (evidence-only queries are left out)."""
    return tuple(q for q in ALL if q.record)
