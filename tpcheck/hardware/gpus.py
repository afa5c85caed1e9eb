"""GPU catalog: memory, bandwidth and FLOP/s per accelerator, each row with its source.

``usable_bytes`` is the total memory the driver reports (what vLLM multiplies by
gpu_memory_utilization), which is less than the marketed capacity. ``smi_mib`` is the
total ``nvidia-smi`` prints, which SGLang's capacity heuristics read; it is larger still
than ``usable_bytes`` because the driver keeps a few hundred MiB for itself.

Where no published start-up or OOM message gives the driver total for a card, the
figure is derived from ``smi_mib`` minus the reserve seen on sibling cards (466-700 MiB)
and ``usable_note`` says "derived". Spec figures are the vendor datasheet's; "dense"
BF16 is half the datasheet's with-sparsity number.
"""

from __future__ import annotations

import re

from tpcheck.deferred import lazy_re
from tpcheck.record import record

GB = 10**9
GIB = 1 << 30
MIB = 1 << 20


@record
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
    smi_mib: int | None = None  # total nvidia-smi prints (MiB), when known
    usable_note: str = ""  # where usable_bytes comes from (reported, or derived and how)


def _gib(x: float) -> int:
    return round(x * GIB)


def _derived(smi_mib: int, reserve_mib: int = 700) -> int:
    """Driver total when only nvidia-smi's is known: minus the reserve seen on sibling cards."""
    return (smi_mib - reserve_mib) * MIB



GPUS: tuple[GPU, ...] = (
    # ---------------------------------------------------------------- Hopper
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
                 "nvidia-h100-mega-80gb", "h100-sxm5-80gb", "h100-sxm-80gb"),
        source="NVIDIA H100 datasheet (SXM5: 80 GB HBM3, 3.35 TB/s, NVLink 900 GB/s "
        "bidirectional, 989 TFLOPS BF16 dense)",
        smi_mib=81559,
        usable_note="reported: 'Free memory on device (78.57/79.18 GiB)' and 79.19 GiB in "
        "observations/vllm-startup.jsonl; nvidia-smi 81559MiB in vllm#27508, TGI#2572",
    ),
    GPU(
        key="h100-pcie",
        name="NVIDIA H100 PCIe 80GB",
        hbm_bytes=80 * GB,
        usable_bytes=85_031_714_816,
        hbm_bandwidth=2.0e12,
        link="pcie5",
        link_bandwidth=64 * GB,
        bf16_flops=756.5e12,
        aliases=("h100-pcie-80gb", "nvidia-h100-pcie", "nvidia-h100-pcie-80gb", "h100pcie"),
        source="NVIDIA H100 datasheet (PCIe: 80 GB HBM2e, 2 TB/s, PCIe Gen5 128 GB/s, "
        "1,513 TFLOPS BF16 with sparsity); NVLink bridge pairs only",
        nvlink_domain=1,
        smi_mib=81559,
        usable_note="derived: same 81559 MiB nvidia-smi total as H100 SXM, so its 79.19 GiB",
    ),
    GPU(
        key="h100-nvl",
        name="NVIDIA H100 NVL 94GB",
        hbm_bytes=94 * GB,
        usable_bytes=_derived(95830),
        hbm_bandwidth=3.9e12,
        link="pcie5",
        link_bandwidth=64 * GB,
        bf16_flops=835.5e12,
        aliases=("h100-nvl-94gb", "nvidia-h100-nvl", "h100-94gb"),
        source="NVIDIA H100 datasheet (H100 NVL: 94 GB HBM3, 3.9 TB/s, PCIe Gen5, NVLink "
        "bridge 600 GB/s between pairs, 1,671 TFLOPS BF16 with sparsity)",
        nvlink_domain=1,
        smi_mib=95830,
        usable_note="derived: nvidia-smi 95830 MiB minus 700 MiB",
    ),
    GPU(
        key="h800",
        name="NVIDIA H800 SXM5 80GB",
        hbm_bytes=80 * GB,
        usable_bytes=85_031_714_816,
        hbm_bandwidth=3.35e12,
        link="nvlink4",
        link_bandwidth=200 * GB,
        bf16_flops=989.4e12,
        aliases=("h800-80gb", "nvidia-h800", "nvidia-h800-80gb-hbm3", "h800-sxm"),
        source="NVIDIA H800 product brief (H100 SXM die and memory; NVLink 400 GB/s "
        "bidirectional)",
        smi_mib=81559,
        usable_note="derived: same memory configuration as H100 SXM (79.19 GiB)",
    ),
    GPU(
        key="h200",
        name="NVIDIA H200 SXM 141GB",
        hbm_bytes=141 * GB,
        usable_bytes=_gib(139.72),
        hbm_bandwidth=4.8e12,
        link="nvlink4",
        link_bandwidth=450 * GB,
        bf16_flops=989.4e12,
        aliases=("h200-141gb", "h200-sxm", "nvidia-h200", "nvidia-h200-141gb",
                 "nvidia-h200-141gb-hbm3e", "h200-sxm-141gb"),
        source="NVIDIA H200 datasheet (141 GB HBM3e, 4.8 TB/s, NVLink 900 GB/s, "
        "1,979 TFLOPS BF16 with sparsity)",
        smi_mib=143771,
        usable_note="reported: 'Free memory on device (7.34/139.72 GiB)' in vllm#23192 "
        "(141 GB-class card); nvidia-smi 143771 MiB (engines/sglang-0.5.23.md)",
    ),
    GPU(
        key="h20",
        name="NVIDIA H20 96GB",
        hbm_bytes=96 * GB,
        usable_bytes=_derived(97871),
        hbm_bandwidth=4.0e12,
        link="nvlink4",
        link_bandwidth=450 * GB,
        bf16_flops=148e12,
        aliases=("h20-96gb", "nvidia-h20", "nvidia-h20-96gb"),
        source="NVIDIA H20 product brief (96 GB HBM3, 4.0 TB/s, NVLink 900 GB/s, "
        "148 TFLOPS BF16 dense)",
        smi_mib=97871,
        usable_note="derived: nvidia-smi 97871 MiB minus 700 MiB",
    ),
    GPU(
        key="gh200",
        name="NVIDIA GH200 96GB (GPU memory only)",
        hbm_bytes=96 * GB,
        usable_bytes=_derived(97871),
        hbm_bandwidth=4.0e12,
        link="nvlink4",
        link_bandwidth=450 * GB,
        bf16_flops=989.4e12,
        aliases=("gh200-96gb", "nvidia-gh200", "nvidia-gh200-480gb", "gh200-480gb"),
        source="NVIDIA GH200 Grace Hopper datasheet (96 GB HBM3, 4 TB/s, 990 TFLOPS BF16 "
        "dense); counts HBM only, not Grace LPDDR",
        nvlink_domain=1,
        smi_mib=97871,
        usable_note="derived: nvidia-smi 97871 MiB (96 GB HBM3 part) minus 700 MiB",
    ),
    # ---------------------------------------------------------------- Blackwell
    GPU(
        key="b200",
        name="NVIDIA B200 180GB",
        hbm_bytes=180 * GB,
        usable_bytes=_derived(183359),
        hbm_bandwidth=8.0e12,
        link="nvlink5",
        link_bandwidth=900 * GB,
        bf16_flops=2.25e15,
        aliases=("b200-180gb", "nvidia-b200", "nvidia-b200-180gb", "b200-sxm"),
        source="NVIDIA HGX B200 datasheet (180 GB HBM3e and 8 TB/s per GPU, NVLink5 1.8 TB/s "
        "bidirectional, 4.5 PFLOPS BF16 with sparsity)",
        smi_mib=183359,
        usable_note="derived: nvidia-smi 183359 MiB minus 700 MiB",
    ),
    GPU(
        key="gb200",
        name="NVIDIA GB200 NVL72 (per Blackwell GPU)",
        hbm_bytes=186 * GB,
        usable_bytes=_derived(189471),
        hbm_bandwidth=8.0e12,
        link="nvlink5",
        link_bandwidth=900 * GB,
        bf16_flops=2.5e15,
        aliases=("gb200-nvl72", "nvidia-gb200", "gb200-186gb", "nvidia-gb200-nvl72"),
        source="NVIDIA GB200 NVL72 datasheet (13.4 TB HBM3e / 72 GPUs, 8 TB/s per GPU, "
        "NVLink5 1.8 TB/s bidirectional in one 72-GPU domain, 360 PFLOPS BF16 sparse / 72)",
        nvlink_domain=72,
        smi_mib=189471,
        usable_note="derived: nvidia-smi 189471 MiB minus 700 MiB",
    ),
    # ---------------------------------------------------------------- Ampere
    GPU(
        key="a100-sxm-40gb",
        name="NVIDIA A100 SXM4 40GB",
        hbm_bytes=40 * GB,
        usable_bytes=42_298_834_944,
        hbm_bandwidth=1.555e12,
        link="nvlink3",
        link_bandwidth=300 * GB,
        bf16_flops=312e12,
        aliases=("a100", "a100-40gb", "a100-sxm4-40gb", "nvidia-a100-sxm4-40gb",
                 "nvidia-tesla-a100", "tesla-a100", "a100-sxm", "nvidia-a100-40gb"),
        source="NVIDIA A100 datasheet (SXM 40GB: HBM2 1,555 GB/s, NVLink 600 GB/s, "
        "312 TFLOPS BF16 dense)",
        smi_mib=40960,
        usable_note="reported: deviceQuery 'Total amount of global memory: 40339 MBytes "
        "(42298834944 bytes)' for A100-SXM4-40GB in bottlerocket#3873",
    ),
    GPU(
        key="a100-sxm-80gb",
        name="NVIDIA A100 SXM4 80GB",
        hbm_bytes=80 * GB,
        usable_bytes=_gib(79.32),
        hbm_bandwidth=2.039e12,
        link="nvlink3",
        link_bandwidth=300 * GB,
        bf16_flops=312e12,
        aliases=("a100-80gb", "a100-sxm4-80gb", "nvidia-a100-80gb", "nvidia-a100-sxm4-80gb",
                 "a100-80gb-sxm", "a100-sxm-80g"),
        source="NVIDIA A100 datasheet (SXM 80GB: HBM2e 2,039 GB/s, NVLink 600 GB/s, "
        "312 TFLOPS BF16 dense)",
        smi_mib=81920,
        usable_note="reported: 'Free memory on device (0.49/79.32 GiB)' on 2xA100 80GB in "
        "vllm-omni#276; nvidia-smi 81920MiB (modal-client#2797)",
    ),
    GPU(
        key="a100-pcie-40gb",
        name="NVIDIA A100 PCIe 40GB",
        hbm_bytes=40 * GB,
        usable_bytes=42_298_834_944,
        hbm_bandwidth=1.555e12,
        link="pcie4",
        link_bandwidth=32 * GB,
        bf16_flops=312e12,
        aliases=("a100-pcie", "nvidia-a100-pcie-40gb", "a100-pcie4-40gb", "nvidia-a100-pcie"),
        source="NVIDIA A100 datasheet (PCIe 40GB: 1,555 GB/s, PCIe Gen4 64 GB/s, "
        "312 TFLOPS BF16 dense)",
        nvlink_domain=1,
        smi_mib=40960,
        usable_note="derived: same 40960 MiB nvidia-smi total as A100 SXM4 40GB",
    ),
    GPU(
        key="a100-pcie-80gb",
        name="NVIDIA A100 PCIe 80GB",
        hbm_bytes=80 * GB,
        usable_bytes=_gib(79.32),
        hbm_bandwidth=1.935e12,
        link="pcie4",
        link_bandwidth=32 * GB,
        bf16_flops=312e12,
        aliases=("nvidia-a100-80gb-pcie", "nvidia-a100-pcie-80gb", "a100-80gb-pcie",
                 "a100-pcie4-80gb"),
        source="NVIDIA A100 datasheet (PCIe 80GB: HBM2e 1,935 GB/s, PCIe Gen4 64 GB/s, "
        "312 TFLOPS BF16 dense)",
        nvlink_domain=1,
        smi_mib=81920,
        usable_note="derived: same 81920 MiB nvidia-smi total as A100 SXM4 80GB",
    ),
    GPU(
        key="a10g",
        name="NVIDIA A10G 24GB",
        hbm_bytes=24 * GB,
        usable_bytes=_gib(21.99),
        hbm_bandwidth=600 * GB,
        link="pcie4",
        link_bandwidth=32 * GB,
        bf16_flops=125e12,
        aliases=("nvidia-a10g", "a10g-24gb"),
        source="AWS EC2 G5 page (A10G Tensor Core, 24 GB); AWS publishes no datasheet, so "
        "bandwidth and BF16 are the NVIDIA A10 datasheet's (600 GB/s, 125 TFLOPS) - assumption",
        nvlink_domain=1,
        usable_note="derived: taken as the A10's 21.99 GiB; local-gemma#25 notes A10G "
        "reports ~22 GB",
    ),
    GPU(
        key="a10",
        name="NVIDIA A10 24GB",
        hbm_bytes=24 * GB,
        usable_bytes=_gib(21.99),
        hbm_bandwidth=600 * GB,
        link="pcie4",
        link_bandwidth=32 * GB,
        bf16_flops=125e12,
        aliases=("nvidia-a10", "a10-24gb"),
        source="NVIDIA A10 datasheet (24 GB GDDR6, 600 GB/s, PCIe Gen4, 125 TFLOPS BF16 dense)",
        nvlink_domain=1,
        smi_mib=23028,
        usable_note="reported: torch 'total capacty of 21.99 GiB' on an A10 in CogVLM#236; "
        "nvidia-smi 23028MiB (modal-client#2797)",
    ),
    GPU(
        key="rtx-3090",
        name="NVIDIA GeForce RTX 3090 24GB",
        hbm_bytes=24 * GB,
        usable_bytes=_gib(23.58),
        hbm_bandwidth=936 * GB,
        link="pcie4",
        link_bandwidth=32 * GB,
        bf16_flops=71e12,
        aliases=("3090", "rtx3090", "geforce-rtx-3090", "nvidia-geforce-rtx-3090"),
        source="NVIDIA Ampere GA102 whitepaper (RTX 3090: 936 GB/s, 71 TFLOPS BF16 with FP32 "
        "accumulate, dense)",
        nvlink_domain=1,
        smi_mib=24576,
        usable_note="reported: 23.58 GiB in observations/vllm-startup.jsonl (vllm#10517)",
    ),
    # ---------------------------------------------------------------- Ada
    GPU(
        key="l40s",
        name="NVIDIA L40S 48GB",
        hbm_bytes=48 * GB,
        usable_bytes=_gib(44.40),
        hbm_bandwidth=864 * GB,
        link="pcie4",
        link_bandwidth=32 * GB,
        bf16_flops=362.05e12,
        aliases=("nvidia-l40s", "l40s-48gb"),
        source="NVIDIA L40S datasheet (48 GB GDDR6, 864 GB/s, PCIe Gen4 x16 64 GB/s, "
        "733 TFLOPS BF16 with sparsity)",
        nvlink_domain=1,
        smi_mib=46068,
        usable_note="derived: same 46068 MiB nvidia-smi total (modal-client#2797) as the L40, "
        "whose torch total is 44.40 GiB (QwenLM/Qwen3-VL#2097)",
    ),
    GPU(
        key="l40",
        name="NVIDIA L40 48GB",
        hbm_bytes=48 * GB,
        usable_bytes=_gib(44.40),
        hbm_bandwidth=864 * GB,
        link="pcie4",
        link_bandwidth=32 * GB,
        bf16_flops=181.05e12,
        aliases=("nvidia-l40", "l40-48gb"),
        source="NVIDIA L40 datasheet (48 GB GDDR6, 864 GB/s, PCIe Gen4 x16, 362.1 TFLOPS BF16 "
        "with sparsity)",
        nvlink_domain=1,
        smi_mib=46068,
        usable_note="reported: torch 'total capacity of 44.40 GiB' on a single L40 in "
        "QwenLM/Qwen3-VL#2097",
    ),
    GPU(
        key="l4",
        name="NVIDIA L4 24GB",
        hbm_bytes=24 * GB,
        usable_bytes=_derived(23034, 454),
        hbm_bandwidth=300 * GB,
        link="pcie4",
        link_bandwidth=32 * GB,
        bf16_flops=121e12,
        aliases=("nvidia-l4", "l4-24gb"),
        source="NVIDIA L4 datasheet (24 GB GDDR6, 300 GB/s, PCIe Gen4 x16 64 GB/s, "
        "242 TFLOPS BF16 with sparsity)",
        nvlink_domain=1,
        smi_mib=23034,
        usable_note="derived: nvidia-smi 23034 MiB (modal-client#2797, observations) minus "
        "454 MiB; matches the 22.05 GiB vLLM printed on PyTorch CI (pytorch#175666, GPU "
        "not named in the excerpt)",
    ),
    GPU(
        key="rtx-4090",
        name="NVIDIA GeForce RTX 4090 24GB",
        hbm_bytes=24 * GB,
        usable_bytes=_gib(23.68),
        hbm_bandwidth=1008 * GB,
        link="pcie4",
        link_bandwidth=32 * GB,
        bf16_flops=165.2e12,
        aliases=("4090", "rtx4090", "geforce-rtx-4090", "nvidia-geforce-rtx-4090"),
        source="NVIDIA Ada Lovelace architecture whitepaper (RTX 4090: 24 GB GDDR6X, "
        "1,008 GB/s, 165.2 TFLOPS BF16 dense with FP32 accumulate)",
        nvlink_domain=1,
        smi_mib=24564,
        usable_note="reported: torch '23.68 GiB total capacity' on an RTX 4090 in "
        "zai-org/CogVideo#36 (WSL and display use show less: 23.08 in vllm#13061)",
    ),
    # ---------------------------------------------------------------- older
    GPU(
        key="t4",
        name="NVIDIA T4 16GB",
        hbm_bytes=16 * GB,
        usable_bytes=_derived(15360, 256),
        hbm_bandwidth=320 * GB,
        link="pcie3",
        link_bandwidth=16 * GB,
        bf16_flops=65e12,
        aliases=("nvidia-tesla-t4", "tesla-t4", "nvidia-t4", "t4-16gb"),
        source="NVIDIA T4 datasheet (16 GB GDDR6, 320 GB/s, PCIe Gen3 x16, 65 TFLOPS FP16 "
        "mixed precision; no BF16 - the FP16 figure stands in)",
        nvlink_domain=1,
        smi_mib=15360,
        usable_note="derived: nvidia-smi 15360 MiB (modal-client#2797) minus 256 MiB "
        "(14.75 GiB, the total torch prints on Colab T4s)",
    ),
    GPU(
        key="v100-sxm-16gb",
        name="NVIDIA V100 SXM2 16GB",
        hbm_bytes=16 * GB,
        usable_bytes=_derived(16160, 0),
        hbm_bandwidth=900 * GB,
        link="nvlink2",
        link_bandwidth=150 * GB,
        bf16_flops=125e12,
        aliases=("v100", "nvidia-tesla-v100", "tesla-v100", "v100-16gb", "tesla-v100-sxm2-16gb",
                 "nvidia-tesla-v100-sxm2-16gb"),
        source="NVIDIA V100 datasheet (SXM2: 900 GB/s HBM2, NVLink 300 GB/s, 125 TFLOPS "
        "tensor FP16; no BF16 - the FP16 figure stands in)",
        smi_mib=16160,
        usable_note="derived: nvidia-smi 16160 MiB, taken whole (~15.78 GiB)",
    ),
    GPU(
        key="v100-sxm-32gb",
        name="NVIDIA V100 SXM2 32GB",
        hbm_bytes=32 * GB,
        usable_bytes=_derived(32510, 0),
        hbm_bandwidth=900 * GB,
        link="nvlink2",
        link_bandwidth=150 * GB,
        bf16_flops=125e12,
        aliases=("v100-32gb", "tesla-v100-sxm2-32gb", "nvidia-tesla-v100-sxm2-32gb"),
        source="NVIDIA V100 datasheet (SXM2 32GB: 900 GB/s, NVLink 300 GB/s, 125 TFLOPS "
        "tensor FP16; no BF16)",
        smi_mib=32510,
        usable_note="derived: nvidia-smi 32510 MiB, taken whole (~31.75 GiB)",
    ),
    # ---------------------------------------------------------------- AMD
    GPU(
        key="mi300x",
        name="AMD Instinct MI300X 192GB",
        hbm_bytes=192 * GB,
        usable_bytes=192 * GIB - 512 * MIB,
        hbm_bandwidth=5.3e12,
        link="infinity-fabric",
        link_bandwidth=448 * GB,
        bf16_flops=1307.4e12,
        aliases=("amd-mi300x", "instinct-mi300x", "amd-instinct-mi300x", "mi300x-192gb"),
        source="AMD Instinct MI300X data sheet (192 GB HBM3, 5.3 TB/s, 7 Infinity Fabric "
        "links x 64 GB/s each way = 448 GB/s aggregate peer, 1,307.4 TFLOPS BF16 dense)",
        usable_note="derived: 192 GiB (HBM3 stacks are binary-sized) minus 512 MiB firmware "
        "reserve; not confirmed against a ROCm log",
    ),
    GPU(
        key="mi325x",
        name="AMD Instinct MI325X 256GB",
        hbm_bytes=256 * GB,
        usable_bytes=256 * GIB - 512 * MIB,
        hbm_bandwidth=6.0e12,
        link="infinity-fabric",
        link_bandwidth=448 * GB,
        bf16_flops=1307.4e12,
        aliases=("amd-mi325x", "instinct-mi325x", "amd-instinct-mi325x"),
        source="AMD Instinct MI325X data sheet (256 GB HBM3E, 6 TB/s, same Infinity Fabric "
        "and 1,307.4 TFLOPS BF16 dense as MI300X)",
        usable_note="derived: 256 GiB minus 512 MiB, as for MI300X",
    ),
)

_PREFIXES = ("nvidia-gpu-", "amd-gpu-", "nvidia-", "tesla-", "geforce-", "amd-", "instinct-")
# (KubeAI resource profiles spell GPUs "nvidia-gpu-h100", "amd-gpu-mi300x")
_SUFFIXES = ("-shared",)  # gpu-feature-discovery's time-slicing suffix on gpu.product


def _norm(s: str) -> str:
    return dashed(s.strip().lower())


_WORD = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
WORD_OR_DASH = _WORD | {"-"}  # what a normalised name is made of


def dashed(s: str) -> str:
    """``re.sub(r"[^a-z0-9]+", "-", s).strip("-")``: the runs of a-z and 0-9 in ``s``, joined by
    ``-``; with str methods, as the names of the GPU and machine tables are normalised at
    their first lookup (the pattern's compile was ~0.2 million instructions of a lint)."""
    if is_dashed(s):
        return s  # already dashed: the tables' own names (~130 at the index's build)
    if not WORD_OR_DASH.issuperset(s):
        s = "".join(c if c in _WORD else "-" for c in s)
    return "-".join(w for w in s.split("-") if w)


def is_dashed(s: str) -> bool:
    """Whether ``dashed(s) == s``: runs of a-z and 0-9 joined by single dashes."""
    return WORD_OR_DASH.issuperset(s) and "--" not in s and s[:1] != "-" and s[-1:] != "-"


def _index() -> dict[str, GPU]:
    out: dict[str, GPU] = {}
    for g in GPUS:
        for name in (g.key, *g.aliases):
            out.setdefault(_norm(name), g)
    return out


_BY_NAME = _index()


def find_gpu(name: str) -> GPU | None:
    """Catalog key, alias, or a spelling people write (``H100``, ``NVIDIA-H100-80GB-HBM3``).

    Vendor prefixes and the ``-SHARED`` suffix are tried off; MIG slices (``...-MIG-1g.10gb``)
    and TPU labels are not whole GPUs of this catalog, so they give None.
    """
    n = _norm(name)
    if not n or "-mig-" in f"-{n}-":
        return None
    candidates = [n]
    for suf in _SUFFIXES:
        if n.endswith(suf):
            candidates.append(n[: -len(suf)])
    for c in list(candidates):
        for pre in _PREFIXES:
            if c.startswith(pre):
                candidates.append(c[len(pre):])
    for c in candidates:
        g = _BY_NAME.get(c)
        if g is not None:
            return g
    return None


def gpu_names() -> tuple[str, ...]:
    """Catalog keys, for ``--help`` text and 'unknown GPU' messages."""
    return tuple(g.key for g in GPUS)


_SIZE = lazy_re(
    r"^\s*(?P<num>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>[kmgtp]i?b?|b|bytes?)?\s*$", re.IGNORECASE
)
_MULT = {"": 1, "b": 1, "byte": 1, "bytes": 1}
for _i, _p in enumerate("kmgtp", start=1):
    _MULT[_p] = _MULT[_p + "b"] = 1000**_i
    _MULT[_p + "i"] = _MULT[_p + "ib"] = 1024**_i


def parse_size(text: str) -> int:
    """``80GB`` -> 80e9, ``80GiB`` -> 80*2**30, ``79.2 GiB``, or plain bytes.

    Decimal units are decimal (GB = 1e9) and binary units binary, as vendors and
    engines print them; a bare number is bytes.
    """
    m = _SIZE.match(text)
    if m is None:
        raise ValueError(f"not a size: {text!r} (write e.g. 80GB, 80GiB, 79.2 GiB or bytes)")
    num = float(m.group("num"))
    unit = (m.group("unit") or "").lower()
    value = num * _MULT[unit]
    if unit in ("", "b", "byte", "bytes") and not num.is_integer():
        raise ValueError(f"not a size: {text!r} (a byte count must be a whole number)")
    return round(value)
