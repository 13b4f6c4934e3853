"""Prometheus metrics of one server (`GET /metrics`), in a registry of their own (no globals).

Every HTTP request on the API endpoints ends in exactly one `seer_requests_total` sample
(endpoint, status: the HTTP code, or "disconnected" when the client left first); every answered
request adds its tokens, NFE, latency, time to first block, window ratio and execution path;
a request that ran with Seer counts in `seer_seer_rows_total`, and in
`seer_no_boundary_total` when its detector found no boundary.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
RATIO_BUCKETS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = r = CollectorRegistry()
        self.requests = Counter(
            "seer_requests",
            "HTTP API requests by endpoint and final status",
            ["endpoint", "status"],
            registry=r,
        )
        self.queue_depth = Gauge(
            "seer_queue_depth", "requests waiting for the engine (not yet running)", registry=r
        )
        self.running = Gauge("seer_running_rows", "requests the engine is denoising", registry=r)
        self.answer_tokens = Counter(
            "seer_answer_tokens", "answer tokens returned (before the end token)", registry=r
        )
        self.prompt_tokens = Counter("seer_prompt_tokens", "prompt tokens answered", registry=r)
        self.nfe = Counter("seer_nfe", "forward passes spent on answered requests", registry=r)
        self.latency = Histogram(
            "seer_request_latency_seconds",
            "engine latency of answered requests",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.first_block = Histogram(
            "seer_time_to_first_block_seconds",
            "time until a request's first block was final",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.window_ratio = Histogram(
            "seer_window_ratio",
            "denoised window / gen_length (Seer's cut; 1 = no cut)",
            buckets=RATIO_BUCKETS,
            registry=r,
        )
        self.rows = Counter(
            "seer_rows", "answered requests by execution path", ["path"], registry=r
        )
        self.seer_rows = Counter(
            "seer_seer_rows", "answered requests that ran with Seer", registry=r
        )
        self.no_boundary = Counter(
            "seer_no_boundary",
            "answered Seer requests whose detector found no boundary (the fallback or the "
            "full window was kept)",
            registry=r,
        )

    def answered(self, result, gen_length: int) -> None:
        self.answer_tokens.inc(result.tokens)
        self.prompt_tokens.inc(result.prompt_tokens)
        self.nfe.inc(result.nfe)
        self.latency.observe(result.latency)
        self.first_block.observe(result.first_block_latency)
        self.window_ratio.observe(result.window / gen_length)
        self.rows.labels(result.path).inc()
        if result.boundary is not None:
            self.seer_rows.inc()
            if result.boundary.length is None:
                self.no_boundary.inc()

    def watch(self, waiting, running) -> None:
        """Read the queue depth and running rows at scrape time from these callables."""
        self.queue_depth.set_function(waiting)
        self.running.set_function(running)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
