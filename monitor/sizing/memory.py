"""Step 1 and Step 4 of the seeds: weights, KV cache per token, and the KV budget of one replica.

Defined in `monitor.plan.memory` (plan validation reads them, and the plan is the bottom layer); sizing's
formulas read them from here.
"""

from monitor.plan.memory import kv_budget_bytes, kv_bytes_per_token, weights_bytes

__all__ = ["kv_budget_bytes", "kv_bytes_per_token", "weights_bytes"]
