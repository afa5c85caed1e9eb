"""GPU catalog: spellings resolve, figures are the datasheets', sizes parse."""

from __future__ import annotations

import pytest

from tpcheck.hardware.gpus import GB, GIB, GPUS, MIB, find_gpu, gpu_names, parse_size
from tpcheck.hardware.links import find_link

REQUIRED = ["h100-sxm", "h100-pcie", "h200", "h20", "a100-sxm-40gb", "a100-sxm-80gb",
            "a100-pcie-40gb", "a100-pcie-80gb", "l40s", "l4", "a10g", "a10", "b200", "gb200",
            "mi300x", "rtx-4090", "l40", "t4", "v100-sxm-16gb"]


def test_required_rows_present_and_sane() -> None:
    names = gpu_names()
    for key in REQUIRED:
        assert key in names
    for g in GPUS:
        assert g.source, g.key
        assert g.usable_note, g.key
        # the driver never shows more than ~marketed+8% (binary-sized stacks) and never < 85%
        assert 0.85 * g.hbm_bytes < g.usable_bytes < 1.08 * g.hbm_bytes, g.key
        if g.smi_mib is not None:
            assert g.usable_bytes <= g.smi_mib * MIB, g.key
        assert find_link(g.link) is not None, g.link
        assert find_gpu(g.key) is g


def test_aliases_unique() -> None:
    seen: dict[str, str] = {}
    for g in GPUS:
        for a in (g.key, *g.aliases):
            assert seen.setdefault(a, g.key) == g.key, f"{a} in {seen[a]} and {g.key}"


def test_h100_figures() -> None:
    g = find_gpu("H100")
    assert g is not None and g.key == "h100-sxm"
    # 85,031,714,816 B / 2**30 = 79.19 GiB, the total vLLM logs on an 80GB H100
    assert round(g.usable_bytes / GIB, 2) == 79.19
    assert g.smi_mib == 81559  # nvidia-smi total (sglang-0.5.23.md)
    assert g.link_bandwidth == 450e9  # 900 GB/s bidirectional / 2
    assert g.nvlink_domain == 8


def test_link_bandwidths_one_way() -> None:
    a100 = find_gpu("a100-sxm-80gb")
    assert a100 is not None and a100.link_bandwidth == 300e9  # 600 GB/s bidir / 2
    pcie = find_gpu("l40s")
    assert pcie is not None and pcie.link_bandwidth == 32e9 and pcie.nvlink_domain == 1
    h100p = find_gpu("h100-pcie")
    assert h100p is not None and h100p.link_bandwidth == 64e9
    gb = find_gpu("gb200")
    assert gb is not None and gb.nvlink_domain == 72 and gb.link_bandwidth == 900e9


def test_reported_usable_totals() -> None:
    # A100-SXM4-40GB deviceQuery: 42,298,834,944 bytes = 39.39 GiB
    a = find_gpu("nvidia-tesla-a100")
    assert a is not None and a.usable_bytes == 42_298_834_944
    assert round(a.usable_bytes / GIB, 2) == 39.39
    # 'Free memory on device (0.49/79.32 GiB)' on A100 80GB
    b = find_gpu("nvidia-a100-80gb")
    assert b is not None and round(b.usable_bytes / GIB, 2) == 79.32
    # L4: 23034 MiB - 454 MiB = 22580 MiB = 22.05 GiB
    l4 = find_gpu("nvidia-l4")
    assert l4 is not None and l4.usable_bytes == 22580 * MIB
    assert round(l4.usable_bytes / GIB, 2) == 22.05


# Spellings used in manifests: every one of these appears in the corpus or the issue text.
SPELLINGS = {
    "H100": "h100-sxm",
    "NVIDIA-H100-80GB-HBM3": "h100-sxm",  # nvidia.com/gpu.product
    "nvidia-h100-80gb": "h100-sxm",  # cloud.google.com/gke-accelerator
    "nvidia-h100-mega-80gb": "h100-sxm",
    "nvidia-tesla-a100": "a100-sxm-40gb",  # GKE A2 (40GB)
    "nvidia-a100-80gb": "a100-sxm-80gb",
    "A100-80GB": "a100-sxm-80gb",  # SkyPilot accelerators
    "nvidia-l4": "l4",
    "nvidia-l40s": "l40s",
    "NVIDIA-A10G": "a10g",
    "nvidia-h200-141gb": "h200",
    "H200": "h200",  # gpu.nvidia.com/model
    "nvidia-b200": "b200",
    "NVIDIA-A100-SXM4-80GB": "a100-sxm-80gb",
    "NVIDIA-A100-SXM4-80GB-SHARED": "a100-sxm-80gb",  # GFD time-slicing suffix
    "NVIDIA-A100-80GB-PCIe": "a100-pcie-80gb",
    "NVIDIA-L40S": "l40s",
    "Tesla-T4": "t4",
    "nvidia-tesla-t4": "t4",
    "NVIDIA-GeForce-RTX-4090": "rtx-4090",
    "a10g": "a10g",  # karpenter.k8s.aws/instance-gpu-name
    "AMD Instinct MI300X": "mi300x",
    "NVIDIA H20": "h20",
}


@pytest.mark.parametrize(("spelling", "key"), sorted(SPELLINGS.items()))
def test_spellings(spelling: str, key: str) -> None:
    g = find_gpu(spelling)
    assert g is not None and g.key == key


@pytest.mark.parametrize("label", ["tpu-v6e-slice", "tpu-v5-lite-podslice", "",
                                   "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "nvidia.com/gpu"])
def test_not_a_catalog_gpu(label: str) -> None:
    assert find_gpu(label) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("80GB", 80 * GB),
        ("80 GB", 80 * GB),
        ("80GiB", 80 * GIB),
        ("80gib", 80 * GIB),
        ("79.2 GiB", round(79.2 * GIB)),  # 85,040,352,461 B
        ("85031714816", 85_031_714_816),
        ("512MiB", 512 * MIB),
        ("1.5T", 1_500_000_000_000),
        ("4G", 4 * GB),
        ("0", 0),
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("junk", ["", "GB", "eighty", "80 XB", "-1GB", "1.5", "80GB extra"])
def test_parse_size_junk(junk: str) -> None:
    with pytest.raises(ValueError) as ei:
        parse_size(junk)
    assert "\n" not in str(ei.value)
    assert "not a size" in str(ei.value)
