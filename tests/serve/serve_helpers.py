"""Helpers of the server tests: a real `seer serve` process on a free loopback port, the built-in
model for offline answers, /metrics parsed by prometheus_client."""

from __future__ import annotations

import base64
import io
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")

KEY = "test-key"  # the module server's --api-key


class Server:
    """`seer serve ARGS` on 127.0.0.1:<free port>; stops with SIGTERM (then SIGKILL) on exit."""

    def __init__(self, *args: str) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "SEER_NO_PROGRESS": "1", "OMP_NUM_THREADS": "1"}
        cmd = [
            sys.executable,
            "-m",
            "seer.cli",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--log-level",
            "warning",
            *args,
        ]
        self.log = Path(os.environ.get("TMPDIR", "/tmp")) / f"seer-serve-{self.port}.log"
        self._log = self.log.open("w")
        self.proc = subprocess.Popen(cmd, env=env, stdout=self._log, stderr=subprocess.STDOUT)

    def wait(self, timeout: float = 180.0) -> Server:
        """Until /health answers (the model loads meanwhile; do other work before calling)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"seer serve exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("seer serve did not start in time")
            time.sleep(0.1)
        return self

    def stop(self, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode


def data_uri(image) -> str:
    """A PIL image or an image file as a data:image/png;base64 URI."""
    if isinstance(image, (str, Path)):
        raw = Path(image).read_bytes()
    else:
        buf = io.BytesIO()
        image.save(buf, format="PNG")
        raw = buf.getvalue()
    return "data:image/png;base64," + base64.b64encode(raw).decode()


def metrics(url: str) -> dict[tuple[str, tuple], float]:
    """/metrics parsed by prometheus_client: (sample name, sorted labels) -> value (the key is
    sent: a server with --api-key guards /metrics, one without ignores it)."""
    from prometheus_client.parser import text_string_to_metric_families

    r = httpx.get(f"{url}/metrics", headers={"Authorization": f"Bearer {KEY}"}, timeout=10)
    text = r.raise_for_status().text
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def total(m: dict, name: str, **labels) -> float:
    """Sum of the samples called `name` whose labels include `labels`."""
    want = set(labels.items())
    return sum(v for (n, lab), v in m.items() if n == name and want <= set(lab))
