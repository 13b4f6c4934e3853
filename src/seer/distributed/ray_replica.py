"""`SeerReplica`: one Ray Serve replica of `seer serve` (imported only where Ray Serve is).

The class is a `serve.ingress` deployment whose ASGI app is built at replica start
(`__serve_build_asgi_app__`): it loads the model once, then builds `seer.serve.build`'s FastAPI
app around its own engine thread, so every endpoint, stream and error is the single-process
server's code. Ray Serve runs the app's lifespan (the engine thread starts) after the build and
stops it when the replica is shut down, once its running requests are answered.
"""

from __future__ import annotations

import logging
import threading
import uuid

import ray
from ray import serve

from seer.distributed.ray_metrics import PUSH_S, merge

log = logging.getLogger("seer.serve")


@serve.ingress()
class SeerReplica:
    def __init__(
        self,
        model: str,
        load: dict,
        build: dict,
        model_arg: str | None,
        served: str | None,
        threads: int | None,
        board=None,
    ) -> None:
        import torch

        import seer
        from seer.serve import build as build_app
        from seer.serve import model_names

        if threads:
            torch.set_num_threads(threads)
        lm = seer.load(model, **load)
        self._app = build_app(lm, model_names=model_names(lm, model_arg, served), **build)
        self._service = self._app.state.service
        self._board, self._id = board, uuid.uuid4().hex
        self._stop = threading.Event()
        if board is not None:
            self._service.gather = self._gather
            threading.Thread(target=self._push_loop, name="seer-metrics", daemon=True).start()

    def __serve_build_asgi_app__(self):
        return self._app

    async def _gather(self, own: bytes) -> bytes:
        """/metrics: this replica's fresh figures with the others' latest, summed."""
        await self._board.push.remote(self._id, own.decode())
        return merge(await self._board.snapshots.remote())

    def _push_loop(self) -> None:
        while not self._stop.wait(PUSH_S):
            try:
                ray.get(self._board.push.remote(self._id, self._exposition()), timeout=10)
            except Exception as e:  # the board is gone (the service is shutting down)
                log.warning("metrics push failed: %s", e)

    def _exposition(self) -> str:
        return self._service.metrics.exposition().decode()

    def __del__(self) -> None:
        self._stop.set()
