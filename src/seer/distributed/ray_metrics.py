"""`/metrics` of `seer serve --replicas N`: one exposition summed over the replicas.

Each replica keeps the single-process server's own Prometheus registry (`seer.serve.metrics`).
It pushes that registry's text to one `MetricsBoard` actor every `PUSH_S` seconds and whenever it
answers a scrape; a scrape, on whichever replica the proxy routes it to, returns `merge` of the
board's snapshots:

- counters and histograms: the sum over every replica that ever reported, a dead (restarted)
  replica's last snapshot included, so totals never go backwards when Ray replaces a replica;
- gauges (queue depth, running rows): the sum over the live replicas only (those that reported
  within `LIVE_S` seconds);
- `seer_replicas`: how many replicas are live.

Another replica's figures are at most `PUSH_S` seconds old.
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

PUSH_S = 1.0  # how often a replica pushes its snapshot
LIVE_S = 3.0  # a replica that has not pushed for this long counts as gone


class MetricsBoard:
    """A Ray actor holding each replica's latest exposition (num_cpus=0; one per application)."""

    def __init__(self) -> None:
        self._snapshots: dict[str, tuple[float, str]] = {}  # replica -> (monotonic time, text)

    def push(self, replica: str, text: str) -> None:
        self._snapshots[replica] = (time.monotonic(), text)

    def snapshots(self) -> list[tuple[str, bool]]:
        """(exposition text, live) for every replica that ever reported."""
        now = time.monotonic()
        return [(text, now - t <= LIVE_S) for t, text in self._snapshots.values()]


class _Families:
    """A prometheus_client collector over already-built metric families."""

    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self):
        return iter(self._families)


def merge(snapshots: list[tuple[str, bool]]) -> bytes:
    """One Prometheus exposition from (text, live) snapshots; see the module docstring."""
    families: dict[str, Metric] = {}
    sums: dict[str, dict[tuple, float]] = {}  # family -> (sample name, labels) -> sum
    for text, live in snapshots:
        for fam in text_string_to_metric_families(text):
            if fam.name.endswith("_created"):  # creation times: a sum of them means nothing
                continue
            if fam.type == "gauge" and not live:
                continue
            families.setdefault(fam.name, Metric(fam.name, fam.documentation, fam.type))
            acc = sums.setdefault(fam.name, {})
            for s in fam.samples:
                if s.name.endswith("_created"):
                    continue
                key = (s.name, tuple(s.labels.items()))
                acc[key] = acc.get(key, 0.0) + s.value
    replicas = Metric("seer_replicas", "replicas reporting (Ray Serve)", "gauge")
    replicas.add_sample("seer_replicas", {}, float(sum(live for _, live in snapshots)))
    out = [replicas]
    for name, fam in families.items():
        for (sample, labels), value in sums[name].items():
            fam.add_sample(sample, dict(labels), value)
        out.append(fam)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(out))
    return generate_latest(registry)
