"""vLLM ``--max-model-len -1``/``auto`` is the engine's auto-fit, not a length of −1 tokens.

vllm 0.33.0: ``utils/argparse_utils.py:77-94`` human_readable_int_or_auto maps ``-1`` and
``auto`` to -1 (the flag's type, ``engine/arg_utils.py:404-405``); ``config/model.py:2639-2642``
starts from the model's maximum; ``v1/core/kv_cache_planning.py:1337-1410`` (called at :1545)
shortens it to what the KV pool holds, or raises when not even one token fits.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tpcheck.checks.base import Finding
from tpcheck.lint import Linter
from tpcheck.settings import Settings
from tpcheck.sources import read_path

L70 = "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 2"
# Llama-3.1-70B: L=80, h_kv=8, d_h=128, bf16 → at t=2: 2·80·(8/2)·128·2 = 163,840 B per token
KV_B = 2 * 80 * (8 // 2) * 128 * 2
MPE = 131_072  # its config.json max_position_embeddings


def lint(tmp_path: Path, text: str) -> list[Finding]:
    p = tmp_path / "run.sh"
    p.write_text(text + "\n")
    res = Linter(Settings(offline=True, gpu="h100-sxm")).run([str(p)])
    assert not res.errors, res.errors
    return res.findings


@pytest.mark.parametrize(("written", "value"), [
    ("-1", -1), ("auto", -1), ("AUTO", -1),  # argparse_utils.py:91-92: value.lower() == "auto"
    ("32k", 32_000), ("25.6k", 25_600),  # decimal suffixes, argparse_utils.py:44-49
    ("32K", 32 * 1024), ("1M", 1 << 20),  # binary suffixes, argparse_utils.py:50-55
])
def test_max_model_len_spellings_read_as_the_engine_reads_them(written: str, value: int) -> None:
    (d,) = read_path("run.sh", f"{L70} --max-model-len {written}\n").deployments
    assert d.max_model_len == value
    assert not d.notes  # "auto" used to be "not a valid human_int"


def test_auto_fit_shortens_to_the_pool_instead_of_refusing(tmp_path: Path) -> None:
    fixed = lint(tmp_path, f"{L70} --max-num-seqs 8 --max-model-len {MPE}")
    auto = lint(tmp_path, f"{L70} --max-num-seqs 8 --max-model-len -1")
    # the model's full 131,072 tokens do not fit: written out, vLLM refuses (TP204) ...
    [f204] = [f for f in fixed if f.code == "TP204"]
    tokens = next(x for x in f204.formulas if x.name == "kv_pool_tokens").result
    pool = next(x for x in f204.formulas if x.name == "pool_bytes_per_gpu").result
    assert tokens == pool // (KV_B * 16) * 16 < MPE
    # ... with -1 it starts with max_model_len = what the pool holds: no TP204, one seat
    assert not [f for f in auto if f.code == "TP204"]
    [f203] = [f for f in auto if f.code == "TP203"]
    seats = next(x for x in f203.formulas if x.name == "seats").result
    avg = next(x for x in f203.formulas if x.name == "avg_tokens_at_cap")
    c = avg.values["kv_pool_tokens"]  # the pool at --max-num-seqs 8 (R depends on it)
    assert c == avg.result * 8 and 0 < c < MPE  # 38,400 tokens: 4,800 each at 8 sequences
    assert seats == 1  # floor(c / c): the shortened length is the whole pool
    assert f"1 sequence of {c:,} tokens" in f203.text
    assert f"vLLM shortens the model's {MPE:,} to the {c:,} tokens the pool holds" in f203.text
    assert "-1 tokens" not in f203.text


def test_auto_fit_where_the_model_maximum_fits(tmp_path: Path) -> None:
    # Qwen3-32B at t=2: max_position_embeddings 40,960, 64 layers, h_kv 8, d_h 128 →
    # 2·64·4·128·2 = 131,072 B per token; the pool holds several full-length sequences.
    base = "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 2 --max-num-seqs 1"
    auto = lint(tmp_path, f"{base} --max-model-len -1")
    fixed = lint(tmp_path, f"{base} --max-model-len 40960")
    [a] = [f for f in auto if f.code == "TP203"]
    [b] = [f for f in fixed if f.code == "TP203"]
    seats = next(x for x in a.formulas if x.name == "seats").result
    assert seats == next(x for x in b.formulas if x.name == "seats").result > 1
    assert "sequences of 40,960 tokens" in a.text
    assert ("c = 40,960 tokens per sequence (--max-model-len -1 (auto): the model's "
            "max_position_embeddings, which fits the pool)") in a.text
    # before: "the pool seats 19990 sequences of -1 tokens"
    assert "-1 tokens" not in a.text


def test_auto_fit_with_no_pool_is_the_engine_s_auto_fit_error(tmp_path: Path) -> None:
    # u = 0.84: M·u = 85,031,714,816 · 0.84 = 71.43 GB just above the 70.56 GB of weights per
    # GPU, and the reserve R takes the rest: pool < 0, so no length fits
    found = lint(tmp_path, f"{L70} --gpu-memory-utilization 0.84 --max-model-len auto")
    [f204] = [f for f in found if f.code == "TP204"]
    pool = next(x for x in f204.formulas if x.name == "pool_bytes_per_gpu").result
    assert pool < 0
    assert "Cannot auto-fit max_model_len: not enough GPU memory available" in f204.text
    assert f204.message.startswith(f"{MPE:,} tokens need")
    assert f"c = {MPE:,} tokens per sequence (--max-model-len -1 (auto)" in f204.text
