"""`seer serve --replicas`'s aggregated /metrics: `merge` of replica snapshots (no Ray needed)."""

from __future__ import annotations

import pytest

pytest.importorskip("prometheus_client")
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from seer.distributed.ray_metrics import MetricsBoard, merge  # noqa: E402
from seer.serve.metrics import Metrics  # noqa: E402


class _Result:
    def __init__(self, tokens: int, latency: float) -> None:
        self.tokens, self.prompt_tokens, self.nfe = tokens, 3, 4
        self.latency = self.first_block_latency = latency
        self.window, self.path, self.boundary = 8, "eager", None


def _replica(answers: list[tuple[int, float]], waiting: int, errors: int = 0) -> str:
    m = Metrics()
    m.watch(lambda: waiting, lambda: 1)
    for tokens, latency in answers:
        m.answered(_Result(tokens, latency), 16)
        m.requests.labels("/v1/chat/completions", "200").inc()
    for _ in range(errors):
        m.requests.labels("/v1/chat/completions", "400").inc()
    return m.exposition().decode()


def _samples(text: bytes) -> dict[tuple, float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(text.decode())
        for s in f.samples
    }


def test_counters_and_histograms_sum_over_replicas_gauges_over_live_ones():
    a = _replica([(5, 0.02), (7, 3.0)], waiting=2, errors=1)
    b = _replica([(4, 0.2)], waiting=5)
    gone = _replica([(6, 0.02)], waiting=9)  # a replica Ray replaced: its gauges are stale
    m = _samples(merge([(a, True), (b, True), (gone, False)]))
    assert (
        m[("seer_requests_total", (("endpoint", "/v1/chat/completions"), ("status", "200")))] == 4
    )
    assert (
        m[("seer_requests_total", (("endpoint", "/v1/chat/completions"), ("status", "400")))] == 1
    )
    assert m[("seer_answer_tokens_total", ())] == 5 + 7 + 4 + 6
    assert m[("seer_request_latency_seconds_count", ())] == 4
    assert m[("seer_request_latency_seconds_sum", ())] == pytest.approx(0.02 + 3.0 + 0.2 + 0.02)
    assert m[("seer_request_latency_seconds_bucket", (("le", "0.025"),))] == 2
    assert m[("seer_request_latency_seconds_bucket", (("le", "+Inf"),))] == 4
    assert m[("seer_queue_depth", ())] == 2 + 5  # live replicas only
    assert m[("seer_running_rows", ())] == 2
    assert m[("seer_replicas", ())] == 2
    assert not [k for k in m if k[0].endswith("_created")]


def test_the_board_keeps_the_latest_snapshot_per_replica():
    board = MetricsBoard()
    board.push("r1", "old")
    board.push("r1", "new")
    board.push("r2", "other")
    assert sorted(board.snapshots()) == [("new", True), ("other", True)]
