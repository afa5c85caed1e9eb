"""Every published all-reduce row predicted against measured, per regime (issue 31).

    python bench/allreduce_table.py [--rows] [--json]

Rows: fixtures/observations/allreduce.jsonl. Regimes: latency (8 KiB–1 MiB) and bandwidth
(≥ 64 MiB), each single- and multi-node; rows outside both (below 8 KiB, 1–64 MiB) are
printed but not scored. Scored: rows whose status is "healthy" (a measurement nobody called
low), NCCL or custom all-reduce as the engine runs it (CUDA graphs for vLLM's kernel).
Leave-one-out: each fitted constant is refitted without the rows it came from and the share
within 30% recomputed on those rows.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tpcheck.hardware.network import Network  # noqa: E402
from tpcheck.physics import collective as C  # noqa: E402

KIB, MIB = 1 << 10, 1 << 20


def load() -> list[dict[str, object]]:
    path = ROOT / C.ROWS
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


_PCIE = {"pcie4": 32e9, "pcie5": 64e9}


def group(row: dict[str, object]) -> C.Group | None:
    """The row's topology as the model's Group (None when tpcheck cannot express it)."""
    from tpcheck.hardware.gpus import find_gpu

    fabric = str(row["fabric"])
    gpu = find_gpu(str(row["gpu"]))
    if fabric in _PCIE:
        link, bw = fabric, _PCIE[fabric]
    elif gpu is not None:
        link, bw = gpu.link, gpu.link_bandwidth
    elif int(row["gpus_per_node"]) == 1:  # type: ignore[call-overload]
        link, bw = "none", 0.0
    else:
        return None
    if fabric == "nvlink-bridge":
        return None  # NVLink bridge pairs (H100 PCIe): no link class for them yet
    nodes = int(row["nodes"])  # type: ignore[call-overload]
    net = None
    if nodes > 1:
        net = Network(int(row["nics_per_node"]), float(row["nic_gbps"]),  # type: ignore[call-overload, arg-type]
                        fabric)
    g = C.group_of(link, bw, int(row["ranks"]), nodes, int(row["gpus_per_node"]), net)  # type: ignore[call-overload]
    if link == "none":  # one GPU per node: the node's only path is its NIC
        g = C.Group(g.ranks, g.nodes, 1, "nvlink4", 1e15, net)
    return g


def engine_of(row: dict[str, object]) -> str | None:
    impl = str(row.get("impl", "nccl"))
    return impl.split("-")[0] if impl.endswith("-custom") else None


def predict(row: dict[str, object]) -> float | None:
    g = group(row)
    if g is None:
        return None
    eng = engine_of(row)
    size = float(row["size"])  # type: ignore[arg-type]
    if row.get("impl") == "vllm-symm-mem":  # torch symmetric memory, as vLLM 0.19 runs it
        p = C.allreduce(g, size, engine="vllm", version="0.19.0", custom=False)
        return p.seconds if p.algorithm == "symm-mem" else None
    if eng is not None:
        lim = C.custom_limit(eng, g)
        a, bus, _ = C.CUSTOM[eng]
        if lim is None:
            return None
        return a + C._factor(g.ranks) * size / bus
    return C.allreduce(g, size).seconds


def regime(row: dict[str, object]) -> str | None:
    size = int(row["size"])  # type: ignore[call-overload]
    multi = "multi" if int(row["nodes"]) > 1 else "single"  # type: ignore[call-overload]
    if 8 * KIB <= size <= MIB:
        return f"latency/{multi}"
    if size >= 64 * MIB:
        return f"bandwidth/{multi}"
    return None


def scored(row: dict[str, object]) -> bool:
    """Counted in the acceptance: healthy, not a forced non-default algorithm, and the
    custom kernel only as serving runs it (CUDA graphs) for vLLM."""
    if row.get("status") != "healthy" or row.get("forced") or row.get("skip"):
        return False
    if row.get("impl") == "vllm-custom":
        return bool(row.get("cuda_graph")) and (
            row.get("algorithm") == ("1stage" if _one_stage(row) else "2stage"))
    return True


def _one_stage(row: dict[str, object]) -> bool:
    """vLLM's kernel choice: 1-stage for 2 ranks or small messages, 2-stage above."""
    t, size = int(row["ranks"]), int(row["size"])  # type: ignore[call-overload]
    return t == 2 or (t <= 4 and size < 512 * KIB) or (t <= 8 and size < 256 * KIB)


def table(rows: list[dict[str, object]]) -> dict[str, tuple[int, int, float]]:
    """Per regime: (rows within 30%, rows scored, median predicted/measured)."""
    by: dict[str, list[float]] = {}
    for r in rows:
        reg = regime(r)
        p = predict(r)
        if reg is None or p is None or not scored(r):
            continue
        by.setdefault(reg, []).append(p / (float(r["time_us"]) * 1e-6))  # type: ignore[arg-type]
    out = {}
    for reg, ratios in sorted(by.items()):
        ok = sum(1 for x in ratios if 0.7 <= x <= 1.3)
        s = sorted(ratios)
        out[reg] = (ok, len(ratios), s[len(s) // 2])
    return out


def main(argv: list[str]) -> int:
    rows = load()
    if "--rows" in argv:
        print(f"{'gpu':14} {'t':>3} {'n':>2} {'fabric':9} {'size':>11} {'meas µs':>9} "
              f"{'pred µs':>9} {'ratio':>6}  status / impl / algorithm")
        for r in rows:
            p = predict(r)
            meas = float(r["time_us"])  # type: ignore[arg-type]
            ratio = f"{p * 1e6 / meas:6.2f}" if p else "   n/a"
            pred = f"{p * 1e6:9.1f}" if p else "      n/a"
            print(f"{r['gpu']!s:14} {r['ranks']!s:>3} {r['nodes']!s:>2} {r['fabric']!s:9} "
                  f"{r['size']!s:>11} {meas:9.1f} {pred} {ratio}  {r['status']} / "
                  f"{r.get('impl')} / {r['algorithm']}{' *' if scored(r) else ''}")
    res = table(rows)
    if "--json" in argv:
        print(json.dumps({k: {"within_30": a, "rows": b, "median_ratio": m}
                          for k, (a, b, m) in res.items()}))
        return 0
    by_nodes: dict[int, list[int]] = {}
    for r in rows:
        p = predict(r)
        if regime(r) is None or p is None or not scored(r) or int(r["nodes"]) < 2:  # type: ignore[call-overload]
            continue
        cell = by_nodes.setdefault(int(r["nodes"]), [0, 0])  # type: ignore[call-overload]
        cell[0] += 0.7 <= p / (float(r["time_us"]) * 1e-6) <= 1.3  # type: ignore[arg-type]
        cell[1] += 1
    print("multi-node rows within 30% by node count: " + ", ".join(
        f"{n} nodes {a}/{b}" for n, (a, b) in sorted(by_nodes.items())))
    loo = leave_one_out(rows)
    print(f"{'regime':20} {'within 30%':>11} {'rows':>5} {'share':>6} {'median pred/meas':>17}"
          f" {'leave-one-out':>14}")
    for reg, (ok, n, med) in res.items():
        lo = loo.get(reg)
        los = f"{lo[0]}/{lo[1]}" if lo else "-"
        print(f"{reg:20} {ok:>11} {n:>5} {ok / n:6.0%} {med:17.2f} {los:>14}")
    return 0



def leave_one_out(rows: list[dict[str, object]]) -> dict[str, tuple[int, int]]:
    """Each scored row predicted with the constant behind it refitted on the other rows of
    its source class: a scale constant (bandwidth rows) as the median implied scale, an α
    (latency rows) as the median implied α. Returns (within 30%, rows) per regime."""
    items = []
    for r in rows:
        reg, p = regime(r), predict(r)
        if reg is None or p is None or not scored(r):
            continue
        meas = float(r["time_us"]) * 1e-6  # type: ignore[arg-type]
        key = (reg, str(r["fabric"]), str(r.get("impl")))
        items.append((key, p, meas))
    out: dict[str, list[int]] = {}
    for i, (key, p, meas) in enumerate(items):
        others = [(pp, mm) for j, (k, pp, mm) in enumerate(items) if j != i and k == key]
        if not others:
            continue  # a class of one row: nothing to refit it on
        if key[0].startswith("bandwidth"):
            ratios = sorted(mm / pp for pp, mm in others)
            pred = p * ratios[len(ratios) // 2]
        else:
            deltas = sorted(mm - pp for pp, mm in others)
            pred = p + deltas[len(deltas) // 2]
        cell = out.setdefault(key[0], [0, 0])
        cell[0] += 0.7 <= pred / meas <= 1.3
        cell[1] += 1
    return {k: (a, b) for k, (a, b) in sorted(out.items())}


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
