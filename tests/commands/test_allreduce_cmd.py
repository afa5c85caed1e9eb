"""``tpcheck allreduce``: all_reduce_perf's table for a stated topology (issue 31)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tpcheck.cli", "allreduce", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)


def test_json_rows_two_hgx_nodes() -> None:
    p = cli("--gpu", "h100", "--tp", "16", "--nics-per-node", "8", "--nic-gbps", "400",
            "--size", "8K", "--size", "16G", "--format", "json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["topology"]["nodes"] == 2 and doc["topology"]["assumed"] == []
    small, big = doc["rows"]
    for r in doc["rows"]:
        assert {"size", "allreduce_seconds", "algbw", "busbw", "algorithm", "path"} <= set(r)
    # 8 KiB: ring/LL, 31 µs + 8 KiB·15/8 / min(0.12·400, 0.5·360) GB/s = 31.32 µs
    # (nccl-tests#309 measured 32.12 on such a pair)
    assert (small["algorithm"], small["protocol"]) == ("ring", "LL")
    assert small["time_us"] == round(small["time_us"], 6) and abs(small["time_us"] - 31.32) < 0.01
    # 16 GiB: NVLS-tree at min(0.9·400·15/8, 0.6·450·7/4) = 472.5 GB/s busbw plus 115 µs
    assert big["algorithm"] == "nvlstree" and 469 * 0.85 < big["busbw"] < 469 * 1.15


def test_text_says_the_network_was_assumed() -> None:
    p = cli("--gpu", "h100", "--tp", "16", "--size", "1G")
    assert p.returncode == 0, p.stderr
    assert "# network assumed: an HGX node's 8×400G" in p.stdout
    assert "nvlstree/Simple" in p.stdout and p.stdout.count("\n") == 5


def test_default_sizes_and_custom_allreduce() -> None:
    p = cli("--tp", "8", "--engine", "vllm", "--format", "json")
    rows = json.loads(p.stdout)["rows"]
    assert [r["size"] for r in rows][:3] == [8, 16, 32] and rows[-1]["size"] == 1 << 30
    assert len(rows) == 28  # 8 B … 1 GiB doubling
    # vLLM 0.33 on H100 at TP8 (cuda_communicator.py l.362–446): FlashInfer's all-reduce up
    # to 0.5 MiB, torch symmetric memory (multimem) to 64 MiB, NCCL above
    by = {r["size"]: r["algorithm"] for r in rows}
    assert by[512 << 10] == "flashinfer" and by[1 << 20] == "symm-mem"
    assert by[64 << 20] == "symm-mem" and by[128 << 20] == "nvls"
    # vLLM 0.19: the custom kernel strictly below 256 KiB, symm mem from there
    old = json.loads(cli("--tp", "8", "--engine", "vllm", "--engine-version", "0.19.0",
                         "--format", "json").stdout)["rows"]
    by = {r["size"]: r["algorithm"] for r in old}
    assert by[128 << 10] == "custom" and by[256 << 10] == "symm-mem"
    # --disable-custom-all-reduce turns off the custom kernel only (vLLM 0.7.2: NCCL then)
    off = cli("--tp", "8", "--engine", "vllm", "--engine-version", "0.7.2",
              "--disable-custom-all-reduce", "--size", "64K", "--format", "json")
    assert json.loads(off.stdout)["rows"][0]["algorithm"] not in ("custom", "flashinfer")
    on = cli("--tp", "8", "--engine", "vllm", "--engine-version", "0.7.2", "--size", "64K",
             "--format", "json")
    assert json.loads(on.stdout)["rows"][0]["algorithm"] == "custom"


def test_bad_size_is_a_usage_error() -> None:
    p = cli("--size", "12x")
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [
        "tpcheck: error: argument --size: '12x' is not a size (8, 64K, 1M, 1GiB) "
        "(see 'tpcheck allreduce --help')"]


@pytest.mark.parametrize(("args", "said"), [
    # an HGX H100 node holds 8 GPUs (hardware/gpus.py nvlink_domain): 16 ranks need 2 nodes
    (["--gpu", "h100-sxm", "--tp", "16", "--nodes", "1"],
     "16 ranks per node, but one h100-sxm node holds 8 GPUs: give --nodes 2 or more"),
    (["--gpu", "h100-sxm", "--tp", "3", "--nodes", "4"],
     "4 nodes for 3 ranks: each node needs at least one rank"),
    (["--gpu", "h100-sxm", "--tp", "3", "--nodes", "2"],
     "3 ranks do not split evenly over 2 nodes"),
])
def test_a_layout_no_engine_launches_is_a_usage_error(args: list[str], said: str) -> None:
    p = cli(*args)
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == (f"tpcheck: error: argument --nodes: {said} "
                        "(see 'tpcheck allreduce --help')\n")


def test_the_default_gpu_is_said() -> None:
    p = cli("--tp", "8")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("# tpcheck allreduce: h100-sxm (the default: give --gpu), 8 ranks")
