"""One vLLM engine, emulated: continuous batching under a chunked-prefill token budget, a paged KV cache
with prefix caching and recompute preemption, and step times from the sizing roofline.

Scheduler (vLLM V1, FCFS): each step has `chunked_prefill_tokens` (max_num_batched_tokens) to spend.
Running requests go first (a decoding request needs 1 token, a prefilling one the rest of its prompt, up
to the budget); when a request's next KV block does not fit, the last running request is preempted
(its blocks freed, back to the front of the queue, to be recomputed). Without a preemption in the step,
waiting requests are admitted FIFO while the batch is under max_num_seqs, the budget lasts and their
blocks fit. The step reads every scheduled request's KV and computes its new tokens:
`Engine.step(kv_tokens_read, tokens, attention_pairs, prefill_pairs)` (decodes' KV read and attention,
prompt chunks' attention FLOPs) with the replica's *true* efficiencies.

Coasting: when every running request is decoding and nothing can be admitted, the next k steps are
identical but for a context that grows by one token per request per step; they are accounted at once
(k up to the next finish, arrival, deadline, block-boundary risk or tick end), with the step time at
the run's mid-point context. That is what keeps 100 replicas inside one CPU core.

Metrics are recorded as vLLM's PrometheusStatLogger records them (§1.4 of the metric catalog).

This module is the scheduler and the step loop; the KV blocks and the prefix cache are fleetsim.kv_cache's,
the request record and its per-request histograms fleetsim.replica_request's (`BLOCK_SIZE` and `Request` are
re-exported here for the modules that import them from the replica).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from fleetsim.kv_cache import BLOCK_SIZE, KvCache
from fleetsim.metrics import VllmMetrics
from fleetsim.replica_request import Request, record_finished, record_first_token
from fleetsim.workload import Call
from monitor.sizing.roofline import Engine, StepTime, prefill_attention_pairs

__all__ = ["BLOCK_SIZE", "EngineConfig", "Replica", "Request"]


@dataclass(frozen=True)
class EngineConfig:
    """The vLLM flags and true hardware behaviour of one replica."""

    engine: Engine
    num_gpu_blocks: int
    max_num_batched_tokens: int
    max_num_seqs: int
    max_model_len: int
    client_timeout_seconds: float = 300.0
    error_rate: float = 1e-4


@dataclass
class Activity:
    """Busy, memory and compute seconds since the last GPU sample (dcgm reads these)."""

    busy: float = 0.0
    memory: float = 0.0
    compute: float = 0.0
    tokens: float = 0.0


@dataclass
class Replica:
    config: EngineConfig
    metrics: VllmMetrics
    now: float
    rng: np.random.Generator
    inbox: deque[Request] = field(default_factory=deque)
    waiting: deque[Request] = field(default_factory=deque)
    running: list[Request] = field(default_factory=list)
    activity: Activity = field(default_factory=Activity)
    _kv: KvCache = field(init=False)

    def __post_init__(self) -> None:
        self._kv = KvCache(self.config.num_gpu_blocks)

    @property
    def used_blocks(self) -> int:
        """KV blocks in use; kept on the replica because the fleet's pod view reads it here."""
        return self._kv.used_blocks

    # ---- intake -------------------------------------------------------------------------------------------
    def submit(self, call: Call) -> Request:
        """Queue a call; prompt and output are clipped to max_model_len as the server would cap them."""
        limit = self.config.max_model_len
        prompt = min(call.prompt_tokens, limit - 1)
        cap = min(call.max_tokens, limit - prompt)
        target = max(1, min(call.output_tokens, cap))
        reason = "length" if call.output_tokens >= cap else "stop"
        request = Request(call, prompt, target, reason, arrival=max(call.arrival, self.now))
        self.inbox.append(request)
        return request

    @property
    def load(self) -> int:
        return len(self.inbox) + len(self.waiting) + len(self.running)

    # ---- the loop -----------------------------------------------------------------------------------------
    def advance(self, t_end: float) -> list[Request]:
        """Run engine steps until simulated time reaches t_end; return the requests that finished."""
        finished: list[Request] = []
        while True:
            self._admit_arrivals()
            self._expire(finished)
            if not self.running and not self.waiting:
                if not self.inbox or self.inbox[0].arrival >= t_end:
                    self.now = max(self.now, t_end)
                    break
                self.now = max(self.now, self.inbox[0].arrival)
                continue
            if self.now >= t_end:
                break
            k = self._coast_steps(t_end)
            if k >= 2:
                self._coast(k, finished)
            else:
                self._step(finished)
        self._set_gauges()
        return finished

    def _admit_arrivals(self) -> None:
        while self.inbox and self.inbox[0].arrival <= self.now:
            self.waiting.append(self.inbox.popleft())

    def _expire(self, finished: list[Request]) -> None:
        """Clients give up on requests never started after client_timeout_seconds (reason abort); requests
        preempted after starting (at the front of the queue) keep their place."""
        while True:
            index = next((i for i, r in enumerate(self.waiting) if r.scheduled_at < 0), None)
            if index is None or self.now - self.waiting[index].arrival <= self.config.client_timeout_seconds:
                return
            request = self.waiting[index]
            del self.waiting[index]
            self._finish(request, "abort", finished)

    # ---- one general step ---------------------------------------------------------------------------------
    def _step(self, finished: list[Request]) -> None:
        budget = self.config.max_num_batched_tokens
        scheduled: list[tuple[Request, int]] = []
        preempted = self._schedule_running(scheduled, budget)
        budget -= sum(n for _, n in scheduled)
        if not preempted:
            self._schedule_waiting(scheduled, budget)
        if not scheduled:  # nothing fits (cannot happen with an empty batch): wait for the next arrival
            self.now = max(self.now + 1e-3, self.inbox[0].arrival if self.inbox else self.now)
            return
        kv_read = tokens = pairs = prefill_pairs = 0.0
        for r, n in scheduled:
            tokens += n
            if n == 1 and r.computed >= r.prompt:  # a decode: reads its KV (or computes over it)
                kv_read += r.computed
                pairs += prefill_attention_pairs(n, r.computed)
            else:  # a prompt chunk: attention FLOPs over its prefix and itself
                prefill_pairs += prefill_attention_pairs(n, r.computed)
        self._account(self.config.engine.step(kv_read, tokens, pairs, prefill_pairs), 1, tokens)
        self._complete(scheduled, finished)

    def _schedule_running(self, scheduled: list[tuple[Request, int]], budget: int) -> bool:
        """Decodes and partial prefills first; preempt from the back of the batch when KV runs out."""
        preempted, i = False, 0
        while i < len(self.running) and budget > 0:
            r = self.running[i]
            n = min(r.need - r.computed, budget)
            extra = self._kv.private_blocks(r.computed + n, r.shared) - r.blocks
            while extra > self._kv.free_blocks() and self.running[-1] is not r:
                self._preempt(self.running.pop())
                preempted = True
            if extra > self._kv.free_blocks():
                self._preempt(self.running.pop())
                return True
            self._kv.allocate(r, extra)
            scheduled.append((r, n))
            budget -= n
            i += 1
        return preempted

    def _schedule_waiting(self, scheduled: list[tuple[Request, int]], budget: int) -> None:
        while self.waiting and budget > 0 and len(self.running) < self.config.max_num_seqs:
            r = self.waiting[0]
            fit = self._kv.fit(r, budget)
            if fit is None:
                return
            hit, shared, n, private, pool = fit
            self.waiting.popleft()
            self._start(r, hit, shared, pool)
            self._kv.allocate(r, private)
            self.running.append(r)
            scheduled.append((r, n))
            budget -= n

    def _start(self, r: Request, hit: int, shared: int, pool: int) -> None:
        """(Re)scheduling from the queue; the prefix-cache query is counted once per request (§1.4)."""
        self._kv.start(r, hit, shared, pool)
        if not r.looked_up:
            r.looked_up, r.cached, r.scheduled_at = True, hit, self.now
            self.metrics.inc("vllm:prefix_cache_queries", r.prompt)
            self.metrics.inc("vllm:prefix_cache_hits", hit)

    def _preempt(self, r: Request) -> None:
        """Recompute preemption: free everything, back to the front of the queue."""
        self._kv.release(r)
        r.computed = 0
        self.waiting.appendleft(r)
        self.metrics.inc("vllm:num_preemptions")

    # ---- completing steps ---------------------------------------------------------------------------------
    def _account(self, step: StepTime, k: int, tokens: float) -> None:
        seconds = step.seconds * k
        self.now += seconds
        act = self.activity
        act.busy += seconds
        act.memory += step.memory_seconds * k
        act.compute += step.compute_seconds * k
        act.tokens += tokens * k

    def _complete(self, scheduled: list[tuple[Request, int]], finished: list[Request]) -> None:
        """After a step: requests whose KV caught up sample a token (TTFT on the first, ITL after)."""
        m, prompt_tokens, sampled = self.metrics, 0, 0
        for r, n in scheduled:
            r.computed += n
            if r.computed < r.need:
                continue
            r.generated += 1
            sampled += 1
            if r.first_token_at < 0:
                r.first_token_at = self.now
                prompt_tokens += r.prompt
                record_first_token(m, r, self.now)
                self._kv.donate_prefix(r)
            else:
                m.observe("vllm:inter_token_latency_seconds", self.now - r.last_token_at)
            r.last_token_at = self.now
            if r.generated >= r.target:
                self.running.remove(r)
                self._finish(r, self._final_reason(r), finished)
        m.inc("vllm:generation_tokens", sampled)
        if prompt_tokens + sampled:
            m.observe("vllm:iteration_tokens_total", prompt_tokens + sampled)

    def _final_reason(self, r: Request) -> str:
        if r.reason == "stop" and self.rng.random() < self.config.error_rate:
            return "error"
        return r.reason

    def _finish(self, r: Request, reason: str, finished: list[Request]) -> None:
        self._kv.release(r)
        record_finished(self.metrics, r, reason, self.now)
        r.finish_reason, r.finished_at = reason, self.now
        finished.append(r)

    # ---- coasting through identical decode steps ----------------------------------------------------------
    def _coast_steps(self, t_end: float) -> int:
        """How many identical pure-decode steps can be taken at once (0 or 1: take a general step)."""
        running, cfg, kv = self.running, self.config, self._kv
        batch = len(running)
        if not batch or batch > cfg.max_num_batched_tokens or any(r.need - r.computed != 1 for r in running):
            return 0
        if self.waiting and batch < cfg.max_num_seqs and kv.fit(self.waiting[0], cfg.max_num_batched_tokens - batch):
            return 0
        limit = min(t_end, self.inbox[0].arrival) if self.inbox else t_end
        pending = next((r for r in self.waiting if r.scheduled_at < 0), None)
        if pending is not None:
            limit = min(limit, pending.arrival + cfg.client_timeout_seconds)
        context = sum(r.computed for r in running)
        first = cfg.engine.step(context, batch, context).seconds
        k_time = max(1, math.ceil((limit - self.now) / first))
        k_kv = BLOCK_SIZE * (kv.free_blocks() // batch)
        return min(k_time, k_kv, min(r.target - r.generated for r in running))

    def _coast(self, k: int, finished: list[Request]) -> None:
        running = self.running
        batch = len(running)
        mid = sum(r.computed for r in running) + batch * (k - 1) / 2.0
        step = self.config.engine.step(mid, batch, mid)
        self._account(step, k, batch)
        grown = 0
        for r in running:
            blocks = math.ceil((r.computed + k) / BLOCK_SIZE) - math.ceil(r.computed / BLOCK_SIZE)
            r.blocks += blocks
            grown += blocks
            r.computed += k
            r.generated += k
            r.last_token_at = self.now
        self._kv.allocate_grown(grown)
        m = self.metrics
        m.inc("vllm:generation_tokens", batch * k)
        m.observe("vllm:iteration_tokens_total", batch, k)
        m.observe("vllm:inter_token_latency_seconds", step.seconds, batch * k)
        for r in [r for r in running if r.generated >= r.target]:
            running.remove(r)
            self._finish(r, self._final_reason(r), finished)

    # ---- lifecycle and gauges -----------------------------------------------------------------------------
    def abort_all(self, reason: str) -> list[Request]:
        """Finish every request in flight (a failure: "error"; a drain timeout: "abort")."""
        finished: list[Request] = []
        for r in [*self.running, *self.waiting, *self.inbox]:
            if r in self.running:
                self.running.remove(r)
            self._finish(r, reason, finished)
        self.waiting.clear()
        self.inbox.clear()
        self._set_gauges()
        return finished

    def restart(self, now: float) -> None:
        """A new process: empty queues, an empty KV cache (prefix cache included), idle GPUs."""
        self.abort_all("error")
        self.now = now
        self._kv = KvCache(self.config.num_gpu_blocks)
        self.activity = Activity()

    def _set_gauges(self) -> None:
        m = self.metrics
        m.set("vllm:num_requests_running", len(self.running))
        m.set("vllm:num_requests_waiting", len(self.waiting))
        m.set("vllm:num_requests_waiting_by_reason", len(self.waiting), "capacity")
        m.set("vllm:kv_cache_usage_perc", self.used_blocks / self.config.num_gpu_blocks)
