"""A replica's paged KV cache: block accounting, prefix-cache lookups and what a prefilled request leaves cached.

Blocks of BLOCK_SIZE tokens are held privately by requests or by the prefix cache, which takes one of two
forms: a synthetic workload's shared prefix (one pool, referenced by the requests that reuse it, counted as
used while referenced and evictable once not), or a replayed trace's hashed prompt blocks (an LRU of block
ids sized to the cache). Apart from the scheduler (fleetsim.replica), which decides what runs and asks the
cache only whether a request fits and to hold or free its blocks.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field

from fleetsim.replica_request import Request
from fleetsim.traces import TRACE_BLOCK_TOKENS
from fleetsim.workload import SHARED_PREFIX_KEY

__all__ = ["BLOCK_SIZE", "KvCache"]

BLOCK_SIZE = 16


@dataclass
class _SharedPrefix:
    tokens: int = 0
    refs: int = 0


@dataclass
class KvCache:
    num_gpu_blocks: int
    used_blocks: int = 0
    _prefix: _SharedPrefix = field(default_factory=_SharedPrefix)
    _trace_blocks: OrderedDict[int, None] = field(default_factory=OrderedDict)

    def free_blocks(self) -> int:
        return self.num_gpu_blocks - self.used_blocks

    @staticmethod
    def private_blocks(tokens: int, shared: int) -> int:
        return math.ceil(tokens / BLOCK_SIZE) - shared // BLOCK_SIZE

    def fit(self, r: Request, budget: int) -> tuple[int, int, int, int, int] | None:
        """(hit, shared, tokens, private blocks, pool blocks) if r's next chunk fits now, else None."""
        hit, shared = self._lookup(r)
        n = min(r.need - hit, budget)
        pool = self._prefix.tokens // BLOCK_SIZE if shared and self._prefix.refs == 0 else 0
        private = self.private_blocks(hit + n, shared)
        if private + pool <= self.free_blocks():
            return hit, shared, n, private, pool
        if pool:  # the unreferenced cached prefix is evictable: start without its hit instead
            n = min(r.need, budget)
            private = self.private_blocks(n, 0)
            return (0, 0, n, private, 0) if private <= self.free_blocks() else None
        return None

    def _lookup(self, r: Request) -> tuple[int, int]:
        """(hit tokens, of which in the shared pool): whole blocks, and the last prompt token is computed."""
        limit = (r.need - 1) // BLOCK_SIZE * BLOCK_SIZE
        if r.call.hash_ids is not None:
            hit_blocks = 0
            for block in r.call.hash_ids:
                if block not in self._trace_blocks:
                    break
                hit_blocks += 1
            return min(hit_blocks * TRACE_BLOCK_TOKENS, limit), 0
        if r.call.prefix_key != SHARED_PREFIX_KEY:
            return 0, 0
        shared = min(r.call.cacheable_tokens // BLOCK_SIZE * BLOCK_SIZE, self._prefix.tokens, limit)
        return shared, shared

    def start(self, r: Request, hit: int, shared: int, pool: int) -> None:
        """r (re)starts from its prefix hit; the pool's blocks count as used again from its first reference."""
        r.computed, r.shared = hit, shared
        if shared:
            self._prefix.refs += 1
            self.used_blocks += pool

    def allocate(self, r: Request, blocks: int) -> None:
        r.blocks += blocks
        self.allocate_grown(blocks)

    def allocate_grown(self, blocks: int) -> None:
        """Unreferenced cached prefix blocks count as free; they are the first evicted when needed."""
        self.used_blocks += blocks
        pool = self._prefix
        if pool.refs == 0 and self.used_blocks + pool.tokens // BLOCK_SIZE > self.num_gpu_blocks:
            pool.tokens = 0

    def release(self, r: Request) -> None:
        self.used_blocks -= r.blocks
        r.blocks = 0
        if r.shared:
            self._prefix.refs -= 1
            if self._prefix.refs == 0:
                self.used_blocks -= self._prefix.tokens // BLOCK_SIZE
            r.shared = 0

    def donate_prefix(self, r: Request) -> None:
        """Once prefilled, a request's reusable prefix is cached: trace blocks enter an LRU; a shared
        prefix longer than the pool extends it (its blocks move from the request to the pool)."""
        if r.call.hash_ids is not None:
            for block in r.call.hash_ids:
                self._trace_blocks[block] = None
                self._trace_blocks.move_to_end(block)
            while len(self._trace_blocks) > max(1, self.num_gpu_blocks * BLOCK_SIZE // TRACE_BLOCK_TOKENS):
                self._trace_blocks.popitem(last=False)
            return
        pool = self._prefix
        aligned = min(r.call.cacheable_tokens, r.prompt - 1) // BLOCK_SIZE * BLOCK_SIZE
        if r.call.prefix_key != SHARED_PREFIX_KEY or aligned <= pool.tokens or (pool.refs and not r.shared):
            return
        grow = (aligned - (pool.tokens if r.shared else 0)) // BLOCK_SIZE
        if not r.shared:
            pool.refs = 1  # the old, unreferenced (uncounted) pool is replaced
        r.blocks -= grow
        pool.tokens = r.shared = aligned
