"""What "the condition held over its hold period" means, once, for planwatch and for the alert rules.

A trigger's condition is sampled at `now` and at every multiple of the step (hold / PROBES, in whole
milliseconds since the epoch) from the last one at or before the hold began (`now - hold`) up to now. It has
held over the hold period when it holds at every one of those times. This is exactly what the PromQL subquery
`(cond)[hold + step:step]` evaluates (Prometheus aligns a subquery's steps to multiples of the step, and
Prometheus 2.x includes both ends of the range), so `monitor.hold_history` (asking Prometheus at these times
through the observer, for `check` and `serve`) and the generated alert rules (`monitor.rules.model.held_over`)
agree, and a condition Prometheus's history already shows is active at once in both.

The samples are a step apart, so a break shorter than a step can be missed; the first sample is at or before
the hold began, so a condition that began at t is judged held between t + hold and t + hold + step, never
earlier (as a rule's `for:` fires at or after its hold).
"""

from __future__ import annotations

__all__ = ["PROBES", "hold_step_ms", "probe_times", "window_ms"]

# Samples per hold: 3 judge a 30-minute hold every 10 minutes; each costs a full evaluation (in `check`, one
# collection per sample; in Prometheus, one evaluation of the condition per sample).
PROBES = 3


def hold_step_ms(hold_ms: int) -> int:
    """The step between samples, in whole milliseconds (Prometheus's resolution)."""
    if hold_ms <= 0:
        raise ValueError(f"a hold must be positive, got {hold_ms!r} ms")
    return max(1, round(hold_ms / PROBES))


def window_ms(hold_ms: int) -> int:
    """The subquery's range: the hold plus one step, so its first sample is at or before the hold began."""
    return hold_ms + hold_step_ms(hold_ms)


def probe_times(now: float, hold_seconds: float) -> list[float]:
    """The sample times before `now` (seconds, newest first): every multiple of the step in
    [now - hold - step, now), as the subquery `[hold + step:step]` evaluated at `now` samples them."""
    hold_ms = round(hold_seconds * 1000)
    step = hold_step_ms(hold_ms)
    now_ms = round(now * 1000)
    first = -(-(now_ms - window_ms(hold_ms)) // step) * step  # the first multiple of the step in the range
    times = range(first, now_ms + 1, step)
    return [t / 1000 for t in reversed(times) if t != now_ms]
