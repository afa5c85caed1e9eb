"""The per-(image, engine) memo of ``yamlnodes.engine_version``."""

from __future__ import annotations

from tpcheck.sources import yamlnodes
from tpcheck.sources.yamlnodes import engine_version, image_version

IMAGES = (None, "", "vllm/vllm-openai:v0.8.5", "lmsysorg/sglang:v0.5.2rc2-cu126",
          "rocm/vllm:rocm6.3.1_vllm_0.8.5_20250513", "rocm/vllm:instinct_main",
          "nvcr.io/nvidia/vllm:26.02-py3", "vllm/vllm-openai", "registry:5000/vllm")


def test_the_memo_answers_as_computing_afresh() -> None:
    for image in IMAGES:
        for engine in ("vllm", "sglang"):
            fresh = image_version(image, engine)
            assert engine_version(image, engine) == fresh  # computed, then kept
            assert engine_version(image, engine) == fresh  # kept (None included)
            assert yamlnodes._VERSIONS[(image, engine)] == fresh


def test_the_memo_is_keyed_by_engine() -> None:
    # a vLLM image pins a vLLM release and nothing for SGLang, whichever is asked first
    assert engine_version("vllm/vllm-openai:v0.9.1", "sglang") is None
    assert engine_version("vllm/vllm-openai:v0.9.1", "vllm") == "0.9.1"
    assert engine_version("vllm/vllm-openai:v0.9.1", "sglang") is None


def test_a_kept_answer_is_the_one_returned() -> None:
    key = ("vllm/vllm-openai:v0.9.2", "vllm")
    assert engine_version(*key) == "0.9.2"
    yamlnodes._VERSIONS[key] = "stale"
    try:
        assert engine_version(*key) == "stale"  # the memo is consulted: a wrong entry shows
    finally:
        del yamlnodes._VERSIONS[key]
    assert engine_version(*key) == "0.9.2"
