"""Past one process (optional extra ``seer[ray]``), on Ray: `seer.distributed.ray_batch` runs
`seer batch` on Ray Data actors, `seer.distributed.ray_serve` runs `seer serve` as Ray Serve
replicas (`ray_replica`: one replica, `ray_metrics`: /metrics over all of them). See each module's
docstring for the design. `seer.distributed.batch(...)` and `seer.distributed.serve(...)` are
their entry points."""

from seer.distributed.ray_batch import RaySummary, batch
from seer.distributed.ray_serve import serve

__all__ = ["RaySummary", "batch", "serve"]
