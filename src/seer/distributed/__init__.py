"""Past one process (optional extra ``seer[ray]``): `seer.distributed.batch` runs `seer batch` on
Ray Data actors, `seer.distributed.serve` runs `seer serve` as Ray Serve replicas. See each
module's docstring for the design."""

from seer.distributed.batch import RaySummary, batch
from seer.distributed.serve import serve

__all__ = ["RaySummary", "batch", "serve"]
