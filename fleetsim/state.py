"""The resume state: where a backfilled history ends, so `fleetsim serve --resume STATE` continues every
counter without a jump (a counter that restarted from 0 would read as a process restart, §4).

JSON, written by fleetsim.backfill at the end of its history and read by the live fleet:

    {
      "format": "fleetsim-state/1",
      "generation": "v1",                   # or "legacy"; must match the serve flag
      "end_unix": 1714953600.0,             # simulated time the history ends at
      "pods": {
        "standard-0": {
          "tier": "standard",
          "created_unix": 1714000000.0,     # kube_pod_created
          "ready_unix": 1714000480.0,       # kube_pod_status_ready_time (null: not ready at end_unix)
          "process_start_time_seconds": 1714000000.0,   # also every _created series of the pod
          "vllm": {                         # VllmMetrics.to_state(), canonical (V1) keys, see fleetsim.metrics
            "counters": {"vllm:prompt_tokens": 1.2e9,
                         "vllm:request_success": {"stop": 9.0e4, "length": 1.0e3, "abort": 0.0, ...}},
            "histograms": {"vllm:time_to_first_token_seconds": {"buckets": [cumulative per le, +Inf last],
                                                                "sum": 812.5}}
          },
          "gpus": [{"energy_mj": 1.8e11, "nvlink_bytes": 9.9e12}, ...]   # dcgm counters per GPU index
        }
      },
      "gateway": {"standard": {"user_requests": 1.0e5, "model_calls": 1.0e5}}
    }

Pods not in the state are not created; a tier's replica count comes from its pods in the state.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["STATE_FORMAT", "FleetState", "PodState", "StateError", "load_state", "save_state"]

STATE_FORMAT = "fleetsim-state/1"


class StateError(ValueError):
    """A resume state that cannot be used, naming the file and the problem."""


@dataclass
class PodState:
    tier: str
    created_unix: float
    ready_unix: float | None
    process_start_time_seconds: float
    vllm: dict[str, Any] = field(default_factory=dict)
    gpus: list[dict[str, float]] = field(default_factory=list)


@dataclass
class FleetState:
    generation: str
    end_unix: float
    pods: dict[str, PodState] = field(default_factory=dict)
    gateway: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": STATE_FORMAT,
            "generation": self.generation,
            "end_unix": self.end_unix,
            "pods": {name: pod.__dict__ for name, pod in self.pods.items()},
            "gateway": self.gateway,
        }


def save_state(state: FleetState, path: str | Path) -> None:
    """Atomic write: a reader never sees half a state."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(state.to_json(), out)
    os.replace(tmp, target)


def load_state(path: str | Path) -> FleetState:
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise StateError(f"{p}: cannot read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise StateError(f"{p}: not JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
        raise StateError(f"{p}: not a {STATE_FORMAT} file")
    try:
        pods = {name: PodState(**pod) for name, pod in data["pods"].items()}
        return FleetState(str(data["generation"]), float(data["end_unix"]), pods, dict(data.get("gateway", {})))
    except (KeyError, TypeError, ValueError) as exc:
        raise StateError(f"{p}: malformed state ({exc})") from None
