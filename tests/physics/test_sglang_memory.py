"""SGLang's budget term by term, each pinned to the release line it was read from (issue 21)."""

from __future__ import annotations

import pytest

from tpcheck.formula import GIB, MIB
from tpcheck.hardware.gpus import find_gpu
from tpcheck.models import catalog
from tpcheck.models.config import load_config, parse_config
from tpcheck.physics import sglang_memory as sm
from tpcheck.physics.plan import Options, evaluate


@pytest.mark.parametrize(("version", "read"), [
    (None, "0.5.23"), ("0.3.6", "0.4.6"), ("0.4.3", "0.4.6"), ("0.4.9.post2", "0.4.6"),
    ("0.5.0", "0.4.6"), ("0.5.2", "0.5.2"), ("v0.5.10", "0.5.2"), ("0.5.23", "0.5.23"),
    ("0.6.0", "0.5.23"),
])
def test_release_read_is_the_nearest_read_at_or_below(version: str | None, read: str) -> None:
    assert sm.release_read(version) == read


@pytest.mark.parametrize(("version", "line"), [
    ("0.4.6", "profile_max_num_token l.689-711"),
    ("0.5.2", "profile_max_num_token l.1092-1123"),
    ("0.5.23", "_profile_available_bytes l.2990-3060"),
])
def test_pool_is_t_times_mfs_minus_weights(version: str, line: str) -> None:
    """rest = available_after_load − T·(1 − mfs) = T·mfs − W (nothing else is resident)."""
    m, w = 80 * GIB, 40 * GIB
    p = sm.pool_per_gpu(memory=m, mfs=0.9, weights=w, t=1, nvlink=True, version=version)
    t_free = m - sm.CONTEXT_BYTES  # t = 1: only the context is gone before T is taken
    assert p.result == pytest.approx(t_free * 0.9 - w)
    assert line in p.source
    assert p.values["release"] == version


def test_baseline_overhead_grows_with_tp_and_nvlink() -> None:
    """C alone at t = 1; NCCL at t > 1; custom all-reduce/NVLS buffers on NVLink parts."""
    c = sm.CONTEXT_BYTES
    assert sm.baseline_overhead(1, True).result == c
    assert sm.baseline_overhead(4, False).result == c + sm.NCCL_BYTES
    assert sm.baseline_overhead(8, True).result == c + sm.NCCL_BYTES + sm.NVLINK_COMM_BYTES
    # row 11 (8 × H200): "Init torch distributed ends. mem usage=2.01 GB" = c_nccl + c_nvlink
    together = (sm.NCCL_BYTES + sm.NVLINK_COMM_BYTES) / GIB
    assert abs(together - 2.01) < 0.005


@pytest.mark.parametrize(("page", "expected"), [(1, 1000), (16, 992), (64, 960)])
def test_tokens_are_whole_cells_floored_to_pages(page: int, expected: int) -> None:
    """int(rest // cell) then // page_size · page_size (0.4.6 init_memory_pool l.782)."""
    cell = 128 * 1024
    n = sm.pool_tokens(1000.5 * cell, cell, page, "0.4.6")
    assert n.result == expected
    assert "l.782" in n.source


def test_no_pool_when_the_weights_take_the_fraction() -> None:
    assert sm.pool_tokens(-1.0, 1024, 1).result == 0


@pytest.mark.parametrize(("tp", "frac"), [(1, 0.88), (2, 0.87), (4, 0.85), (8, 0.81), (16, 0.79)])
def test_046_default_fraction_tiers_up_to_80_gib(tp: int, frac: float) -> None:
    """0.4.6 server_args.py l.224-235: fixed tiers by TP on cards up to 81,920 MiB."""
    d = sm.default_mem_fraction("0.4.6", 80 * 1024 * MIB, tp)
    assert d is not None and d.value == frac and "l.224-238" in d.source


def test_046_default_fraction_above_80_gib_leaves_13_gib() -> None:
    """0.4.6 server_args.py l.238: (M − 13 GiB)/M; H200's 143,073 MiB → 0.907."""
    m = 143_073 * MIB
    d = sm.default_mem_fraction("0.4.6", m, 8)
    assert d is not None and d.value == pytest.approx((143_073 - 13 * 1024) / 143_073)


@pytest.mark.parametrize(("mem_mib", "tp", "reserved_mib"), [
    (23_034, 1, (2.8 + 0.1) * 1024),  # < 35 GiB: 2.8 + tp·pp/10
    (81_092, 4, (9.5 + 2) * 1024),  # < 90 GiB: 9.5 + tp·pp/2
    (143_073, 8, (12 + 4) * 1024),  # < 160 GiB: 12 + tp·pp/2
    (182_659, 8, 32 * 1024),  # B200: 32 GiB
])
def test_052_default_fraction_reserves_by_tier(mem_mib: int, tp: int, reserved_mib: float) -> None:
    """0.5.2 server_args.py l.464-496: round((M − reserved)/M, 3)."""
    d = sm.default_mem_fraction("0.5.2", mem_mib * MIB, tp)
    assert d is not None and d.value == round((mem_mib - reserved_mib) / mem_mib, 3)
    assert "l.450-496" in d.source


def test_0523_default_is_the_memory_hook() -> None:
    assert sm.default_mem_fraction("0.5.23", 80 * GIB, 1) is None


def test_plan_uses_the_sglang_budget_and_names_the_release() -> None:
    """plan --engine sglang: the pool is T·mfs − W and says which release's lines it used."""
    e = catalog.find("meta-llama/Llama-3.1-8B-Instruct")
    assert e is not None
    shape = parse_config(load_config(e.config_path), name="llama")
    gpu = find_gpu("h100-sxm")
    ev = evaluate(shape, 1, Options(engine="sglang", engine_version="0.4.1", gpu=gpu))
    assert ev.pool is not None and ev.utilization is not None and gpu is not None
    assert ev.utilization.result == 0.88  # 0.4.x default at TP 1
    expected = (gpu.usable_bytes - sm.CONTEXT_BYTES) * 0.88 - ev.weights.result
    assert ev.pool.result == pytest.approx(expected)
    assert ev.pool.values["release"] == "0.4.6"


@pytest.mark.parametrize(("version", "tokens", "context", "expected"), [
    ("0.4.3", 46_611, 131_072, 2049),  # observation row 1 logged max_running_requests=2049
    ("0.4.1", 444_500, 131_072, 2049),  # row 2 logged 2049
    ("0.4.6", 1_000_000, 32_768, 4097),  # 1e6/32768·512 = 15,625 → 4096, + 1 slot
    ("0.4.6", 3_000, 4_096, 1_500),  # tokens // 2 binds
    ("0.5.2", 46_611, 131_072, 2048),  # 0.5.2's request pool has no extra slot
])
def test_default_max_running_requests_by_release(version: str, tokens: int, context: int,
                                                 expected: int) -> None:
    d = sm.default_max_running_requests(version, tokens, context)
    assert d is not None and d.value == expected


def test_max_running_requests_0523_is_resolve_max_num_reqs() -> None:
    assert sm.default_max_running_requests("0.5.23", 46_611, 131_072) is None
