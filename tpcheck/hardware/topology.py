"""``nvidia-smi topo -m`` → a frozen Topology, and the weakest link inside a TP group.

The matrix is what the driver says the path between two GPUs crosses: ``NV#`` (a bonded set
of # NVLinks), ``PIX`` (at most one PCIe bridge), ``PXB`` (several bridges), ``PHB`` (a PCIe
host bridge, i.e. the CPU), ``NODE`` (between host bridges of one NUMA node), ``SYS``
(across the inter-socket link). A TP group's ring all-reduce runs at the speed of its
slowest hop, so the weakest pair decides. Real outputs vary (NIC rows and columns, the
CPU/NUMA affinity columns, tabs or spaces, terminal underline escapes, a legend after the
matrix); all of those are accepted, anything else is a one-line TopologyError.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from tpcheck.deferred import lazy_re
from tpcheck.record import record

# Strength of a path, higher is better; NV# ranks above every PCIe path, more links higher.
_PCIE_RANK = {"PIX": 5, "PXB": 4, "PHB": 3, "NODE": 2, "SYS": 1}
_ALIASES = {"SOC": "SYS"}  # drivers before 2017 printed SOC for SYS
_NV = lazy_re(r"^NV(\d+)$")
_ANSI = lazy_re(r"\x1b\[[0-9;]*m")
_EXTRA = lazy_re(r"CPU Affinity|NUMA Affinity|GPU NUMA ID|\S+")
_GPU = lazy_re(r"^GPU(\d+)$")


class TopologyError(ValueError):
    """A topology file that is not ``nvidia-smi topo -m`` output; message is one line."""


def link_rank(cls: str) -> int:
    """Order NV# > PIX > PXB > PHB > NODE > SYS (NV18 > NV12 > NV4); X is strongest."""
    if cls == "X":
        return 10_000
    m = _NV.match(cls)
    if m:
        return 100 + int(m.group(1))
    if cls in _PCIE_RANK:
        return _PCIE_RANK[cls]
    raise ValueError(f"unknown link class {cls!r}")


def is_nvlink(cls: str) -> bool:
    return _NV.match(cls) is not None


def nvlink_count(cls: str) -> int:
    m = _NV.match(cls)
    return int(m.group(1)) if m else 0


def crosses_socket(cls: str) -> bool:
    """SYS: the path goes over the inter-socket link (QPI/UPI/Infinity Fabric)."""
    return cls == "SYS"


@record
class Topology:
    path: str
    matrix: tuple[tuple[str, ...], ...]  # GPU x GPU classes, "X" on the diagonal
    cpu_affinity: tuple[str | None, ...]  # per GPU, as printed ("0-47,96-143"), None if absent
    numa_affinity: tuple[str | None, ...]  # per GPU, as printed ("0", "N/A"), None if absent
    gpu_numa_id: tuple[str | None, ...] = ()
    nics: tuple[str, ...] = ()  # NIC column names in order (NIC0, mlx5_0, ...)
    gpu_nic: tuple[tuple[str, ...], ...] = ()  # GPU x NIC classes

    @property
    def gpu_count(self) -> int:
        return len(self.matrix)

    def link(self, a: int, b: int) -> str:
        return self.matrix[a][b]

    def numa_node(self, gpu: int) -> int | None:
        """NUMA node of a GPU from the NUMA Affinity column; None when N/A or absent."""
        v = self.numa_affinity[gpu] if gpu < len(self.numa_affinity) else None
        return int(v) if v is not None and v.isdigit() else None

    def weakest_link(self, gpus: Sequence[int]) -> tuple[str, tuple[int, int]]:
        """Weakest class among all pairs of ``gpus`` and the first pair that has it.

        One GPU (TP=1) has no pairs: ("X", (g, g)).
        """
        ids = list(gpus)
        if not ids:
            raise ValueError("weakest_link needs at least one GPU")
        bad = [g for g in ids if not 0 <= g < self.gpu_count]
        if bad:
            raise ValueError(
                f"GPU {bad[0]} is not in {self.path or 'the topology'} "
                f"(it has GPUs 0-{self.gpu_count - 1})"
            )
        if len(set(ids)) != len(ids):
            raise ValueError(f"GPU list repeats a GPU: {ids}")
        if len(ids) == 1:
            return "X", (ids[0], ids[0])
        worst: tuple[str, tuple[int, int]] | None = None
        for a, b in combinations(ids, 2):
            c = self.matrix[a][b]
            if worst is None or link_rank(c) < link_rank(worst[0]):
                worst = (c, (a, b))
        assert worst is not None
        return worst


def _cell(tok: str, path: str, lineno: int) -> str:
    t = _ALIASES.get(tok, tok)
    if t == "X" or t in _PCIE_RANK or _NV.match(t):
        return t
    raise TopologyError(
        f"{path}:{lineno}: unknown link class {tok!r} "
        "(expected X, NV#, PIX, PXB, PHB, NODE or SYS)"
    )


def parse_topology(text: str, path: str = "") -> Topology:
    """Parse ``nvidia-smi topo -m`` output; raise TopologyError naming the line on garbage."""
    where = path or "<topology>"
    lines = [_ANSI.sub("", ln).rstrip() for ln in text.splitlines()]
    header_at = _header_line(lines, where)
    devices, extras, n = _header(lines[header_at], where, header_at + 1)
    nics = tuple(devices[n:])

    rows: dict[int, tuple[tuple[str, ...], tuple[str, ...], dict[str, str]]] = {}
    lineno = header_at + 1
    for i in range(header_at + 1, len(lines)):
        lineno = i + 1
        toks = lines[i].split()
        if not toks:
            if len(rows) == n:
                break
            continue
        if toks[0].rstrip(":").lower() in ("legend", "nic"):
            break
        m = _GPU.match(toks[0])
        if m is None:
            if toks[0] in nics:
                continue  # NIC rows repeat what the GPU rows already say
            if len(rows) == n:
                break
            raise TopologyError(
                f"{where}:{lineno}: expected a row for GPU{len(rows)}, got {toks[0]!r}"
            )
        g = int(m.group(1))
        if g != len(rows):
            raise TopologyError(f"{where}:{lineno}: row GPU{g} out of order (expected "
                                f"GPU{len(rows)})")
        rows[g] = _gpu_row(g, toks[1:], devices, extras, n, where, lineno)
    if len(rows) != n:
        raise TopologyError(
            f"{where}:{lineno}: matrix ends after {len(rows)} GPU rows, header has {n}"
        )

    matrix = tuple(rows[g][0] for g in range(n))
    _check_symmetric(matrix, where, header_at + 2)
    return Topology(
        path=path,
        matrix=matrix,
        cpu_affinity=tuple(rows[g][2].get("CPU Affinity") for g in range(n)),
        numa_affinity=tuple(rows[g][2].get("NUMA Affinity") for g in range(n)),
        gpu_numa_id=tuple(rows[g][2].get("GPU NUMA ID") for g in range(n)),
        nics=nics,
        gpu_nic=tuple(rows[g][1] for g in range(n)),
    )


def _header_line(lines: list[str], where: str) -> int:
    """The index of the header row (its first column is GPU0)."""
    for i, ln in enumerate(lines):
        toks = ln.split()
        if toks and toks[0] == "GPU0":
            return i
    raise TopologyError(
        f"{where}:1: no GPU matrix found (expected a header row 'GPU0 GPU1 ...' as "
        "printed by nvidia-smi topo -m)"
    )


def _header(line: str, where: str, lineno: int) -> tuple[list[str], list[str], int]:
    """(device columns — GPUs then NICs —, affinity columns after them, number of GPUs)."""
    columns = _EXTRA.findall(line)
    devices: list[str] = []
    for c in columns:
        if c in ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID"):
            break
        devices.append(c)
    extras = columns[len(devices):]
    gpu_cols = [c for c in devices if _GPU.match(c)]
    n = len(gpu_cols)
    if gpu_cols != [f"GPU{i}" for i in range(n)] or devices[:n] != gpu_cols:
        raise TopologyError(
            f"{where}:{lineno}: header must list GPU0..GPUn first, got "
            f"{' '.join(devices[: n + 1])!r}"
        )
    return devices, extras, n


def _gpu_row(
    g: int, cells: list[str], devices: list[str], extras: list[str], n: int, where: str,
    lineno: int,
) -> tuple[tuple[str, ...], tuple[str, ...], dict[str, str]]:
    """Row GPU``g`` checked against the header: (links to GPUs, links to NICs, affinities)."""
    at = f"{where}:{lineno}"
    if g >= n:
        raise TopologyError(f"{at}: row GPU{g} but the header has {n} GPUs")
    if len(cells) < len(devices):
        raise TopologyError(
            f"{at}: GPU{g} row has {len(cells)} cells, header has {len(devices)} devices"
        )
    dev = tuple(_cell(t, where, lineno) for t in cells[: len(devices)])
    if dev[g] != "X":
        raise TopologyError(f"{at}: GPU{g} to itself is {dev[g]!r}, not X")
    if "X" in dev[:g] + dev[g + 1: n]:
        raise TopologyError(f"{at}: GPU{g} row has X off the diagonal")
    rest = cells[len(devices):]
    if len(rest) > len(extras):
        raise TopologyError(
            f"{at}: GPU{g} row has {len(rest) - len(extras)} cells more than the header"
        )
    return dev[:n], dev[n:], dict(zip(extras, rest, strict=False))


def _check_symmetric(matrix: tuple[tuple[str, ...], ...], where: str, first_row: int) -> None:
    """GPUa-GPUb must read as GPUb-GPUa; ``first_row`` is GPU0's line number."""
    n = len(matrix)
    for a in range(n):
        for b in range(a + 1, n):
            if matrix[a][b] != matrix[b][a]:
                raise TopologyError(
                    f"{where}:{first_row + a}: GPU{a}-GPU{b} is {matrix[a][b]} but "
                    f"GPU{b}-GPU{a} is {matrix[b][a]}; the matrix must be symmetric"
                )


def tp_group(t: int, cuda_visible_devices: str | None = None) -> tuple[int, ...]:
    """Physical GPU indices of a TP group of size t: the first t of CUDA_VISIBLE_DEVICES when
    set, else 0..t-1 (the engines take ranks in visible order).

    UUIDs (``GPU-…``) and MIG ids cannot be placed on the matrix: ValueError.
    """
    if t < 1:
        raise ValueError(f"tensor parallel size must be >= 1, got {t}")
    if cuda_visible_devices is None or not cuda_visible_devices.strip():
        return tuple(range(t))
    ids: list[int] = []
    for part in cuda_visible_devices.split(","):
        p = part.strip()
        if not p.isdigit():
            raise ValueError(f"CUDA_VISIBLE_DEVICES entry {p!r} is not a GPU index")
        ids.append(int(p))
    if len(ids) < t:
        raise ValueError(
            f"CUDA_VISIBLE_DEVICES={cuda_visible_devices} shows {len(ids)} GPUs, TP needs {t}"
        )
    return tuple(ids[:t])
