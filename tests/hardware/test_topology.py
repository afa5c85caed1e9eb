"""Topology fixtures parse into the right link classes; weakest link; one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from tpcheck.hardware.topology import (
    TopologyError,
    link_rank,
    parse_topology,
    tp_group,
)

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "topology"


def load(name: str):  # type: ignore[no-untyped-def]
    p = FIX / name
    return parse_topology(p.read_text(), str(p))


def test_dgx_h100_nv18_with_nics() -> None:
    t = load("dgx-h100.txt")
    assert t.gpu_count == 8
    assert t.link(0, 7) == "NV18"
    assert t.link(3, 4) == "NV18"
    assert t.link(5, 5) == "X"
    assert len(t.nics) == 10 and t.nics[0] == "NIC0"
    assert t.gpu_nic[0][0] == "PIX" and t.gpu_nic[0][4] == "SYS" and t.gpu_nic[4][4] == "PIX"
    assert t.cpu_affinity[0] == "0-55,112-167" and t.cpu_affinity[7] == "56-111,168-223"
    assert t.numa_node(3) == 0 and t.numa_node(4) == 1
    assert t.gpu_numa_id[0] == "N/A"
    assert t.weakest_link(range(8)) == ("NV18", (0, 1))


def test_a100_nv12_mlx5_columns_no_gpu_numa_id() -> None:
    t = load("a100-sxm4-8.txt")
    assert t.gpu_count == 8
    assert {t.link(a, b) for a in range(8) for b in range(8) if a != b} == {"NV12"}
    assert t.nics == tuple(f"mlx5_{i}" for i in range(8))
    assert t.gpu_nic[2][2] == "PXB" and t.gpu_nic[2][0] == "SYS"
    assert [t.numa_node(g) for g in range(8)] == [3, 3, 1, 1, 7, 7, 5, 5]
    assert t.gpu_numa_id == (None,) * 8


def test_l40s_two_sockets_tabs() -> None:
    t = load("l40s-2socket-8.txt")
    assert t.gpu_count == 8
    assert t.link(0, 3) == "NODE"  # same socket
    assert t.link(4, 7) == "NODE"
    assert t.link(3, 4) == "SYS"  # across sockets
    assert t.link(0, 7) == "SYS"
    assert t.numa_affinity[5] == "1" and t.gpu_numa_id[5] == "N/A"
    assert t.gpu_nic[6] == ("NODE", "NODE") and t.gpu_nic[1] == ("SYS", "SYS")


def test_l40s_tp4_within_socket_vs_across() -> None:
    t = load("l40s-2socket-8.txt")
    # GPUs 0-3 share socket 0: every pair NODE
    assert t.weakest_link([0, 1, 2, 3]) == ("NODE", (0, 1))
    assert t.weakest_link(tp_group(4, "4,5,6,7")) == ("NODE", (4, 5))
    # 2 on each socket: the first cross-socket pair is (0, 4)
    cls, pair = t.weakest_link([0, 1, 4, 5])
    assert cls == "SYS" and pair == (0, 4)
    cls, _ = t.weakest_link(tp_group(4, "2,3,4,5"))
    assert cls == "SYS"


def test_g5_12xlarge_phb() -> None:
    t = load("g5-12xlarge-a10g.txt")
    assert t.gpu_count == 4
    assert t.link(0, 3) == "PHB" and t.link(1, 2) == "PHB"
    assert t.nics == () and t.cpu_affinity == ("0-47",) * 4
    assert t.weakest_link(range(4)) == ("PHB", (0, 1))


def test_mixed_nvlink_pairs_ansi_header() -> None:
    t = load("mixed-nvlink-pairs.txt")
    assert t.gpu_count == 4
    assert t.link(0, 1) == "NV4" and t.link(2, 3) == "NV4"
    assert t.link(1, 2) == "SYS" and t.link(0, 3) == "SYS"
    assert t.weakest_link([0, 1]) == ("NV4", (0, 1))
    assert t.weakest_link([2, 3]) == ("NV4", (2, 3))
    assert t.weakest_link(range(4)) == ("SYS", (0, 2))
    assert t.numa_node(2) == 1


def test_two_gpu_slurm() -> None:
    t = load("a100-2gpu-slurm.txt")
    assert t.gpu_count == 2
    assert t.matrix == (("X", "NV12"), ("NV12", "X"))
    assert t.gpu_nic[1] == ("PXB", "PXB", "SYS", "SYS")
    assert t.weakest_link([1]) == ("X", (1, 1))


def test_rank_order() -> None:
    order = ["NV18", "NV12", "NV4", "PIX", "PXB", "PHB", "NODE", "SYS"]
    ranks = [link_rank(c) for c in order]
    assert ranks == sorted(ranks, reverse=True)
    assert len(set(ranks)) == len(ranks)
    assert link_rank("X") > link_rank("NV18")


def test_old_driver_soc_and_no_numa_columns() -> None:
    text = (
        "\tGPU0\tGPU1\tmlx4_0\tCPU Affinity\n"
        "GPU0\t X \tSOC\tPHB\t0-9,20-29\n"
        "GPU1\tSOC\t X \tSOC\t10-19,30-39\n"
        "mlx4_0\tPHB\tSOC\t X \t\n"
    )
    t = parse_topology(text, "old.txt")
    assert t.link(0, 1) == "SYS"
    assert t.numa_affinity == (None, None) and t.numa_node(0) is None
    assert t.cpu_affinity == ("0-9,20-29", "10-19,30-39")


def test_weakest_link_bad_gpu() -> None:
    t = load("g5-12xlarge-a10g.txt")
    with pytest.raises(ValueError, match="GPU 5 is not in"):
        t.weakest_link([0, 5])
    with pytest.raises(ValueError):
        t.weakest_link([])


def test_tp_group() -> None:
    assert tp_group(4) == (0, 1, 2, 3)
    assert tp_group(2, "6,7,0") == (6, 7)
    with pytest.raises(ValueError, match="shows 1 GPUs"):
        tp_group(2, "3")
    with pytest.raises(ValueError, match="not a GPU index"):
        tp_group(1, "GPU-1234")


GARBAGE = [
    ("", 1, "no GPU matrix"),
    ("hello\nworld\n", 1, "no GPU matrix"),
    ("\tGPU0\tGPU1\nGPU0\t X \tNV8\nGPU1\tNV8\tFOO\n", 3, "unknown link class 'FOO'"),
    ("\tGPU0\tGPU1\nGPU0\t X \tNV8\n", 2, "matrix ends after 1 GPU rows"),
    ("\tGPU0\tGPU1\nGPU0\t X \tNV8\nGPU1\tSYS\t X \n", 2, "must be symmetric"),
    ("\tGPU0\tGPU1\nGPU0\tNV8\t X \nGPU1\tNV8\t X \n", 2, "not X"),
    ("\tGPU0\tGPU1\nGPU0\t X \nGPU1\tNV8\t X \n", 2, "has 1 cells"),
    ("\tGPU0\tGPU2\nGPU0\t X \tPHB\n", 1, "header must list GPU0..GPUn"),
    ("\tGPU0\tGPU1\nGPU1\t X \tPHB\n", 2, "out of order"),
    ("\tGPU0\tGPU1\nGPU0\t X \tPHB\nbanana\n", 3, "expected a row for GPU1"),
    ("\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tPHB\t0-3\t9\t9\n", 2, "more than the header"),
]


@pytest.mark.parametrize(("text", "line", "msg"), GARBAGE)
def test_errors_are_one_line_with_position(text: str, line: int, msg: str) -> None:
    with pytest.raises(TopologyError) as ei:
        parse_topology(text, "topo.txt")
    s = str(ei.value)
    assert "\n" not in s
    assert s.startswith(f"topo.txt:{line}: ")
    assert msg in s
