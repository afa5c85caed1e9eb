"""Each distinct layout evaluated once per run (issue 30): the memo keys a capacity without what
only the decode step reads, and a layout (weights, KV bytes, refusals) without what it does not
read, so TP201's what-ifs at another batch or across nodes and TP204/TP205's look at every known
release share what they have in common. The keys are only right if the figures do not move when
the fields left out of them do: these tests change each one and compare."""

from __future__ import annotations

from tests.physics.test_step import shape_of
from tpcheck.engines.defaults import KNOWN_RELEASES
from tpcheck.hardware.gpus import find_gpu
from tpcheck.hardware.links import LINKS
from tpcheck.physics.plan import (
    LAYOUT_READS,
    STEP_ONLY,
    Memo,
    Options,
    capacity,
    evaluate,
    evaluate_capacity,
    layout,
    layout_options,
)
from tpcheck.record import fields, replace

H100 = find_gpu("h100-sxm")
MI300 = find_gpu("mi300x")
LLAMA70 = "meta-llama/Meta-Llama-3-70B-Instruct"
# dense, MoE, MLA, sliding-window, MXFP4: every branch of layout() and the pool
MODELS = (LLAMA70, "Qwen/Qwen3-30B-A3B", "deepseek-ai/DeepSeek-V2-Lite",
          "google/gemma-3-12b-it", "openai/gpt-oss-120b")
NETWORK = LINKS[-1]

# A value other than the default for every field only the step reads.
STEP_CHANGES = {"batch": 8, "alpha": 5e-6, "custom_all_reduce": False, "flops": 1e14,
                "gpus_per_node": 2, "hbm_bandwidth": 1e12, "link_bandwidth": 5e10,
                "link_key": "pcie-gen5", "network": NETWORK}
# ... and for every field the layout does not read (the budget, reserve and pool read them).
POOL_CHANGES = {"utilization": 0.8, "max_num_seqs": 7, "block_size": 32,
                "max_num_batched_tokens": 4096, "entrypoint": "llm",
                "kv_connector": "", "memory": 60 << 30, "reserve": 3 << 30,
                "mamba_full_memory_ratio": 0.5, "max_mamba_cache_size": 64}


def test_the_changes_cover_every_field_left_out_of_a_key() -> None:
    # Options has 34 fields: 9 the step alone reads, 15 the layout reads, 10 the pool reads
    names = {f.name for f in fields(Options)}
    assert set(STEP_CHANGES) == set(STEP_ONLY)
    assert names - set(LAYOUT_READS) == set(STEP_CHANGES) | set(POOL_CHANGES)
    assert len(names) == 9 + 15 + 10


def test_what_only_the_step_reads_leaves_the_capacity_as_it_is() -> None:
    for model in MODELS:
        shape = shape_of(model)
        for eng, gpu in (("vllm", H100), ("sglang", H100), ("vllm", MI300)):
            opts = Options(engine=eng, gpu=gpu, context=8192)
            base = capacity(shape, 4, opts)
            for name, value in STEP_CHANGES.items():
                assert capacity(shape, 4, replace(opts, **{name: value})) == base, (model, name)


def test_what_the_layout_does_not_read_leaves_it_as_it_is() -> None:
    for model in MODELS:
        shape = shape_of(model)
        for eng in ("vllm", "sglang"):
            opts = Options(engine=eng, gpu=H100, context=8192)
            base = layout(shape, 4, opts)
            for name, value in {**STEP_CHANGES, **POOL_CHANGES}.items():
                assert layout(shape, 4, replace(opts, **{name: value})) == base, (model, name)


def test_the_release_is_in_the_layout_key_only_where_the_layout_reads_it() -> None:
    """vLLM's MXFP4 experts change layout between releases (gpt-oss-120b at t = 2 on an H100:
    the Triton Hopper layout of 0.20.0-0.28.0 is heavier than 0.33.0's); a bf16 Llama's layout
    is the same in every release, so one layout serves all seven."""
    oss, llama = shape_of("openai/gpt-oss-120b"), shape_of(LLAMA70)
    at = {v: Options(gpu=H100, context=8192, engine_version=v) for v in KNOWN_RELEASES["vllm"]}
    w = {v: layout(oss, 2, o).weights.result for v, o in at.items()}
    assert w["0.20.0"] > w["0.33.0"]
    assert len({layout_options(oss, o) for o in at.values()}) == 7
    assert len({layout_options(llama, o) for o in at.values()}) == 1
    newest = layout(llama, 2, at["0.33.0"])
    assert all(layout(llama, 2, o) == newest for o in at.values())
    # SGLang's cell is the release's own: its release stays in the key
    sg = [replace(o, engine="sglang", engine_version=v)
          for o, v in zip(at.values(), KNOWN_RELEASES["sglang"], strict=False)]
    assert len({layout_options(llama, o) for o in sg}) == len(KNOWN_RELEASES["sglang"])


def test_one_layout_evaluated_once_across_batches_nodes_and_releases() -> None:
    """TP201 asks t and h_kv again at the batch each admits and across the nodes t spans;
    TP205 asks each known release whether the weights fit. Each is computed once."""
    shape = shape_of(LLAMA70)
    memo = Memo()
    opts = Options(gpu=H100, context=8192)
    whole = evaluate(shape, 8, opts, memo)
    spread = evaluate(shape, 8, replace(opts, batch=12, gpus_per_node=4, network=NETWORK), memo)
    assert spread.pool is whole.pool and spread.weights is whole.weights
    assert spread.step is not None and spread.step != whole.step
    # one layout, one capacity, two whole evaluations (batch 1 in one node; batch 12 on two)
    assert sorted(k[3] is None for k in memo) == [False, False, False, True]
    for v in KNOWN_RELEASES["vllm"]:
        evaluate_capacity(shape, 8, replace(opts, engine_version=v), memo)
    # + one capacity per release named (7; unnamed = newest is its own key), still one layout
    assert sum(k[3] is None for k in memo) == 1
    assert sum(k[3] is False for k in memo) == 1 + 7


def test_the_memo_forgets_the_least_recently_used() -> None:
    shape = shape_of(LLAMA70)
    memo = Memo(size=3)  # one layout: its layout, capacity and whole entries
    first = evaluate(shape, 8, Options(gpu=H100, context=1024), memo)
    assert evaluate(shape, 8, Options(gpu=H100, context=1024), memo) is first
    evaluate(shape, 8, Options(gpu=H100, context=2048), memo)  # evicts all of the first
    assert {k[2].context for k in memo} == {2048}
    # a hit makes the entry the most recent: asked again, it outlives one inserted before it
    memo = Memo(size=4)
    evaluate(shape, 8, Options(gpu=H100, context=1024), memo)  # 3 entries
    memo.find((shape, 8, Options(gpu=H100, context=1024), None))  # the oldest, now the newest
    evaluate_capacity(shape, 4, Options(gpu=H100, context=1024), memo)  # 5 > 4: evicts one
    # the oldest was t = 8's capacity (its layout was used since): t = 8's layout is kept
    kept = {(k[1], k[3]) for k in memo}
    assert kept == {(8, None), (4, None), (4, False), (8, True)}


def test_weights_kept_by_what_they_read() -> None:
    """plan.weights_of keeps a layout's weights by its layout options, and by the release only
    where the weights read it (vLLM's FlashInfer MLA workspace): each kept answer is the one
    priced afresh, dense weights are one part across the releases, MLA's one per release."""
    from tpcheck.physics.plan import weights, weights_of

    for model, per_release in ((LLAMA70, False), ("deepseek-ai/DeepSeek-V2-Lite", True)):
        shape = shape_of(model)
        memo = Memo()
        for v in KNOWN_RELEASES["vllm"]:
            opts = Options(gpu=H100, context=4096, engine_version=v)
            assert weights_of(shape, 2, opts, memo) == weights(shape, 2, opts)
            assert weights_of(shape, 2, opts, memo) is weights_of(shape, 2, opts, memo)
        n = sum(1 for k in memo.parts if k[0] == "weights")
        assert n == (len(set(KNOWN_RELEASES["vllm"])) if per_release else 1)


def test_parts_are_bounded_oldest_first() -> None:
    """Memo.parts keeps the 2 x size latest parts (size 2: four), forgetting the oldest."""
    from tpcheck.physics.plan import weights

    shape = shape_of(LLAMA70)
    memo = Memo(size=2)
    w = weights(shape, 8, Options(gpu=H100))
    for i in range(6):
        memo.keep(("x", i), w)
    assert list(memo.parts) == [("x", 2), ("x", 3), ("x", 4), ("x", 5)]
    assert memo.part(("x", 1)) is None and memo.part(("x", 5)) is w


def test_reserve_kept_is_the_fresh_one() -> None:
    """A capacity whose reserve came from the memo equals one computed with no memo, across
    options the reserve key reads and ones it does not (context, KV dtype)."""
    for model in MODELS:
        shape = shape_of(model)
        memo = Memo()
        for ctx in (2048, 8192):
            for kvd in (None, "fp8"):
                for eager in (False, True):
                    opts = Options(gpu=H100, context=ctx, kv_cache_dtype=kvd,
                                   enforce_eager=eager)
                    assert capacity(shape, 2, opts, memo) == capacity(shape, 2, opts)
        assert any(k[0] == "reserve" for k in memo.parts)
