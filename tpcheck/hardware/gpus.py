"""GPU catalog: memory, bandwidth and FLOP/s per accelerator, each row with its source.

``usable_bytes`` is the total memory the driver reports (what vLLM multiplies by
gpu_memory_utilization), which is less than the marketed capacity.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

GB = 10**9
GIB = 1 << 30


@dataclass(frozen=True)
class GPU:
    key: str  # catalog name, e.g. "h100-sxm"
    name: str  # product name
    hbm_bytes: int  # marketed capacity
    usable_bytes: int  # total as the driver reports it (cudaMemGetInfo total)
    hbm_bandwidth: float  # bytes/s
    link: str  # nvlink4, nvlink3, nvlink5, pcie4, pcie5, infinity-fabric
    link_bandwidth: float  # per GPU, one direction, bytes/s
    bf16_flops: float  # dense BF16 FLOP/s
    aliases: tuple[str, ...] = ()
    source: str = ""
    nvlink_domain: int = 8  # GPUs that share one NVLink/NVSwitch domain (GB200 NVL72: 72)


GPUS: tuple[GPU, ...] = (
    GPU(
        key="h100-sxm",
        name="NVIDIA H100 SXM5 80GB",
        hbm_bytes=80 * GB,
        usable_bytes=85_031_714_816,  # 79.19 GiB reported by torch.cuda.mem_get_info
        hbm_bandwidth=3.35e12,
        link="nvlink4",
        link_bandwidth=450 * GB,
        bf16_flops=989.4e12,
        aliases=("h100", "h100-80gb", "h100-sxm5", "nvidia-h100-80gb-hbm3", "nvidia-h100-80gb",
                 "h100-80gb-hbm3", "nvidia-h100", "nvidia-h100-sxm5-80gb", "h100-mega-80gb",
                 "nvidia-h100-mega-80gb"),
        source="NVIDIA H100 datasheet (SXM5: 80 GB HBM3, 3.35 TB/s, NVLink 900 GB/s "
        "bidirectional, 989 TFLOPS BF16 dense)",
    ),
)


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", s.strip().lower()).strip("-")


def find_gpu(name: str) -> GPU | None:
    """Catalog key, alias, or a spelling people write (``H100``, ``NVIDIA-H100-80GB-HBM3``)."""
    n = _norm(name)
    for g in GPUS:
        if n == g.key or n in g.aliases:
            return g
    return None
