"""`plan` shows its prediction in the engine's own start-up log lines (issue 32), so a user can
diff tpcheck against the first pod log. Pinned to observation row 30 (vLLM 0.19.0, Llama-3.1-8B,
TP2 on H100 80GB, u = 0.95, max_model_len 8192), whose log printed:
  Model loading took 7.51 GiB memory; ... 7.51 GiB for weight, 1.89 GiB for peak activation,
  2.07 GiB for non-torch memory, and 0.0 GiB for CUDAGraph memory; Available KV cache memory:
  63.76 GiB; GPU KV cache size: 1,044,688 tokens; Maximum concurrency for 8,192 tokens per
  request: 127.53x."""

from __future__ import annotations

import re

from tests.physics.test_calibration import _shape
from tpcheck.formula import GIB
from tpcheck.hardware.gpus import find_gpu
from tpcheck.physics.plan import Options, engine_log_lines, evaluate


def _row30() -> tuple[str, ...]:
    opts = Options(memory=round(79.19 * GIB), gpu=find_gpu("h100-sxm"), utilization=0.95,
                   context=8192, engine_version="0.19.0")
    return engine_log_lines(evaluate(_shape("meta-llama/Llama-3.1-8B-Instruct"), 2, opts),
                            "vllm")


def test_vllm_lines_reproduce_row_30() -> None:
    lines = _row30()
    assert lines[0] == "Model loading took 7.51 GiB memory"
    # 7.48 GiB of checkpoint + the 32 MiB rotary cache; activation 1024 · 128,256 · 15 + 8192 ·
    # 4096 · 2 B = 1.9 GiB (1.89 logged); N = 0.25 + 1.5 + 0.32 = 2.07 GiB
    assert lines[1] == ("Actual usage is 7.51 GiB for weight, 1.9 GiB for peak activation, "
                        "2.07 GiB for non-torch memory, and 0.0 GiB for CUDAGraph memory.")
    pool = float(re.fullmatch(r"Available KV cache memory: ([\d.]+) GiB", lines[2])[1])  # type: ignore[index]
    assert abs(pool - 63.76) / 63.76 < 0.01  # 64.07 predicted
    m = re.fullmatch(r"GPU KV cache size: ([\d,]+) tokens", lines[3])
    assert m is not None and abs(int(m[1].replace(",", "")) - 1_044_688) / 1_044_688 < 0.01
    m = re.fullmatch(r"Maximum concurrency for 8,192 tokens per request: ([\d.]+)x", lines[4])
    assert m is not None and abs(float(m[1]) - 127.53) / 127.53 < 0.01


def test_sglang_lines_name_its_pool_and_tokens() -> None:
    opts = Options(gpu=find_gpu("h100-sxm"), engine="sglang", context=8192)
    ev = evaluate(_shape("Qwen/Qwen2.5-7B-Instruct"), 1, opts)
    lines = engine_log_lines(ev, "sglang")
    assert ev.tokens is not None
    n = int(ev.tokens.result)
    assert lines[0].startswith("Load weight end. ... mem usage=") and lines[0].endswith(" GB.")
    # MHA: K and V each half of #tokens · cell
    half = n * ev.kv_bytes_per_token.result / 2 / GIB
    assert lines[1] == (f"KV Cache is allocated. #tokens: {n}, K size: {half:.2f} GB, "
                        f"V size: {half:.2f} GB")
    assert lines[2] == f"max_total_num_tokens={n}"


def test_sglang_mla_pool_is_one_kv_size() -> None:
    ev = evaluate(_shape("deepseek-ai/DeepSeek-V2-Lite"), 1,
                  Options(gpu=find_gpu("h100-sxm"), engine="sglang"))
    assert ev.tokens is not None
    n = int(ev.tokens.result)
    kv = n * ev.kv_bytes_per_token.result / GIB  # 27 · (512 + 64) · 2 B a token
    assert engine_log_lines(ev, "sglang")[1] == (
        f"KV Cache is allocated. #tokens: {n}, KV size: {kv:.2f} GB")


def test_no_lines_where_the_engine_does_not_start() -> None:
    ev = evaluate(_shape("meta-llama/Llama-3.1-70B-Instruct"), 1,
                  Options(gpu=find_gpu("h100-sxm")))
    assert ev.fits is False and engine_log_lines(ev, "vllm") == ()
