"""Quantized repacks of bundled models (tpcheck.models.repacks): the name rule, the names that
must not match, the weight bytes the assumed quantization gives, and the findings on the real
files of fixtures/repacks (sources in its SOURCES.tsv). Offline with an empty HF cache, so only
the bundled catalog answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.shared import said
from tpcheck.cli import main
from tpcheck.lint import Linter
from tpcheck.models import catalog
from tpcheck.models.config import parse_config
from tpcheck.models.params import param_counts
from tpcheck.models.quant import weight_bytes
from tpcheck.models.repacks import SUFFIXES, repack_of
from tpcheck.models.resolve import ResolveError, Resolver, load_json
from tpcheck.models.shape import ModelShape
from tpcheck.record import replace
from tpcheck.settings import Settings
from tpcheck.sources import read_path

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "repacks"
KUBEAI = "substratusai--kubeai_manifests_models_"


# offline, with an empty HF cache (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("empty_hf_cache")


@pytest.mark.parametrize(("asked", "base", "suffix", "method", "bits"), [
    # the corpus's repacks (../shared/corpus/real/substratusai__kubeai, GKE's gemma samples)
    ("neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", "meta-llama/Llama-3.1-70B-Instruct", "FP8",
     "fp8", 8),
    ("neuralmagic/Meta-Llama-3.1-405B-Instruct-FP8", "meta-llama/Llama-3.1-405B", "FP8", "fp8", 8),
    ("amd/Llama-3.1-405B-Instruct-FP8-KV", "meta-llama/Llama-3.1-405B", "FP8-KV", "fp8", 8),
    ("hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", "meta-llama/Llama-3.1-70B-Instruct",
     "AWQ-INT4", "awq", 4),
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8",
     "meta-llama/Llama-4-Maverick-17B-128E-Instruct", "FP8", "fp8", 8),
    ("google/gemma-2b-AWQ", "google/gemma-2b", "AWQ", "awq", 4),
    ("google/gemma-7b-AWQ", "google/gemma-7b-it", "AWQ", "awq", 4),
    # the other suffixes of the table
    ("RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8-dynamic", "meta-llama/Llama-3.1-70B-Instruct",
     "FP8-dynamic", "fp8", 8),
    ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "Qwen/Qwen2.5-7B-Instruct", "GPTQ-Int4", "gptq", 4),
    ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8", "Qwen/Qwen2.5-7B-Instruct", "GPTQ-Int8", "gptq", 8),
    ("neuralmagic/Meta-Llama-3.1-8B-Instruct-quantized.w4a16", "meta-llama/Llama-3.1-8B-Instruct",
     "quantized.w4a16", "compressed-tensors", 4),
    ("RedHatAI/Llama-3.3-70B-Instruct-quantized.w8a8", "meta-llama/Llama-3.3-70B-Instruct",
     "quantized.w8a8", "compressed-tensors", 8),
])
def test_repack_rule(asked: str, base: str, suffix: str, method: str, bits: int) -> None:
    r = repack_of(asked)
    assert r is not None
    assert (r.base, r.suffix, r.quant.method, r.quant.weight_bits) == (base, suffix, method, bits)


@pytest.mark.parametrize("asked", [
    # no bundled model of that size: a 7B is not the 8B, a 2B is neither 3.2-1B nor 3.2-3B
    "acme/Llama-3.1-7B-Instruct-FP8", "acme/Llama-3.2-2B-Instruct-AWQ",
    # formats the table does not hold, or a quantization word before the suffix
    "acme/Meta-Llama-3.1-70B-Instruct-GGUF", "acme/Meta-Llama-3.1-70B-Instruct-FP8-GGUF",
    "acme/Llama-3.1-8B-Instruct-AWQ-4bit", "nvidia/Llama-3.1-8B-Instruct-NVFP4",
    "acme/Llama-3.1-8B-Instruct-INT4-AWQ", "acme/Llama-3.1-8B-Instruct-FP8-v2",
    # another line of the family, and a family with no bundled base
    "Qwen/Qwen2.5-Coder-7B-Instruct-AWQ", "RedHatAI/NVIDIA-Nemotron-3-Ultra-550B-A55B-FP8-block",
    # an unquantized name, and a name that is only a suffix
    "meta-llama/Llama-3.1-70B-Instruct", "acme/FP8",
])
def test_names_that_must_not_match(asked: str) -> None:
    assert repack_of(asked) is None


@pytest.mark.parametrize(("authentic", "suffix"), [
    ("01-ai/Yi-6B-Chat-4bits", ("awq",)),  # AutoAWQ: bits 4, group_size 128, zero_point true
    ("Qwen/Qwen1.5-32B-Chat-GPTQ-Int4", ("gptq", "int4")),  # bits 4, group_size 128
])
def test_the_table_is_what_authentic_files_of_the_format_say(
        authentic: str, suffix: tuple[str, ...]) -> None:
    """The suffix's Quant is the one tpcheck parses from a bundled checkpoint of that format."""
    entry = catalog.find(authentic)
    assert entry is not None
    shape = parse_config(load_json(entry.config_path), name=authentic, path="p")
    assert SUFFIXES[suffix][0] == shape.quant


def test_fp8_per_tensor_prices_a_block_fp8_file_within_a_tenth_of_a_percent() -> None:
    """Qwen3-32B-FP8's own file (fp8, 128x128 blocks) against the rule on Qwen3-32B: the same
    1 B a weight; the block scales (4 B per 16,384 weights) add 0.02 %."""
    def total(model: str, quant: object = None) -> int:
        entry = catalog.find(model)
        assert entry is not None
        shape = parse_config(load_json(entry.config_path), name=model, path="p")
        if quant is not None:
            shape = replace(shape, quant=quant)
        return weight_bytes(shape, param_counts(shape)).total

    real = total("Qwen/Qwen3-32B-FP8")
    ruled = total("Qwen/Qwen3-32B", SUFFIXES[("fp8",)][0])
    assert 0 < real - ruled < real / 1000


def test_an_authentic_config_wins_over_the_rule(tmp_path: Path) -> None:
    """Qwen/Qwen3-32B-FP8 is bundled with its own quantization_config (fp8 blocks 128×128): the
    rule never replaces a file tpcheck has."""
    res = Resolver(offline=True, cwd=str(tmp_path)).resolve_hinted("Qwen/Qwen3-32B-FP8")
    assert res.location.endswith("Qwen--Qwen3-32B-FP8/config.json")
    assert res.hint is None and res.assumed_quant is None
    assert res.config["quantization_config"]["weight_block_size"] == [128, 128]


def test_an_already_quantized_base_is_refused(tmp_path: Path) -> None:
    """DeepSeek-V3 ships fp8 blocks: "-FP8" on it is no rule tpcheck can price; TP000 says so."""
    assert repack_of("deepseek-ai/DeepSeek-V3-FP8") is not None  # the name rule alone matches
    with pytest.raises(ResolveError) as e:
        Resolver(offline=True, cwd=str(tmp_path)).resolve_hinted("deepseek-ai/DeepSeek-V3-FP8")
    assert "relative deepseek-ai/DeepSeek-V3: already quantized, so -FP8 is not a rule" in str(
        e.value)


def _shape(name: str) -> tuple[ModelShape, str]:
    (d,) = read_path(str(FIXTURES / name)).deployments
    shape, problem, source = Linter(Settings(offline=True)).shape_for(d)
    assert problem is None and shape is not None and source is not None
    return shape, source


def test_405b_fp8_weight_bytes() -> None:
    """Llama-3.1-405B (126 layers, d 16384, 128 query / 8 KV heads of 128, ffn 53248, vocab
    128256, untied) with every linear in fp8 and the embeddings, lm_head and norms in bf16."""
    shape, source = _shape(KUBEAI + "llama-3.1-405b-instruct-fp8-h100.yaml")
    assert "shape of relative meta-llama/Llama-3.1-405B (-FP8 read as fp8 weights" in source
    w = weight_bytes(shape, param_counts(shape))
    # per layer: q 16384·16384 + k,v 2·16384·1024 + o 16384·16384 + gate,up,down 3·16384·53248
    #          = 268,435,456 + 33,554,432 + 268,435,456 + 2,617,245,696 = 3,187,671,040 weights
    # 1 B each, and one fp32 scale per tensor family (q, kv, o, gate, up, down: 6 · 4 B)
    linear = 126 * (3_187_671_040 + 6 * 4)  # 401,646,554,064
    embed = 128_256 * 16_384 * 2  # 4,202,692,608, and the same again for lm_head
    norms = (2 * 126 + 1) * 16_384 * 2  # 8,290,304
    assert w.embedding == w.lm_head == embed
    assert w.total == linear + 2 * embed + norms == 410_060_229_584
    # against the bf16 base: 2 B per weight, so about half (405.9 B params)
    assert param_counts(shape).total == 405_853_388_800


def test_70b_awq_weight_bytes() -> None:
    """Llama-3.1-70B in AWQ int4: 4 bits per weight plus an fp16 scale and a 4-bit zero per 128
    input columns (2.5 B per group of 128), embeddings and lm_head bf16."""
    shape, _ = _shape(KUBEAI + "llama-3.1-70b-instruct-awq-int4-gh200.yaml")
    q = shape.quant
    assert q is not None and (q.method, q.group_size, q.zero_point) == ("awq", 128, True)
    w = weight_bytes(shape, param_counts(shape))
    # per layer: q 8192² + k,v 2·8192·1024 + o 8192² + 3·8192·28672 = 855,638,016 weights
    weights = 80 * 855_638_016  # 68,451,041,280
    linear = weights // 2 + weights // 128 * 5 // 2  # 34,225,520,640 + 1,336,934,400
    embed = 128_256 * 8192 * 2  # 2,101,346,304 each for embed_tokens and lm_head
    norms = (2 * 80 + 1) * 8192 * 2  # 2,637,824
    assert w.total == linear + 2 * embed + norms == 39_767_785_472  # 37.0 GiB: one GH200 holds it


def test_the_real_files_read_as_their_bases(capsys: pytest.CaptureFixture[str]) -> None:
    """The five real files: no TP000; what fires names the relative and the assumed format."""
    assert main(["--offline", "--gpu", "h100-sxm", "--format", "json", str(FIXTURES)]) == 1
    found = json.loads(capsys.readouterr().out)["findings"]
    assert not [f for f in found if f["code"] == "TP000"]
    by_file: dict[str, list[str]] = {}
    for f in found:
        by_file.setdefault(Path(f["path"]).name, []).append(f["code"])
    # 405B FP8 on 8 H100 at --max-model-len 65536, fp8 KV, --max-num-seqs 1024: 7 seats (TP203)
    (tp203,) = [f for f in found if f["code"] == "TP203" and "fp8-h100" in f["path"]]
    assert tp203["message"] == ("--max-num-seqs 1024 is 146× the 7 KV seats: the scheduler "
                                "preempts")
    assert ("assumes: shape of relative meta-llama/Llama-3.1-405B (-FP8 read as fp8 weights, 1 "
            "byte each; embeddings and lm_head 16-bit, the KV cache as the flags say)"
            in said(tp203))
    # 70B AWQ on one GH200 at 16k, Maverick FP8 on 8 H100 at 430k, Gemma 7B AWQ on one L4:
    # they fit, so only the removed-option warnings of the files themselves remain
    for name in (KUBEAI + "llama-3.1-70b-instruct-awq-int4-gh200.yaml",
                 KUBEAI + "llama-4-maverick-430k-h100.yaml",
                 "GoogleCloudPlatform--kubernetes-engine-samples_ai-ml_llm-serving-gemma_vllm_"
                 "vllm-7b-awq.yaml"):
        assert set(by_file.get(name, [])) <= {"TP004"}, name


def test_maverick_fp8_seats_430k(capsys: pytest.CaptureFixture[str]) -> None:
    """kubeai's 430k Maverick profile on 8 H100: fp8 weights 47.2 GiB a GPU, and the pool seats
    2.15 sequences of 430,000 tokens (bf16 KV: 48 layers · 2 · 1 KV head a GPU · 128 · 2 B =
    24,576 B a token), so no TP202; the bf16 base (400.7 B params · 2 B / 8, about 93 GiB a
    GPU) would not load at all."""
    path = FIXTURES / (KUBEAI + "llama-4-maverick-430k-h100.yaml")
    assert main(["inspect", "--offline", "--format", "json", str(path)]) == 0
    (d,) = json.loads(capsys.readouterr().out)["deployments"]
    text = "\n".join(d["predicted_log"])
    assert "Model loading took 47.17 GiB memory" in text
    assert "GPU KV cache size: 922,448 tokens" in text  # 21.11 GiB / 24,576 B
    assert 922_448 * 24_576 <= 21.12 * 2**30
    assert "Maximum concurrency for 430,000 tokens per request: 2.15x" in text  # 922,448 / 430k


def test_fp8_kv_in_the_name_leaves_the_kv_cache_to_the_flags(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM's --kv-cache-dtype auto is the model dtype: amd's -FP8-KV seats what neuralmagic's
    -FP8 seats until the flag says fp8, which doubles the pool (1 B instead of 2 a value)."""
    run = tmp_path / "run.sh"
    tail = "--tensor-parallel-size 8 --max-model-len 65536 --max-num-seqs 1024"
    run.write_text(f"vllm serve neuralmagic/Meta-Llama-3.1-405B-Instruct-FP8 {tail}\n"
                   f"vllm serve amd/Llama-3.1-405B-Instruct-FP8-KV {tail}\n"
                   f"vllm serve amd/Llama-3.1-405B-Instruct-FP8-KV {tail} --kv-cache-dtype fp8\n")
    assert main(["--offline", "--gpu", "h100-sxm", "--format", "json", str(run)]) == 0  # info
    found = json.loads(capsys.readouterr().out)["findings"]
    pool = {f["line"]: f["formulas"][0]["values"]["kv_pool_tokens"]
            for f in found if f["code"] == "TP203"}
    assert pool[1] == pool[2] == 359_520  # bf16 KV: 126 · 2 · 128 · 2 B = 64,512 B a token
    assert pool[3] == 719_056  # fp8: 32,256 B a token, twice the tokens (to a 16-token block)
    assert abs(pool[3] - 2 * pool[1]) <= 16
