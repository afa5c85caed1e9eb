"""Cloud machine types: which GPU, how many per node, the link inside and the network out.

A manifest rarely carries ``nvidia-smi topo -m``; it names an instance type or a node label.
This table turns those into what the topology checks need: GPUs per node (where a TP group
stops being intra-node), the intra-node link class, and the network bandwidth per GPU
(the per-GPU share of the instance's advertised network, decimal Gb/s → bytes/s).
Each row cites the provider's instance page it restates.
"""

from __future__ import annotations

from collections.abc import Mapping

from tpcheck.hardware.gpus import GPU, WORD_OR_DASH, dashed, find_gpu, is_dashed
from tpcheck.record import record


@record
class Machine:
    key: str  # normalized instance type, e.g. "p5.48xlarge"
    provider: str  # aws | gcp | azure | oci
    gpu: str  # GPUS key
    gpus: int  # per node
    intra_link: str  # LINKS key between GPUs of one node
    network_gbps: float  # whole instance, decimal Gb/s (GPU fabric where separate)
    source: str
    aliases: tuple[str, ...] = ()
    nvlink_domain: int = 0  # 0: the GPU's own (GPU.nvlink_domain) or 1 without NVLink

    @property
    def network_per_gpu(self) -> float:
        """Bytes/s one GPU gets of the node's network when all GPUs talk at once."""
        return self.network_gbps * 1e9 / 8 / self.gpus


_AWS_P4 = "AWS EC2 P4 instances page"
_AWS_P5 = "AWS EC2 P5 instances page"
_AWS_P6 = "AWS EC2 P6 instances page"
_AWS_G5 = "AWS EC2 G5 instances page"
_AWS_G6 = "AWS EC2 G6 instances page"
_AWS_G6E = "AWS EC2 G6e instances page"
_GCP_GPU = "Google Cloud 'GPU machine types' page (accelerator-optimized machine family)"
_AZ_ND_H100 = "Azure 'ND H100 v5 series' page"
_AZ_ND_H200 = "Azure 'ND H200 v5 series' page"
_AZ_ND_A100 = "Azure 'ND A100 v4 series' / 'NDm A100 v4 series' pages"
_AZ_NC_A100 = "Azure 'NC A100 v4 series' page"
_AZ_NC_H100 = "Azure 'NCads H100 v5 series' page"
_AZ_MI300X = "Azure 'ND MI300X v5 series' page"
_OCI = "Oracle Cloud 'Compute shapes' page (bare metal GPU shapes)"


def _m(key: str, provider: str, gpu: str, gpus: int, link: str, gbps: float, source: str,
       *aliases: str, domain: int = 0) -> Machine:
    return Machine(key, provider, gpu, gpus, link, gbps, source, aliases, domain)


MACHINES: tuple[Machine, ...] = (
    # ---------------------------------------------------------------- AWS
    _m("p4d.24xlarge", "aws", "a100-sxm-40gb", 8, "nvlink3", 400, _AWS_P4, "p4d"),
    _m("p4de.24xlarge", "aws", "a100-sxm-80gb", 8, "nvlink3", 400, _AWS_P4, "p4de"),
    _m("p5.48xlarge", "aws", "h100-sxm", 8, "nvlink4", 3200, _AWS_P5, "p5"),
    _m("p5.4xlarge", "aws", "h100-sxm", 1, "nvlink4", 100, _AWS_P5),
    _m("p5e.48xlarge", "aws", "h200", 8, "nvlink4", 3200, _AWS_P5, "p5e"),
    _m("p5en.48xlarge", "aws", "h200", 8, "nvlink4", 3200, _AWS_P5, "p5en"),
    _m("p6-b200.48xlarge", "aws", "b200", 8, "nvlink5", 3200, _AWS_P6, "p6-b200"),
    _m("g5.xlarge", "aws", "a10g", 1, "pcie4", 10, _AWS_G5),
    _m("g5.2xlarge", "aws", "a10g", 1, "pcie4", 10, _AWS_G5),
    _m("g5.4xlarge", "aws", "a10g", 1, "pcie4", 25, _AWS_G5),
    _m("g5.8xlarge", "aws", "a10g", 1, "pcie4", 25, _AWS_G5),
    _m("g5.16xlarge", "aws", "a10g", 1, "pcie4", 25, _AWS_G5),
    _m("g5.12xlarge", "aws", "a10g", 4, "pcie4", 40, _AWS_G5),
    _m("g5.24xlarge", "aws", "a10g", 4, "pcie4", 50, _AWS_G5),
    _m("g5.48xlarge", "aws", "a10g", 8, "pcie4", 100, _AWS_G5, "g5"),
    _m("g6.xlarge", "aws", "l4", 1, "pcie4", 10, _AWS_G6),
    _m("g6.2xlarge", "aws", "l4", 1, "pcie4", 10, _AWS_G6),
    _m("g6.4xlarge", "aws", "l4", 1, "pcie4", 25, _AWS_G6),
    _m("g6.8xlarge", "aws", "l4", 1, "pcie4", 25, _AWS_G6),
    _m("g6.16xlarge", "aws", "l4", 1, "pcie4", 25, _AWS_G6),
    _m("g6.12xlarge", "aws", "l4", 4, "pcie4", 40, _AWS_G6),
    _m("g6.24xlarge", "aws", "l4", 4, "pcie4", 50, _AWS_G6),
    _m("g6.48xlarge", "aws", "l4", 8, "pcie4", 100, _AWS_G6, "g6"),
    _m("g6e.xlarge", "aws", "l40s", 1, "pcie4", 20, _AWS_G6E),
    _m("g6e.2xlarge", "aws", "l40s", 1, "pcie4", 20, _AWS_G6E),
    _m("g6e.4xlarge", "aws", "l40s", 1, "pcie4", 20, _AWS_G6E),
    _m("g6e.8xlarge", "aws", "l40s", 1, "pcie4", 25, _AWS_G6E),
    _m("g6e.16xlarge", "aws", "l40s", 1, "pcie4", 35, _AWS_G6E),
    _m("g6e.12xlarge", "aws", "l40s", 4, "pcie4", 100, _AWS_G6E),
    _m("g6e.24xlarge", "aws", "l40s", 4, "pcie4", 200, _AWS_G6E),
    _m("g6e.48xlarge", "aws", "l40s", 8, "pcie4", 400, _AWS_G6E, "g6e"),
    # ---------------------------------------------------------------- GCP
    _m("a2-highgpu-1g", "gcp", "a100-sxm-40gb", 1, "nvlink3", 24, _GCP_GPU),
    _m("a2-highgpu-2g", "gcp", "a100-sxm-40gb", 2, "nvlink3", 32, _GCP_GPU),
    _m("a2-highgpu-4g", "gcp", "a100-sxm-40gb", 4, "nvlink3", 50, _GCP_GPU),
    _m("a2-highgpu-8g", "gcp", "a100-sxm-40gb", 8, "nvlink3", 100, _GCP_GPU, "a2-highgpu"),
    _m("a2-megagpu-16g", "gcp", "a100-sxm-40gb", 16, "nvlink3", 100, _GCP_GPU, "a2-megagpu",
       domain=16),
    _m("a2-ultragpu-1g", "gcp", "a100-sxm-80gb", 1, "nvlink3", 24, _GCP_GPU),
    _m("a2-ultragpu-2g", "gcp", "a100-sxm-80gb", 2, "nvlink3", 32, _GCP_GPU),
    _m("a2-ultragpu-4g", "gcp", "a100-sxm-80gb", 4, "nvlink3", 50, _GCP_GPU),
    _m("a2-ultragpu-8g", "gcp", "a100-sxm-80gb", 8, "nvlink3", 100, _GCP_GPU, "a2-ultragpu"),
    _m("a3-highgpu-1g", "gcp", "h100-sxm", 1, "nvlink4", 25, _GCP_GPU),
    _m("a3-highgpu-2g", "gcp", "h100-sxm", 2, "nvlink4", 50, _GCP_GPU),
    _m("a3-highgpu-4g", "gcp", "h100-sxm", 4, "nvlink4", 100, _GCP_GPU),
    # 8g: 4 x 200 Gb/s GPU NICs (GPUDirect-TCPX) besides the 200 Gb/s host NIC
    _m("a3-highgpu-8g", "gcp", "h100-sxm", 8, "nvlink4", 800, _GCP_GPU, "a3-highgpu"),
    _m("a3-edgegpu-8g", "gcp", "h100-sxm", 8, "nvlink4", 800, _GCP_GPU, "a3-edgegpu"),
    # 8 x 200 Gb/s GPU NICs (GPUDirect-TCPXO)
    _m("a3-megagpu-8g", "gcp", "h100-sxm", 8, "nvlink4", 1600, _GCP_GPU, "a3-megagpu"),
    # 8 x 400 Gb/s RoCE GPU NICs
    _m("a3-ultragpu-8g", "gcp", "h200", 8, "nvlink4", 3200, _GCP_GPU, "a3-ultragpu"),
    _m("a4-highgpu-8g", "gcp", "b200", 8, "nvlink5", 3200, _GCP_GPU, "a4-highgpu"),
    _m("g2-standard-4", "gcp", "l4", 1, "pcie4", 10, _GCP_GPU),
    _m("g2-standard-8", "gcp", "l4", 1, "pcie4", 16, _GCP_GPU),
    _m("g2-standard-12", "gcp", "l4", 1, "pcie4", 16, _GCP_GPU),
    _m("g2-standard-16", "gcp", "l4", 1, "pcie4", 32, _GCP_GPU),
    _m("g2-standard-32", "gcp", "l4", 1, "pcie4", 32, _GCP_GPU),
    _m("g2-standard-24", "gcp", "l4", 2, "pcie4", 32, _GCP_GPU),
    _m("g2-standard-48", "gcp", "l4", 4, "pcie4", 50, _GCP_GPU),
    _m("g2-standard-96", "gcp", "l4", 8, "pcie4", 100, _GCP_GPU, "g2"),
    # ---------------------------------------------------------------- Azure
    # ND v5 / ND A100 v4: one InfiniBand port per GPU (8 x 400 NDR / 8 x 200 HDR)
    _m("standard-nd96isr-h100-v5", "azure", "h100-sxm", 8, "nvlink4", 3200, _AZ_ND_H100,
       "nd-h100-v5", "ndh100v5"),
    _m("standard-nd96isr-h200-v5", "azure", "h200", 8, "nvlink4", 3200, _AZ_ND_H200,
       "nd-h200-v5", "ndh200v5"),
    _m("standard-nd96asr-v4", "azure", "a100-sxm-40gb", 8, "nvlink3", 1600, _AZ_ND_A100,
       "nd-a100-v4", "nda100v4", "standard-nd96asr-a100-v4"),
    _m("standard-nd96amsr-a100-v4", "azure", "a100-sxm-80gb", 8, "nvlink3", 1600, _AZ_ND_A100,
       "ndm-a100-v4", "ndma100v4"),
    _m("standard-nd96isr-mi300x-v5", "azure", "mi300x", 8, "infinity-fabric", 3200, _AZ_MI300X,
       "nd-mi300x-v5", "ndmi300xv5"),
    _m("standard-nc24ads-a100-v4", "azure", "a100-pcie-80gb", 1, "pcie4", 20, _AZ_NC_A100),
    _m("standard-nc48ads-a100-v4", "azure", "a100-pcie-80gb", 2, "pcie4", 40, _AZ_NC_A100),
    _m("standard-nc96ads-a100-v4", "azure", "a100-pcie-80gb", 4, "pcie4", 80, _AZ_NC_A100,
       "nc-a100-v4", "nca100v4"),
    _m("standard-nc40ads-h100-v5", "azure", "h100-nvl", 1, "pcie5", 40, _AZ_NC_H100),
    _m("standard-nc80adis-h100-v5", "azure", "h100-nvl", 2, "pcie5", 80, _AZ_NC_H100,
       "nc-h100-v5", "ncadsh100v5"),
    # ---------------------------------------------------------------- OCI
    _m("bm-gpu-h100-8", "oci", "h100-sxm", 8, "nvlink4", 3200, _OCI),
    _m("bm-gpu-h200-8", "oci", "h200", 8, "nvlink4", 3200, _OCI),
    _m("bm-gpu-a100-v2-8", "oci", "a100-sxm-80gb", 8, "nvlink3", 1600, _OCI),
    _m("bm-gpu4-8", "oci", "a100-sxm-40gb", 8, "nvlink3", 1600, _OCI),
)


def _norm(s: str) -> str:
    """Lower-case; ``_``, spaces and OCI's dots become ``-``, AWS's size dot is kept."""
    n = s.strip().lower()
    if is_dashed(n):
        return n  # already normal (no dot: no AWS size either), as most of the table's names
    return n if is_aws_size(n) else dashed(n)


# AWS's instance-type spelling, FAMILY.SIZE (p5.48xlarge, g6e.metal-48xl), as a pattern: the
# tests hold is_aws_size to it (its compile was ~0.7 million instructions of a lint).
AWS_SIZE = r"([a-z0-9-]+)\.(\d*[a-z]*large|metal[a-z0-9-]*)"
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")


def is_aws_size(n: str) -> bool:
    """Whether ``re.fullmatch(AWS_SIZE, n)``, with str methods (``\\d``: ``str.isdecimal``)."""
    family, dot, size = n.partition(".")
    if not dot or not family or not WORD_OR_DASH.issuperset(family):
        return False
    if size.startswith("metal") and WORD_OR_DASH.issuperset(size):
        return True
    if not size.endswith("large"):
        return False
    core = size[:-5]
    i = 0
    while i < len(core) and core[i].isdecimal():
        i += 1
    return _LOWER.issuperset(core[i:])


_BY_NAME: dict[str, Machine] = {}  # filled on the first lookup: a manifest that names no
# instance type never pays for normalising every name (two patterns compiled, ~4 million
# instructions of a one-file lint)


def _by_name() -> dict[str, Machine]:
    if not _BY_NAME:
        for mc in MACHINES:
            for n in (mc.key, *mc.aliases):
                _BY_NAME.setdefault(_norm(n), mc)
    return _BY_NAME


def find_machine(name: str) -> Machine | None:
    """Instance type (``p5.48xlarge``, ``a3-highgpu-8g``, ``Standard_ND96isr_H100_v5``,
    ``BM.GPU.H100.8``) or a family name that has one multi-GPU size (``p5``, ``nd-h100-v5``)."""
    return _by_name().get(_norm(name))


def machine_gpu(m: Machine) -> GPU:
    g = find_gpu(m.gpu)
    if g is None:  # a catalog bug, caught by the tests
        raise KeyError(f"machine {m.key} names unknown GPU {m.gpu}")
    return g


# Node labels that name the instance type, then labels that name only the GPU product.
INSTANCE_LABELS = (
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
    "karpenter.k8s.aws/instance-type",
)
GPU_LABELS = (
    "nvidia.com/gpu.product",
    "cloud.google.com/gke-accelerator",
    "karpenter.k8s.aws/instance-gpu-name",
    "gpu.nvidia.com/model",
    "accelerator",
)


@record
class NodeHint:
    """What node labels say: the GPU, and the machine when an instance type is named."""

    gpu: GPU
    machine: Machine | None
    label: str  # which label decided


def from_labels(labels: Mapping[str, str]) -> NodeHint | None:
    """GPU (and machine, when known) from a nodeSelector / node-affinity label map."""
    for lab in INSTANCE_LABELS:
        v = labels.get(lab)
        if v:
            m = find_machine(v)
            if m is not None:
                return NodeHint(machine_gpu(m), m, lab)
    for lab in GPU_LABELS:
        v = labels.get(lab)
        if v:
            g = find_gpu(v)
            if g is not None:
                return NodeHint(g, None, lab)
    return None
