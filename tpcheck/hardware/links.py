"""Link classes a TP group's all-reduces can cross, with one-way per-GPU bandwidth and α.

Bandwidth is one direction per GPU (the sent-byte convention of DESIGN.md's
T_AR = α + 2(t−1)/t · S/B): NVIDIA's "900 GB/s" NVLink4 figure is bidirectional, so 450.
Network links are per GPU, i.e. the NIC rate a GPU gets when each GPU has its own NIC
(400 Gb/s = 50 GB/s). α is the fixed cost of one small all-reduce (launch, sync, link
latency). The α values are ASSUMPTIONS, not measurements: 10 µs in-node over NVLink is
the seed's assumed constant (tp-inference-deployer §7), 30 µs is the seed's suggested
figure for "across nodes or without NVLink"; PCIe sits between. Override with --alpha.
"""

from __future__ import annotations

import re

from tpcheck.record import record

GB = 10**9


@record
class Link:
    key: str
    name: str
    bandwidth: float  # bytes/s, one direction, per GPU
    alpha: float  # seconds, fixed cost per all-reduce (assumed; overridable)
    inter_node: bool  # crosses the network between machines
    source: str
    aliases: tuple[str, ...] = ()


_A_NVLINK = 10e-6  # seed §7 ALPHA = 10e-6, "assumed and matches no measurement"
_A_PCIE = 20e-6  # assumption: between NVLink and network
_A_NET = 30e-6  # seed: "Set ALPHA to 30 µs ... TP across nodes or without NVLink"


def _gbps(gbit: float) -> float:
    """Network line rate in Gb/s to bytes/s."""
    return gbit * 1e9 / 8


LINKS: tuple[Link, ...] = (
    Link("nvlink5", "NVLink 5 (Blackwell)", 900 * GB, _A_NVLINK, False,
         "NVIDIA NVLink page: 1.8 TB/s per GPU bidirectional", ("nvl5", "nvlink-5")),
    Link("nvlink4", "NVLink 4 (Hopper)", 450 * GB, _A_NVLINK, False,
         "NVIDIA H100 datasheet: 900 GB/s per GPU bidirectional",
         ("nvlink", "nvl4", "nvlink-4", "nvswitch")),
    Link("nvlink3", "NVLink 3 (Ampere)", 300 * GB, _A_NVLINK, False,
         "NVIDIA A100 datasheet: 600 GB/s per GPU bidirectional", ("nvl3", "nvlink-3")),
    Link("nvlink2", "NVLink 2 (Volta)", 150 * GB, _A_NVLINK, False,
         "NVIDIA V100 datasheet: 300 GB/s per GPU bidirectional", ("nvl2", "nvlink-2")),
    Link("pcie5", "PCIe Gen5 x16", 64 * GB, _A_PCIE, False,
         "PCI-SIG: 32 GT/s x16 ≈ 64 GB/s each way (NVIDIA quotes 128 GB/s both ways)",
         ("pcie-gen5", "pcie-5", "gen5")),
    Link("pcie4", "PCIe Gen4 x16", 32 * GB, _A_PCIE, False,
         "PCI-SIG: 16 GT/s x16 ≈ 32 GB/s each way (NVIDIA quotes 64 GB/s both ways)",
         ("pcie", "pcie-gen4", "pcie-4", "gen4")),
    Link("pcie3", "PCIe Gen3 x16", 16 * GB, _A_PCIE, False,
         "PCI-SIG: 8 GT/s x16 ≈ 16 GB/s each way", ("pcie-gen3", "pcie-3", "gen3")),
    Link("infinity-fabric", "AMD Infinity Fabric (MI300X, 8-GPU mesh)", 448 * GB, _A_NVLINK,
         False, "AMD MI300X data sheet: 7 links x 64 GB/s each way per GPU",
         ("xgmi", "infinityfabric", "if")),
    Link("ib-xdr", "InfiniBand XDR 800 Gb/s per GPU", _gbps(800), _A_NET, True,
         "NVIDIA Quantum-X800 / ConnectX-8: 800 Gb/s per port", ("xdr", "ib-800")),
    Link("ib-ndr", "InfiniBand NDR 400 Gb/s per GPU", _gbps(400), _A_NET, True,
         "NVIDIA Quantum-2 / ConnectX-7: 400 Gb/s per port", ("ndr", "ib", "infiniband",
                                                              "ib-400")),
    Link("ib-hdr", "InfiniBand HDR 200 Gb/s per GPU", _gbps(200), _A_NET, True,
         "NVIDIA Quantum / ConnectX-6: 200 Gb/s per port", ("hdr", "ib-200")),
    Link("roce-400", "RoCE / Ethernet 400 Gb/s per GPU", _gbps(400), _A_NET, True,
         "400GbE (e.g. ConnectX-7, GCP A3 Mega/Ultra GPUDirect NICs)",
         ("eth-400", "ethernet-400", "400gbe", "roce")),
    Link("roce-200", "RoCE / Ethernet 200 Gb/s per GPU", _gbps(200), _A_NET, True,
         "200GbE (e.g. GCP A3 Mega: 8 x 200 Gb/s GPU NICs for 8 H100)",
         ("eth-200", "ethernet-200", "200gbe")),
    Link("roce-100", "RoCE / Ethernet 100 Gb/s per GPU", _gbps(100), _A_NET, True,
         "100GbE (e.g. GCP A3 High: 4 x 200 Gb/s GPU NICs for 8 H100)",
         ("eth-100", "ethernet-100", "100gbe", "ethernet", "tcp")),
    Link("efa-400", "AWS EFA 400 Gb/s per GPU (p5: 3200 Gb/s / 8)", _gbps(400), _A_NET, True,
         "AWS EC2 P5 page: 3,200 Gbps EFAv2 for 8 H100", ("efa", "efa-v2", "efa-3200")),
    Link("efa-50", "AWS EFA 50 Gb/s per GPU (p4d: 400 Gb/s / 8)", _gbps(50), _A_NET, True,
         "AWS EC2 P4 page: p4d.24xlarge 400 Gbps EFA for 8 A100", ("efa-p4d", "efa-400g")),
)

_BY_NAME: dict[str, Link] = {}
for _l in LINKS:
    for _n in (_l.key, *_l.aliases):
        _BY_NAME.setdefault(_n, _l)


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", s.strip().lower()).strip("-")


def find_link(name: str) -> Link | None:
    """Link class by key or common spelling (``nvlink``, ``pcie5``, ``ib-ndr``, ``efa``)."""
    return _BY_NAME.get(_norm(name))


def link_names() -> tuple[str, ...]:
    return tuple(lk.key for lk in LINKS)


# ---- what a topology path class runs at -------------------------------------------------

# Host interface of NVLink parts (the PCIe a pair falls back to when NVLink is not on the
# path): H100/H200/B200 SXM connect to the host over PCIe Gen5, A100 SXM over Gen4 and V100
# SXM2 over Gen3 (NVIDIA datasheets' "PCIe Gen5 128 GB/s" / "Gen4 64 GB/s" lines).
_HOST_PCIE = {"nvlink5": "pcie5", "nvlink4": "pcie5", "nvlink3": "pcie4", "nvlink2": "pcie3"}

# Cross-socket (SYS) traffic: NCCL does not use PCIe peer-to-peer across the CPU interconnect
# and stages through host memory (its SHM transport), so the GPU's PCIe x16 rate is an upper
# bound, not an estimate; α takes the seed's "without NVLink" 30 µs (ASSUMPTION).
SYS_NOTE = ("upper bound: across sockets NCCL stages through host memory over QPI/UPI, "
            "so the achieved rate is lower")


def host_pcie(gpu_link: str | None) -> Link:
    """The PCIe class a GPU talks to its host over, from its catalog link (pcie4 by default)."""
    key = gpu_link if gpu_link and gpu_link.startswith("pcie") else _HOST_PCIE.get(
        gpu_link or "", "pcie4")
    lk = find_link(key)
    assert lk is not None
    return lk


def _nvlink_for(count: int, gpu_link: str | None) -> Link:
    """NV# between two GPUs: the GPU's NVLink generation when known, else guess from #.

    NV18 is Hopper's 18 links (nvlink4), NV12 Ampere's 12 (nvlink3); other counts (NVLink
    bridges: NV4 on RTX 3090 pairs, NV6 on V100) scale nvlink3's 25 GB/s per link one way.
    """
    if gpu_link and gpu_link.startswith("nvlink"):
        lk = find_link(gpu_link)
        assert lk is not None
        return lk
    by_count = {18: "nvlink4", 12: "nvlink3"}
    if count in by_count:
        lk = find_link(by_count[count])
        assert lk is not None
        return lk
    return Link(f"nv{count}", f"NVLink x{count} (bridge)", count * 25 * GB, _A_NVLINK, False,
                "assumption: 25 GB/s one way per NVLink (NVLink 3 rate) times the link count")


def path_link(cls: str, gpu_link: str | None = None) -> Link:
    """The link class an ``nvidia-smi topo -m`` path runs at, for a GPU with ``gpu_link``.

    NV# → that NVLink; PIX/PXB/PHB/NODE → the GPU's host PCIe; SYS → the host PCIe rate as an
    upper bound with the network-class α (see SYS_NOTE).
    """
    m = re.fullmatch(r"NV(\d+)", cls)
    if m:
        return _nvlink_for(int(m.group(1)), gpu_link)
    pcie = host_pcie(gpu_link)
    if cls == "SYS":
        return Link(f"{pcie.key}-sys", f"{pcie.name} across CPU sockets (SYS)", pcie.bandwidth,
                    _A_NET, False, f"{pcie.source}; {SYS_NOTE}")
    if cls in ("PIX", "PXB", "PHB", "NODE"):
        return pcie
    raise ValueError(f"unknown link class {cls!r}")
