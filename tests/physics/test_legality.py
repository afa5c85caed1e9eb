"""Refusal verdicts: the engines' three divisibility rules plus vLLM's padded vocabulary."""

from __future__ import annotations

from pathlib import Path

import pytest

from tpcheck.checks.registry import REFUSAL_CODES
from tpcheck.models import catalog
from tpcheck.models.config import load_config, parse_config
from tpcheck.models.shape import ModelShape
from tpcheck.physics.legality import legal_sizes, nearest_legal, padded_vocab, refusals


def _shape(model_id: str) -> ModelShape:
    e = catalog.find(model_id)
    assert e is not None
    return parse_config(load_config(e.config_path), name=model_id, path=str(e.config_path))


def _expected_codes(s: ModelShape, t: int) -> set[str]:
    """The rules as the engines' source states them (see ../shared/engines/vllm-0.33.md §1)."""
    codes: set[str] = set()
    if s.heads % t:
        codes.add("TP101")  # config/model.py: heads % tp
    kv = s.kv_heads
    if not s.is_mla and ((kv >= t and kv % t) or (kv < t and t % kv)):
        codes.add("TP102")  # LlamaAttention: partition or replicate
    widths = []
    if s.ffn and s.dense_layers:
        widths.append(s.ffn)
    if s.moe:
        widths.append(s.moe.expert_ffn)
        if s.moe.num_shared_experts and s.moe.shared_expert_ffn:
            widths.append(s.moe.num_shared_experts * s.moe.shared_expert_ffn)
    if any(w % t for w in widths):
        codes.add("TP103")  # divide() in the column/row parallel layers, FusedMoEConfig assert
    q = s.quant
    # vLLM distributed/utils.py verify_group_size_divides_partition: each rank's share of the
    # row-parallel input is whole quant groups; gptq/awq 4-bit run on Marlin, whose tile needs
    # that share to be a multiple of min_thread_k = 128 (the dense FFN here; none of the grouped
    # catalog models is MoE)
    grouped = q is not None and q.method in ("awq", "gptq") and bool(q.group_size) and t > 1
    if grouped and q and s.ffn and s.ffn % t == 0 and (
        (s.ffn // t) % (q.group_size or 1) or (s.ffn // t) % 128
    ):
        codes.add("TP103")
    if q and q.block and t > 1:
        bn, bk = q.block
        for w in widths[:2]:
            if w % t == 0 and ((w // t) % bk or (w // t) % bn):
                codes.add("TP103")  # fp8_utils.validate_fp8_block_shape
    # ModelOpt linear layers refuse a per-rank input that is not whole scale blocks: NVFP4 16
    # (modelopt.py l.2026-2029), MXFP8 32 (l.2335-2339); per component group, through the
    # checkpoint's overrides (MIXED_PRECISION: an unlisted group is unquantized)
    if q is not None and t > 1:
        lin = [("dense_mlp", s.ffn if s.dense_layers else 0)]
        if s.moe and s.moe.num_shared_experts:
            lin.append(("shared_experts", s.moe.num_shared_experts * s.moe.shared_expert_ffn))
        for group, w in lin:
            gq = dict(q.overrides).get(group, None if q.method == "modelopt-mixed" else q)
            size = {"modelopt-nvfp4": 16, "mxfp8": 32}.get(gq.method if gq else "", 0)
            if w and size and w % t == 0 and (w // t) % size:
                codes.add("TP103")
    c = s.compressed
    if c is not None and c.o_groups and t > c.o_groups:
        codes.add("TP103")  # deepseek_v4/attention.py l.226: o_groups // t = 0 groups per rank
    if ((s.vocab + 63) // 64 * 64) % t:
        codes.add("TP104")  # VocabParallelEmbedding: padded vocab divided by tp
    return codes


@pytest.mark.parametrize("model_id", catalog.all_ids())
def test_refusal_verdicts_for_every_catalog_model(model_id: str) -> None:
    s = _shape(model_id)
    for t in range(1, 65):
        got = {REFUSAL_CODES[r.kind] for r in refusals(s, t)}
        assert got == _expected_codes(s, t), (model_id, t)


def test_llama_70b_tp6_refused_three_ways_with_the_engine_text() -> None:
    s = _shape("meta-llama/Llama-3.1-70B-Instruct")
    rs = {REFUSAL_CODES[r.kind]: r for r in refusals(s, 6)}
    # 64 heads % 6 = 4; 8 KV heads >= 6 and 8 % 6 = 2; FFN 28672 % 6 = 4; padded vocab
    # 128256 = 64·2004 and 128256 % 6 = 0, so no TP104.
    assert set(rs) == {"TP101", "TP102", "TP103"}
    assert rs["TP101"].engine_message == (
        "Total number of attention heads (64) must be divisible by tensor parallel size (6).")
    assert rs["TP101"].formula.result == 64 % 6
    assert rs["TP102"].formula.result == 8 % 6
    assert rs["TP103"].formula.result == 28672 % 6
    # 64 = 2^6 heads, 8 KV heads (partition up to 8, replicate by multiples of 8 after),
    # 28672 = 2^12·7: legal sizes are the powers of two up to 64.
    assert legal_sizes(s) == [1, 2, 4, 8, 16, 32, 64]
    assert nearest_legal(s, 6) == (4, 8)


def test_awq_group_refusal_on_a_bundled_awq_model() -> None:
    # Yi-6B-Chat-4bits: AWQ, group 128, ffn 11008 = 2^8·43. t = 2: 5504 = 43·128, whole groups;
    # t = 4: 2752 = 21·128 + 64, so vLLM refuses the split (half a quant group per rank).
    s = _shape("01-ai/Yi-6B-Chat-4bits")
    assert s.quant is not None and (s.quant.method, s.quant.group_size) == ("awq", 128)
    assert not refusals(s, 2)
    rs = refusals(s, 4)
    assert [REFUSAL_CODES[r.kind] for r in rs] == ["TP103"]
    assert rs[0].formula.result == 11008 // 4 % 128 == 64


def test_vocab_padding_refusal_only_on_vllm() -> None:
    # Phi-3-mini: V = 32064 = 64·501, so the padded vocab is 32064 and 501 is odd: a t with an
    # odd factor other than 3, 167 (501 = 3·167) fails. h = 32 rules out odd t anyway, so use a
    # what-if with 3 heads to isolate the vocab check at t = 3: 32064 % 3 = 0 → legal.
    s = _shape("microsoft/Phi-3-mini-4k-instruct")
    assert padded_vocab(s.vocab) == 32064
    assert "TP104" not in {REFUSAL_CODES[r.kind] for r in refusals(s, 3)}
    # Qwen2.5-0.5B: V = 151936 = 64·2374 = 2^7·1187: at t = 7 (what-if) vLLM refuses the vocab.
    q = _shape("gensyn/Qwen2.5-0.5B-Instruct")
    assert padded_vocab(q.vocab) == 151936
    assert "TP104" in {REFUSAL_CODES[r.kind] for r in refusals(q, 7)}
    # SGLang pads to 64·t instead and never refuses the vocabulary.
    assert "TP104" not in {REFUSAL_CODES[r.kind] for r in refusals(q, 7, engine="sglang")}


def test_fp8_block_refusal_qwen3_30b_a3b_fp8_tp4() -> None:
    # moe_intermediate_size 768 / 4 = 192; 192 % 128 (weight_block_size) = 64 → vLLM refuses.
    s = _shape("Qwen/Qwen3-30B-A3B-FP8")
    assert s.quant is not None and s.quant.block == (128, 128)
    rs = [r for r in refusals(s, 4) if r.check == "fp8_block"]
    assert rs and rs[0].engine_message == (
        "The output_size of gate's and up's weight = 192 is not divisible by weight "
        "quantization block_n = 128.")
    # with expert parallel the experts are not width-split: no refusal from the experts
    assert not [r for r in refusals(s, 4, expert_parallel=True) if r.check == "fp8_block"]


def test_expert_width_flattened_over_dp_on_vllm() -> None:
    # Qwen3-30B-A3B: moe_intermediate_size 768 = 2^8·3. vLLM shards experts over t·dp without
    # EP: 8·32 = 256 divides 768 (= 3·256); 8·64 = 512 does not (768 % 512 = 256).
    s = _shape("Qwen/Qwen3-30B-A3B")
    assert not [r for r in refusals(s, 8, dp=32) if r.check == "expert_ffn"]
    bad = [r for r in refusals(s, 8, dp=64) if r.check == "expert_ffn"]
    assert bad and bad[0].formula.result == 768 % 512
    assert not [r for r in refusals(s, 8, dp=64, expert_parallel=True) if r.check == "expert_ffn"]


def test_awq_marlin_tile_refusal() -> None:
    # Users hit 'input_size_per_partition = 14784 is not divisible by min_thread_k = 128' with
    # Qwen2-72B-AWQ at TP2: intermediate_size 29568 / 2 = 14784, 14784 % 128 = 64.
    from tpcheck.models.shape import Quant
    from tpcheck.record import replace

    base = _shape("Qwen/Qwen2.5-7B")
    s = replace(base, ffn=29568, heads=64, kv_heads=8,
                            quant=Quant("awq", 4, group_size=128))
    rs = [r for r in refusals(s, 2) if REFUSAL_CODES[r.kind] == "TP103"]
    assert rs, refusals(s, 2)
    assert "14784" in rs[0].engine_message


def test_legal_sizes_are_computed_once_per_shape_and_options(tmp_path: Path) -> None:
    # Issue 14 item 8: 10,000 refused launches of one model in one file took 32 s, because
    # TP101-TP104 each recomputed the legal sizes (64 refusal checks) for every deployment.
    from tpcheck.lint import Linter
    from tpcheck.physics.legality import _legal_sizes
    from tpcheck.settings import Settings

    n = 200
    (tmp_path / "r.sh").write_text("vllm serve Qwen/Qwen3-32B --tensor-parallel-size 3\n" * n)
    _legal_sizes.cache_clear()
    result = Linter(Settings(offline=True), gpu_flag="h100-sxm").run([str(tmp_path / "r.sh")])
    # t = 3 against Qwen3-32B: 64 mod 3 = 1 (TP101), 8 mod 3 = 2 (TP102), FFN 25600 mod 3 = 1
    # (TP103), padded vocab 151936 = 64·2374 and 151936 mod 3 = 1 (TP104): four rules per launch
    assert result.deployments == n
    assert sorted({f.code for f in result.findings}) == ["TP101", "TP102", "TP103", "TP104"]
    info = _legal_sizes.cache_info()
    # one shape, one engine, one set of options: the list up to 64 is the only key (the
    # nearest-size search looks up to max(64, 2·3) = 64 too); every other ask is a hit
    assert info.misses == 1, info
    # 2 asks (list + nearest) per launch: the four rules of a launch share its answer
    assert info.hits >= 2 * n - 1, info


def test_legal_sizes_returns_a_fresh_list_each_time() -> None:
    # the memo must not hand out its own storage: a caller that edits its list edits only its own
    s = _shape("Qwen/Qwen3-32B")
    first = legal_sizes(s)
    first.append(999)
    assert legal_sizes(s) == [1, 2, 4, 8, 16, 32, 64]  # 64 heads, 8 KV heads: powers of two


def test_deepseek_v4_flash_o_groups_over_t() -> None:
    """vLLM gives each rank o_groups // t output groups (deepseek_v4/attention.py l.226) and
    divides by that count at load (fp8_utils.py l.1223) or in the first forward (flashmla.py
    l.69); V4-Flash's o_groups = 8, so t = 16 has 8 // 16 = 0 groups and crashes, though
    h = 64, the shared expert 2048/16 = 128 (one fp8 block) and the vocabulary all divide."""
    s = _shape("deepseek-ai/DeepSeek-V4-Flash")
    assert s.compressed is not None and s.compressed.o_groups == 8
    (r,) = refusals(s, 16)
    assert (REFUSAL_CODES[r.kind], r.check, r.engines) == ("TP103", "o_groups", ("vllm",))
    assert r.formula.values == {"o_groups": 8, "t": 16} and r.formula.result == 0  # 8 // 16
    assert "ZeroDivisionError" in r.engine_message
    assert refusals(s, 8) == []  # 8 // 8 = 1 group of 64 / 8 = 8 heads per rank
    assert legal_sizes(s, 64) == [1, 2, 4, 8]  # 16 was offered before; 32: 2048/32 = 64 < block
    # SGLang also floors o_groups // attn_tp (models/deepseek_v4.py l.1037), but what it does
    # with 0 groups is not traced: no refusal is claimed for it.
    assert refusals(s, 16, engine="sglang") == []


def test_deepseek_v4_pro_o_groups_never_the_only_refusal() -> None:
    """V4-Pro's o_groups = 16 ends at t = 32, where the fp8 shared expert already refuses:
    3072 / 32 = 96, not a whole 128-wide block."""
    s = _shape("deepseek-ai/DeepSeek-V4-Pro")
    checks = {r.check for r in refusals(s, 32)}
    assert "o_groups" in checks and "fp8_block" in checks  # 16 // 32 = 0; 96 mod 128 = 96
    assert "o_groups" not in {r.check for r in refusals(s, 16)}  # 16 // 16 = 1


@pytest.mark.parametrize("model_id", ["meta-llama/Llama-3.1-70B", "Qwen/Qwen3-30B-A3B-FP8",
                                      "deepseek-ai/DeepSeek-V3", "openai/gpt-oss-120b",
                                      "zai-org/GLM-5-FP8", "Qwen/Qwen3-14B"])
@pytest.mark.parametrize("kw", [{}, {"engine": "sglang"}, {"engine": "sglang", "attn_dp": 4},
                                {"engine": "vllm", "dp": 2}, {"expert_parallel": True}])
def test_legal_sizes_are_the_sizes_refusals_passes(model_id: str, kw: dict[str, object]) -> None:
    # legal_sizes only works through the sizes the heads divide (refusals' first check):
    # the answer is still every t in 1..64 with no refusal at all.
    s = _shape(model_id)
    brute = [t for t in range(1, 65) if not refusals(s, t, **kw)]  # type: ignore[arg-type]
    assert legal_sizes(s, 64, **kw) == brute
    assert brute  # t = 1 starts every one of them
    if model_id == "Qwen/Qwen3-14B" and kw.get("attn_dp") == 4:
        # 40 heads over attn_tp = 32/4 = 8: t = 32 starts, though 40 mod 32 = 8
        assert 32 in brute
