"""--kv-cache-dtype auto takes a ModelOpt checkpoint's fp8 KV cache in vLLM 0.14+ (issue: the
bundled nvidia NVFP4 entries were sized with a 16-bit cache, half the tokens vLLM gets)."""

from __future__ import annotations

import pytest

from tpcheck.checks.context import CheckContext
from tpcheck.models import catalog
from tpcheck.models.config import load_config, parse_config
from tpcheck.settings import Settings
from tpcheck.sources.base import Deployment, Span

MODEL = "nvidia/MiniMax-M2.5-NVFP4"


def context(version: str, kv_cache_dtype: str | None) -> CheckContext:
    entry = catalog.find(MODEL)
    assert entry is not None
    shape = parse_config(load_config(entry.config_path), name=MODEL)
    d = Deployment(path="x", engine="vllm", span=Span("x", 1, 1, 1, 2), model=MODEL,
                   tensor_parallel_size=4, engine_version=version,
                   kv_cache_dtype=kv_cache_dtype)
    return CheckContext(d, shape=shape, settings=Settings())


def test_the_bundled_config_says_a_static_fp8_cache() -> None:
    # nvidia--MiniMax-M2.5-NVFP4/config.json: quantization_config.quant_method "modelopt",
    # kv_cache_scheme {"dynamic": false, "num_bits": 8, "type": "float"}
    shape = context("0.19.0", None).shape
    assert shape is not None and shape.quant is not None
    assert shape.quant.kv_cache == "fp8_e4m3"


@pytest.mark.parametrize("auto", [None, "auto"])
def test_auto_takes_the_checkpoint_fp8_cache_in_0_19(auto: str | None) -> None:
    # config.json: 62 layers, 8 KV heads, head_dim 128; TP 4 -> 2 KV heads per GPU.
    # bf16: 62 · 2 · 128 · 2 (K, V) · 2 B = 63,488 B per token per GPU; fp8: · 1 B = 31,744.
    bf16 = context("0.19.0", "bfloat16")
    fp8 = context("0.19.0", auto)
    assert bf16.checkpoint_kv is None  # an explicit --kv-cache-dtype wins
    assert fp8.checkpoint_kv == "fp8_e4m3"
    assert bf16.evaluation.kv_bytes_per_token.result == 62 * 2 * 128 * 2 * 2 == 63_488
    assert fp8.evaluation.kv_bytes_per_token.result == 62 * 2 * 128 * 2 * 1 == 31_744


def test_a_release_before_keeps_the_model_dtype() -> None:
    # vLLM 0.11.0 has no get_kv_cache_quant_algo_string: auto is bfloat16, 63,488 B as above.
    old = context("0.11.0", None)
    assert old.checkpoint_kv is None
    assert old.evaluation.kv_bytes_per_token.result == 62 * 2 * 128 * 2 * 2


def test_the_assumption_names_the_checkpoint_scheme() -> None:
    from tpcheck.checks import BY_CODE

    ctx = context("0.19.0", None)
    rule = next(r for r in BY_CODE.values() if r.memory_model)
    f = ctx.finding(rule, "x")
    [a] = [a for a in f.assumptions if a.kind == "kv-cache-dtype"]
    assert "fp8_e4m3" in a.text and "kv_cache_scheme" in a.text and "l.262-313" in a.text


@pytest.mark.parametrize(("version", "kv"), [("0.5.23", "fp8_e4m3"), ("0.5.2", None)])
def test_sglang_0_5_23_takes_it_and_0_5_2_does_not(version: str, kv: str | None) -> None:
    # sglang 0.5.23 mem_cache/kv_cache_dtype.py l.34-58: auto + kv_cache_quant_algo FP8 ->
    # fp8_e4m3; 0.5.2 model_runner.py l.1231-1232: auto is the model dtype.
    entry = catalog.find(MODEL)
    assert entry is not None
    shape = parse_config(load_config(entry.config_path), name=MODEL)
    d = Deployment(path="x", engine="sglang", span=Span("x", 1, 1, 1, 2), model=MODEL,
                   tensor_parallel_size=4, engine_version=version)
    ctx = CheckContext(d, shape=shape, settings=Settings())
    assert ctx.checkpoint_kv == kv
    # 62 layers · 2 KV heads per GPU · 128 · 2 (K, V) · (1 B fp8 | 2 B bf16)
    per_elem = 1 if kv else 2
    assert ctx.evaluation.kv_bytes_per_token.result == 62 * 2 * 128 * 2 * per_elem
