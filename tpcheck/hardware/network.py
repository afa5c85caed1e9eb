"""The network between nodes: the NICs one node's GPUs share, as settings and flags spell it.

Hardware, not physics: settings and the readers parse it, the collective model prices it.
"""

from __future__ import annotations

from tpcheck.record import record


@record
class Network:
    """The NICs one node's GPUs share for traffic between nodes."""

    nics: int
    gbps: float  # per NIC, decimal Gb/s
    kind: str = "ib"  # ib | roce | efa | tcpxo | tcp
    source: str = ""
    assumed: bool = False  # nothing in the deployment named it

    @property
    def aggregate(self) -> float:
        """Bytes/s the node's NICs carry together, one direction."""
        return self.nics * self.gbps * 1e9 / 8

    @property
    def label(self) -> str:
        return f"{self.nics}×{self.gbps:g}G {self.kind}"


# The common case for an HGX H100/H200/B200 node: one 400G NIC per GPU, rail-optimized
# (DGX H100/B200, AWS p5 = 3,200 Gb/s, Azure ND H100 v5 = 8×400 NDR, OCI BM.GPU.H100.8).
HGX_NETWORK = Network(8, 400.0, "ib", "assumed: HGX node, 8×400G InfiniBand rail-optimized "
                      "(DGX H100/B200; AWS p5, Azure ND H100 v5, OCI BM.GPU.H100.8)", True)


_NET_KINDS = ("ib", "roce", "efa", "tcpxo", "tcp")


def parse_network(text: str) -> Network | None:
    """``8x400G-ib``, ``4x200g-roce``, ``32x100G-efa`` (NICs per node × Gb/s each, then the
    kind; ``-ib`` when left out), as ``[tool.tpcheck] network`` and ``--network`` spell it."""
    import re

    m = re.fullmatch(r"\s*(\d+)\s*[x×*]\s*(\d+(?:\.\d+)?)\s*(?:g|gb|gbps|gbit)?\s*"
                     r"(?:[-_ /]\s*([a-z]+))?\s*", text.lower())
    if not m:
        return None
    kind = m.group(3) or "ib"
    if kind == "infiniband":
        kind = "ib"
    if kind == "ethernet":
        kind = "roce"
    nics, gbps = int(m.group(1)), float(m.group(2))
    if kind not in _NET_KINDS or nics < 1 or not 0 < gbps <= 10_000:
        return None
    return Network(nics, gbps, kind, f"network = {text.strip()!r}")


# A GPU NIC sits next to a GPU: at most PCIe bridges between them (PIX, PXB), as on HGX
# boards (one ConnectX per GPU or per pair); storage and management NICs hang off the host
# bridge (PHB, NODE) or the other socket (SYS). nvidia-smi topo -m names no NIC speed, so it
# is the GPU generation's usual one: 200 Gb/s HDR for Ampere (DGX A100), 400 Gb/s NDR from
# Hopper on (DGX H100/B200), and said to be assumed.
_NEAR = ("PIX", "PXB")
_NIC_GBPS = {"nvlink3": 200.0, "nvlink2": 100.0}


def topology_network(nics: tuple[str, ...], gpu_nic: tuple[tuple[str, ...], ...],
                     path: str, gpu_link: str | None) -> Network | None:
    """The node's GPU NICs from a saved ``nvidia-smi topo -m`` (its NIC columns): each NIC
    that some GPU reaches at PIX or PXB. None when the matrix lists no such NIC."""
    near = [n for j, n in enumerate(nics)
            if any(j < len(row) and row[j] in _NEAR for row in gpu_nic)]
    if not near:
        return None
    gbps = _NIC_GBPS.get(gpu_link or "", 400.0)
    where = path or "the topology"
    return Network(len(near), gbps, "ib",
                   f"{where}: {len(near)} NICs at PIX/PXB from a GPU ({', '.join(near)}); "
                   f"{gbps:g} Gb/s each assumed (topo -m names no speed)", True)
