"""GPUs as the simulator prices them: datasheet peaks and the cost of starting kernels.

Every number is a published constant, named with its source; nothing here is fitted. The
simulator's two efficiency factors (`Efficiency`: the share of the compute peak and of the
memory bandwidth a forward reaches) are fitted separately, on a stated third of the development
set of published points (`benchmarks/validate_sim.py`), and carried with their error on a
separate test set.

- Dense bf16 tensor-core FLOP/s (no structured sparsity) and HBM bandwidth: NVIDIA's data
  sheets (A100: "NVIDIA A100 Tensor Core GPU" data sheet, SXM4 80 GB, 312 TFLOPS bf16, 2,039 GB/s;
  H100: "NVIDIA H100 Tensor Core GPU" data sheet, SXM5, 989 TFLOPS bf16 dense (1,979 with
  sparsity), 3.35 TB/s; H200: "NVIDIA H200 Tensor Core GPU" data sheet, SXM, 989 TFLOPS bf16
  dense, 4.8 TB/s; RTX 5070: "NVIDIA RTX Blackwell GPU Architecture" whitepaper, 988 AI TOPS
  (FP4, sparse) = 61.7 TFLOPS dense FP16/bf16 with FP32 accumulation on GeForce, 672 GB/s GDDR7).
- Kernel launch: ~5 us per kernel launched from the host in eager PyTorch (the CUDA C++ Best
  Practices Guide: launch overhead of "a few microseconds"; the PyTorch blog "Accelerating
  PyTorch with CUDA Graphs", 2021, shows host launch gaps of that size on A100). A CUDA-graph
  replay launches the whole captured forward at once: priced at `graph_s` (~10 us) per forward.
  Eager and varlen forwards pay `launch_s` x `KERNELS_PER_LAYER` x layers; static forwards on
  a GPU replay a graph. These are orders of magnitude, not fitted; at batch 1 on an 8 B model
  they are ~2 ms of a ~10-60 ms forward.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from seer.errors import SeerError

KERNELS_PER_LAYER = 14  # eager launches per transformer layer: 2 norms, q/k/v/o, rope, attention,
# gate/up/act/down, 2 residual adds (one fused qkv or gate-up saves a few; stated, not fitted)


@dataclass(slots=True, frozen=True)
class GPU:
    """One accelerator's published peaks."""

    name: str  # as printed in tables
    flops: float  # dense bf16 tensor-core FLOP/s (datasheet)
    bandwidth: float  # device memory bytes/s (datasheet)
    memory: float  # device memory bytes
    launch_s: float = 5e-6  # one eager kernel launch from the host
    graph_s: float = 10e-6  # one CUDA-graph replay (the whole forward)
    source: str = ""  # where the peaks come from


GPUS: dict[str, GPU] = {
    "a100": GPU(
        "A100-SXM4-80GB",
        312e12,
        2.039e12,
        80e9,
        source="NVIDIA A100 data sheet: 312 TFLOPS bf16 dense, 2,039 GB/s HBM2e",
    ),
    "h100": GPU(
        "H100-SXM5-80GB",
        989e12,
        3.35e12,
        80e9,
        source="NVIDIA H100 data sheet: 989 TFLOPS bf16 dense, 3.35 TB/s HBM3",
    ),
    "h200": GPU(
        "H200-SXM-141GB",
        989e12,
        4.8e12,
        141e9,
        source="NVIDIA H200 data sheet: 989 TFLOPS bf16 dense, 4.8 TB/s HBM3e",
    ),
    "rtx5070": GPU(
        "RTX 5070 (12 GB)",
        61.7e12,
        672e9,
        12e9,
        source="NVIDIA RTX Blackwell whitepaper: 61.7 TFLOPS fp16/bf16 dense "
        "(FP32 accumulate), 672 GB/s GDDR7",
    ),
}


@dataclass(slots=True, frozen=True)
class Efficiency:
    """The share of each peak a forward reaches (the simulator's only fitted numbers)."""

    compute: float = 1.0  # achieved / peak FLOP/s of the dense matmuls and attention
    memory: float = 1.0  # achieved / peak bytes/s of the weight and K/V reads

    def __post_init__(self) -> None:
        if not (0 < self.compute <= 1 and 0 < self.memory <= 1):
            raise SeerError(f"efficiencies must be in (0, 1], got {self.compute}, {self.memory}")


def gpu(name: str) -> GPU:
    """A named GPU (a100 | h100 | h200 | rtx5070), or one `SeerError` line."""
    key = name.lower().replace("-", "").replace(" ", "")
    if key not in GPUS:
        raise SeerError(f"unknown gpu {name!r}: choose one of {', '.join(GPUS)}")
    return GPUS[key]


VARIANTS = ("ti", "super")  # a word after the model number that makes it another card
PARTS = {"mig", "laptop", "mobile", "max", "maxq"}  # a slice or a cut-down part: no profile


def profile_of(device_name: str) -> str | None:
    """The profile (a key of `GPUS`) a device's name names, matched word by word so that
    "NVIDIA H100 80GB HBM3" is h100, "NVIDIA A100-SXM4-80GB" a100 and "NVIDIA GeForce RTX 5070"
    rtx5070, while "NVIDIA GH200 480GB" and "RTX 5070 Ti" are none; None when none matches. A
    family's form factors (H100 PCIe, NVL) take its profile, whose peaks are the SXM data
    sheet's."""
    words = re.findall(r"[a-z0-9]+", device_name.lower())
    if set(words) & PARTS:  # a slice or a laptop part: the full card's peaks would be wrong
        return None
    for i in range(len(words)):
        for n in (1, 2):  # "h100", or "rtx" + "5070"
            key, after = "".join(words[i : i + n]), words[i + n : i + n + 1]
            if key in GPUS and not (after and after[0] in VARIANTS):
                return key
    return None
