"""Past one process: `seer.distributed.batch` runs `seer batch` on Ray Data (optional extra
``seer[ray]``). See `seer.distributed.batch` for the design."""

from seer.distributed.batch import RaySummary, batch

__all__ = ["RaySummary", "batch"]
