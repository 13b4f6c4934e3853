"""`seer serve --replicas N` / `seer.distributed.serve(...)`: `seer serve`'s FastAPI app as N Ray
Serve replicas, each loading the model once and driving its own engine.

Design
------
`SeerReplica` (`seer.distributed.ray_replica`) is a `serve.ingress` deployment whose app is exactly
`seer.serve.build`'s: the same endpoints, SSE streaming, errors, limits and API key. Ray Serve's
HTTP proxy (one per node, bound to `host`: 127.0.0.1 by default) routes each request to a
replica (power of two choices on their ongoing requests). A replica takes up to its engine batch
plus its queue (`max_ongoing_requests`); past that the proxy holds the request until a replica
has room; with `max_queue`, a proxy holding that many already answers 429 (Ray's plain-text
body), as a single server's full queue does.

Replicas: `replicas` fixed, or between `min_replicas` and `max_replicas` with Ray Serve's
autoscaler (starting at `replicas`; it adds one when the replicas average more than half an
engine batch of ongoing requests). Each replica reserves one GPU (``num_gpus=1``, the model on
``cuda``) when the cluster has GPUs or `device` is ``cuda``, otherwise one CPU (one torch thread).
Every replica holds a whole model: this is data parallelism, one model per GPU.

`/metrics` is aggregated: any replica answers with the sum over all replicas
(`seer.distributed.ray_metrics`), plus `seer_replicas`.

Faults: Ray Serve's controller replaces a replica whose process died (a new one loads the model).
Requests it was answering fail: the client gets a 500 (a stream ends early); requests that
arrive meanwhile go to the live replicas or wait for the new one. Nothing is retried for the
client (a diffusion answer with a seed is cheap to ask again; a half-streamed one is not).

Cluster and shutdown: `address` joins a running cluster (``ray start --head`` elsewhere, or
``auto``); with none a local loopback cluster is started (`seer.distributed.ray_batch._connect`).
SIGINT or SIGTERM deletes the application (each replica finishes its running requests for at
most `drain_timeout` seconds) and, on a local cluster, stops Serve and Ray; on a joined cluster
Serve and its other applications keep running.
"""

from __future__ import annotations

import logging
import signal
import socket
import sys
import threading

from seer import extras
from seer.distributed.ray_batch import _connect, _local_env
from seer.engine.config import EngineConfig
from seer.errors import SeerError
from seer.serve.config import DEFAULTS as _S

_E = EngineConfig()  # the engine's defaults (max_batch)

APP = "seer"  # the Ray Serve application's name (one `seer serve --replicas` per cluster)


def _check(replicas: int, lo: int | None, hi: int | None) -> tuple[int, int]:
    lo = replicas if lo is None else lo
    hi = max(replicas, lo) if hi is None else hi
    if replicas < 1 or lo < 1:
        raise SeerError(f"--replicas and --min-replicas must be >= 1, got {min(replicas, lo)}")
    if not lo <= replicas <= hi:
        raise SeerError(
            f"need --min-replicas <= --replicas <= --max-replicas, got {lo} <= {replicas} <= {hi}"
        )
    return lo, hi


def _port_free(host: str, port: int) -> None:
    """A local cluster's proxy binds host:port; a taken port is an error now, not in Ray."""
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as e:
        msg = f"cannot listen on {host}:{port} ({e.strerror}); choose another --port"
        raise SeerError(msg) from None


def _import_serve():
    extras.require("ray", "seer serve --replicas")
    extras.require("serve", "seer serve --replicas")
    _local_env()
    import ray
    from ray import serve

    return ray, serve


def deployment_options(
    replicas: int,
    lo: int,
    hi: int,
    gpu: bool,
    max_batch: int,
    max_queue: int | None,
    drain_timeout: float,
) -> dict:
    """Ray Serve deployment options (see the module docstring)."""
    opts = {
        "ray_actor_options": {"num_gpus": 1} if gpu else {"num_cpus": 1},
        "max_ongoing_requests": max_batch + (max_batch if max_queue is None else max_queue),
        "graceful_shutdown_timeout_s": drain_timeout,
        "max_constructor_retry_count": 3,  # a replica that cannot load the model: fail soon
    }
    if max_queue is not None:  # past it, each proxy answers 429 at once (as the engine's queue)
        opts["max_queued_requests"] = max_queue
        opts["backpressure_config"] = {"status_code": 429}
    if lo == hi == replicas:
        opts["num_replicas"] = replicas
    else:
        opts["autoscaling_config"] = {
            "min_replicas": lo,
            "max_replicas": hi,
            "initial_replicas": replicas,
            "target_ongoing_requests": max(1, max_batch // 2),
        }
    return opts


def serve(
    model: str,
    *,
    replicas: int = 2,
    min_replicas: int | None = None,
    max_replicas: int | None = None,
    address: str | None = None,
    host: str = _S["host"],
    port: int = _S["port"],
    device: str | None = None,
    dtype: str | None = None,
    model_arg: str | None = None,
    served_model_name: str | None = None,
    drain_timeout: float = _S["drain_timeout"],
    log_level: str = _S["log_level"],
    ready=None,
    **build,
) -> None:
    """Serve `model` (a folder every node can read, or a built-in model's name) with Ray Serve
    replicas until SIGINT / SIGTERM. `build`: `seer.serve.build`'s options (max_batch, api_key,
    ...); `ready(url, replicas, device)` is called once the replicas answer."""
    lo, hi = _check(replicas, min_replicas, max_replicas)
    ray, rserve = _import_serve()
    if not address:
        _port_free(host, port)
    from seer.distributed.ray_metrics import MetricsBoard
    from seer.distributed.ray_replica import SeerReplica

    logs = {"log_level": log_level.upper()}  # Serve's own logs: the driver's, proxy's, replicas'
    logging.getLogger("ray.serve").setLevel(logs["log_level"])

    started = _connect(ray, address, max(hi, 1))
    stop = _StopSignals()  # after ray.init, which installs its own SIGTERM handler
    deployed = False
    try:
        gpu = (device or "").startswith("cuda") or (
            device is None and ray.cluster_resources().get("GPU", 0) > 0
        )
        device = device or ("cuda" if gpu else "cpu")
        load = {"device": device, **({"dtype": dtype} if dtype else {})}
        opts = deployment_options(
            replicas,
            lo,
            hi,
            gpu,
            build.get("max_batch", _E.max_batch),
            build.get("max_queue"),
            drain_timeout,
        )
        rserve.start(http_options={"host": host, "port": port}, logging_config=logs)
        board = ray.remote(num_cpus=0)(MetricsBoard).remote()
        deployment = rserve.deployment(SeerReplica, name="SeerReplica", logging_config=logs, **opts)
        app = deployment.bind(
            model, load, build, model_arg, served_model_name, None if gpu else 1, board
        )
        deployed = True
        try:
            rserve.run(app, name=APP, route_prefix="/", blocking=False)
        except RuntimeError as e:  # the replicas failed to start (each one's log has why)
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise SeerError(f"the Ray Serve replicas did not start: {first}") from None
        stop.ready()
        if ready is not None:
            ready(f"http://{host}:{port}", replicas, device)
        stop.wait()
        print("seer: stopping the replicas", file=sys.stderr, flush=True)
    finally:
        stop.restore()
        try:
            if deployed:  # replicas answer their running requests first (drain_timeout)
                rserve.delete(APP)
        finally:
            if started:
                rserve.shutdown()
                ray.shutdown()


class _StopSignals:
    """SIGINT / SIGTERM: while starting, interrupt the start (KeyboardInterrupt: the caller
    cleans up); once the replicas serve, let `wait` return."""

    def __init__(self) -> None:
        self._event, self._serving = threading.Event(), False
        self._old = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}

    def _handle(self, sig, frame) -> None:
        if not self._serving:
            raise KeyboardInterrupt
        self._event.set()

    def ready(self) -> None:
        self._serving = True

    def wait(self) -> None:
        while not self._event.wait(0.5):
            pass

    def restore(self) -> None:
        for s, h in self._old.items():
            signal.signal(s, h)
