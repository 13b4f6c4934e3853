"""What machine a benchmark ran on: recorded with every figure we publish."""

from __future__ import annotations

import os
import platform

import torch


def machine_info() -> dict:
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
    }


def provenance() -> dict:
    """What produced a record: the machine (`machine_info`), Seer's version and the time."""
    import datetime

    import seer

    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return {**machine_info(), "seer_version": seer.__version__, "created": now}
