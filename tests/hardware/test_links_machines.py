"""Link classes and cloud machine types; every label in the corpus resolves."""

from __future__ import annotations

import re

import pytest

from tpcheck.hardware.gpus import find_gpu
from tpcheck.hardware.links import LINKS, find_link
from tpcheck.hardware.machines import (
    MACHINES,
    find_machine,
    from_labels,
    machine_gpu,
)


def test_links() -> None:
    nv = find_link("nvlink")
    assert nv is not None and nv.key == "nvlink4" and nv.bandwidth == 450e9
    ndr = find_link("ib-ndr")
    assert ndr is not None and ndr.bandwidth == 50e9  # 400 Gb/s / 8
    assert ndr.inter_node and not nv.inter_node
    hdr = find_link("ib-hdr")
    assert hdr is not None and hdr.bandwidth == 25e9
    p5 = find_link("pcie5")
    assert p5 is not None and p5.bandwidth == 64e9
    p4 = find_link("PCIe Gen4")
    assert p4 is not None and p4.bandwidth == 32e9
    assert find_link("efa") is not None and find_link("roce-200") is not None
    assert find_link("infinity-fabric") is not None and find_link("nvlink3") is not None
    assert find_link("carrier-pigeon") is None
    for lk in LINKS:
        assert lk.alpha > 0 and lk.source
    # α: in-node NVLink 10 µs (seed §7), network 30 µs (seed), both stated as assumptions
    assert nv.alpha == 10e-6 and ndr.alpha == 30e-6


def test_machines_resolve_gpus() -> None:
    for m in MACHINES:
        g = machine_gpu(m)
        assert find_link(m.intra_link) is not None
        assert m.gpus >= 1 and m.source
        if m.gpus > 1 and g.nvlink_domain == 1:
            assert m.intra_link.startswith("pcie"), m.key


def test_machine_rows() -> None:
    g5 = find_machine("g5.12xlarge")
    assert g5 is not None and g5.gpu == "a10g" and g5.gpus == 4 and g5.intra_link == "pcie4"
    p5 = find_machine("p5.48xlarge")
    assert p5 is not None and p5.gpus == 8 and p5.gpu == "h100-sxm"
    # 3200 Gb/s EFA over 8 GPUs = 400 Gb/s = 50 GB/s per GPU
    assert p5.network_per_gpu == 50e9
    p4d = find_machine("p4d")
    assert p4d is not None and p4d.gpu == "a100-sxm-40gb"
    assert p4d.network_per_gpu == 6.25e9  # 400 Gb/s / 8 GPUs / 8 bits
    a3 = find_machine("a3-megagpu-8g")
    assert a3 is not None and a3.network_per_gpu == 25e9  # 1600 Gb/s / 8 / 8
    nd = find_machine("Standard_ND96isr_H100_v5")
    assert nd is not None and nd.gpu == "h100-sxm" and nd.network_per_gpu == 50e9
    nc = find_machine("Standard_NC96ads_A100_v4")
    assert nc is not None and nc.gpu == "a100-pcie-80gb" and nc.gpus == 4
    for name, gpu, n in [("p4de", "a100-sxm-80gb", 8), ("p5e", "h200", 8), ("p5en", "h200", 8),
                         ("g6.48xlarge", "l4", 8), ("g6e.12xlarge", "l40s", 4),
                         ("a2-highgpu-8g", "a100-sxm-40gb", 8),
                         ("a2-ultragpu-8g", "a100-sxm-80gb", 8), ("a3-highgpu-8g", "h100-sxm", 8),
                         ("g2-standard-48", "l4", 4), ("ND-A100-v4", "a100-sxm-40gb", 8),
                         ("g5.8xlarge", "a10g", 1), ("BM.GPU.H100.8", "h100-sxm", 8)]:
        m = find_machine(name)
        assert m is not None, name
        assert (m.gpu, m.gpus) == (gpu, n), name
    assert find_machine("m5.large") is None


def test_from_labels() -> None:
    h = from_labels({"node.kubernetes.io/instance-type": "g5.12xlarge"})
    assert h is not None and h.machine is not None and h.machine.gpus == 4
    assert h.gpu.key == "a10g"
    h = from_labels({"cloud.google.com/gke-accelerator": "nvidia-l4"})
    assert h is not None and h.gpu.key == "l4" and h.machine is None
    assert from_labels({"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice"}) is None
    assert from_labels({"cloud.google.com/gke-accelerator": "tpu-v6e-slice"}) is None


# Labels and instance types found in the shared corpus of real manifests (grep, this session):
CORPUS_GPU_LABELS = ["nvidia-l4", "nvidia-h100-80gb", "NVIDIA-H100-80GB-HBM3",
                     "nvidia-tesla-a100", "nvidia-h100-mega-80gb", "nvidia-b200",
                     "nvidia-a100-80gb", "H100", "H200", "A100-80GB"]
CORPUS_INSTANCES = ["g5.8xlarge", "BM.GPU.H100.8", "a3-highgpu-8g"]
CORPUS_TPU = ["tpu-v6e-slice", "tpu-v5-lite-podslice"]


def test_corpus_labels_static() -> None:
    for v in CORPUS_GPU_LABELS:
        assert find_gpu(v) is not None, v
    for v in CORPUS_INSTANCES:
        assert find_machine(v) is not None, v
    for v in CORPUS_TPU:
        assert find_gpu(v) is None and find_machine(v) is None


from tests.shared import CORPUS  # noqa: E402

_LABEL = re.compile(
    r"(nvidia\.com/gpu\.product|cloud\.google\.com/gke-(?:tpu-)?accelerator|"
    r"karpenter\.k8s\.aws/instance-gpu-name|gpu\.nvidia\.com/model|"
    r"node\.kubernetes\.io/instance-type|beta\.kubernetes\.io/instance-type|"
    r"karpenter\.k8s\.aws/instance-type)\"?\s*:\s*[\"']?([A-Za-z0-9_.-]+)"
)

_SKY = re.compile(r"^\s*accelerators:\s*\{?([A-Za-z0-9_.:, -]+)\}?\s*$", re.MULTILINE)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not present")
def test_corpus_labels_scan() -> None:
    found: set[tuple[str, str]] = set()
    for p in CORPUS.rglob("*"):
        if p.suffix not in (".yaml", ".yml", ".json") or not p.is_file():
            continue
        for key, val in _LABEL.findall(p.read_text(errors="replace")):
            found.add((key, val))
        for spec in _SKY.findall(p.read_text(errors="replace")):
            for item in spec.split(","):  # SkyPilot: "H100:8" or "{H200:8, A100-80GB:8}"
                found.add(("accelerators", item.strip().split(":")[0]))
    assert len(found) >= 8
    for key, val in sorted(found):
        if val.startswith("tpu-"):
            assert find_gpu(val) is None
        elif key.endswith("instance-type"):
            assert find_machine(val) is not None, (key, val)
        else:
            assert find_gpu(val) is not None, (key, val)
