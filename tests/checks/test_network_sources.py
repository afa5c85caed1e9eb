"""Where TP301's network comes from (issue 31): [tool.tpcheck] network / --network, a pod's NIC
resource request, the instance type, else an HGX node's 8×400G flagged as assumed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tpcheck.hardware.network import Network, parse_network
from tpcheck.lint import Linter
from tpcheck.settings import Settings, SettingsError, load_settings

ROOT = Path(__file__).resolve().parents[2]
LWS = (ROOT / "fixtures" / "manifests" / "topology" / "lws-tp16-2x8-h100.yaml").read_text()


def tp301(text: str, tmp_path: Path, **settings: object) -> tuple[str, dict[str, object]]:
    p = tmp_path / "lws.yaml"
    p.write_text(text)
    res = Linter(Settings(offline=True, select=("TP301",), **settings)).run(  # type: ignore[arg-type]
        [str(p)])
    assert not res.errors, res.errors
    [f] = res.findings
    b = next(x for x in f.formulas if x.name == "B")
    return f.text, dict(b.values) | {"result": b.result, "source": b.source}


def test_parse_network() -> None:
    assert parse_network("8x400G-ib") == Network(8, 400.0, "ib", "network = '8x400G-ib'")
    assert parse_network("4×200g roce").kind == "roce"  # type: ignore[union-attr]
    assert parse_network("32x100G-efa").aggregate == 400e9  # type: ignore[union-attr]
    assert parse_network("8x400") is not None and parse_network("8x400").kind == "ib"  # type: ignore[union-attr]
    for bad in ("", "8", "x400G", "8x400G-fddi", "0x400G-ib", "8x0G"):
        assert parse_network(bad) is None, bad


def test_setting_names_the_network(tmp_path: Path) -> None:
    msg, b = tp301(LWS, tmp_path, network="4x200G-roce")
    # two NVLS nodes, 4 × 25 GB/s each: NVLS-tree min(0.90·100·15/8, 472.5) = 168.75 GB/s busbw
    assert b["result"] == pytest.approx(168.75e9)
    assert (b["nics"], b["nic_Gbps"], b["network_assumed"]) == (4, 200.0, False)
    assert "4×200G roce per node (network = '4x200G-roce'), busbw ≈ 169 GB/s" in msg
    assert "(assumed" not in msg.split("busbw")[1].split(";")[0]


def test_settings_file_and_bad_value(tmp_path: Path) -> None:
    (tmp_path / ".tpcheck.toml").write_text('network = "8x400G-ib"\n')
    assert load_settings(tmp_path / ".tpcheck.toml").network == "8x400G-ib"
    (tmp_path / ".tpcheck.toml").write_text('network = "lots"\n')
    with pytest.raises(SettingsError, match="network must name the NICs per node"):
        load_settings(tmp_path / ".tpcheck.toml")


def test_cli_flag(tmp_path: Path) -> None:
    p = tmp_path / "lws.yaml"
    p.write_text(LWS)
    run = subprocess.run([sys.executable, "-m", "tpcheck", "--offline", "--select", "TP301",
                          "--network", "2x400G-ib", str(p)], capture_output=True,
                         text=True, cwd=ROOT, timeout=60)
    assert run.returncode == 1, run.stderr
    # 2 NICs of 50 GB/s: NVLS-tree at min(0.90·100·15/8, 472.5) = 168.75 GB/s
    unwrapped = " ".join(run.stdout.split())  # the evidence lines are wrapped to 80 columns
    assert "2×400G ib per node (network = '2x400G-ib'), busbw ≈ 169 GB/s" in unwrapped


def test_efa_resource_request(tmp_path: Path) -> None:
    text = LWS.replace('nvidia.com/gpu: "8"', 'nvidia.com/gpu: "8"\n                '
                       'vpc.amazonaws.com/efa: 32')
    msg, b = tp301(text, tmp_path)
    # 32 EFA devices × 100 Gb/s = 3,200 Gb/s a node (p5.48xlarge): the NVLS-tree cap, 472.5
    assert (b["nics"], b["nic_Gbps"], b["network_assumed"]) == (32, 100.0, False)
    assert b["result"] == pytest.approx(472.5e9)
    assert "32 × 100 Gb/s EFA (vpc.amazonaws.com/efa=32)" in msg


def test_rdma_resource_names_the_kind_not_the_count(tmp_path: Path) -> None:
    text = LWS.replace('nvidia.com/gpu: "8"', 'nvidia.com/gpu: "8"\n                '
                       'rdma/roce_gdr: 1')
    msg, b = tp301(text, tmp_path)
    assert b["network_assumed"] is True and "(rdma/roce_gdr=1; NIC count assumed)" in msg


def test_nothing_named_is_the_hgx_assumption(tmp_path: Path) -> None:
    msg, b = tp301(LWS, tmp_path)
    assert (b["nics"], b["nic_Gbps"], b["network_assumed"]) == (8, 400.0, True)
    assert str(b["source"]).startswith("ASSUMPTION: ")
    assert "InfiniBand 8 × 400 Gb/s per node, busbw ≈ 472 GB/s (assumed" in msg
