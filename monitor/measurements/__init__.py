"""The capstone's measurement plan (Step 6) as a live record: each item measured, partly measured or not yet,
with its evidence, the dates it covers, the engine configuration and the hardware it was measured on."""

from monitor.measurements.judge import judge_plan
from monitor.measurements.model import ITEMS, Item, ItemSpec, Readings, Status, TierReadings
from monitor.measurements.record import merge_record

__all__ = ["ITEMS", "Item", "ItemSpec", "Readings", "Status", "TierReadings", "judge_plan", "merge_record"]
