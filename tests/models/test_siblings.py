"""Same-shape relatives for hub ids the catalog does not hold: the rule, the names that must not
match, and the path through the resolver and lint, where the finding says which relative gave
the shape. Offline with an empty HF cache, so only the bundled catalog answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.shared import said
from tpcheck.cli import main
from tpcheck.lint import Linter
from tpcheck.models import catalog, siblings
from tpcheck.models.config import parse_config
from tpcheck.models.resolve import ResolveError, Resolver, load_json
from tpcheck.record import replace
from tpcheck.settings import Settings

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "reach3"


# offline, with an empty HF cache (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("empty_hf_cache")


@pytest.mark.parametrize(("asked", "relative", "how"), [
    ("Qwen/Qwen2.5-14B-Instruct", "Qwen/Qwen2.5-14B", "-instruct dropped"),
    ("Qwen/Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-72B", "-instruct dropped"),
    ("google/gemma-2-27b-it", "google/gemma-2-27b", "-it dropped"),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mistralai/Mixtral-8x7B-v0.1", "-instruct dropped"),
    ("mistralai/Mistral-7B-v0.3", "mistralai/Mistral-7B-Instruct-v0.3", "-instruct added"),
    # dated re-releases
    ("deepseek-ai/DeepSeek-R1-0528", "deepseek-ai/DeepSeek-R1", "-0528 dropped"),
    ("deepseek-ai/DeepSeek-V3-0324", "deepseek-ai/DeepSeek-V3", "-0324 dropped"),
    ("Qwen/Qwen3-235B-A22B-Instruct-2507", "Qwen/Qwen3-235B-A22B",
     "-instruct dropped, -2507 dropped"),
    # a quantized name inside its own org, same quantization word
    ("Qwen/Qwen3-30B-A3B-Instruct-2507-FP8", "Qwen/Qwen3-30B-A3B-FP8",
     "-instruct dropped, -2507 dropped"),
    # the re-release table: V3.1 and V3.1-Terminus ship V3's config
    ("deepseek-ai/DeepSeek-V3.1", "deepseek-ai/DeepSeek-V3",
     "deepseek-v3.1 ships deepseek-v3's config"),
    ("deepseek-ai/DeepSeek-V3.1-Terminus", "deepseek-ai/DeepSeek-V3",
     "deepseek-v3.1-terminus ships deepseek-v3's config"),
    # another org's unquantized upload: the closest name wins (-Instruct, not the base)
    ("unsloth/Llama-3.2-3B-Instruct", "meta-llama/Llama-3.2-3B-Instruct", "another org"),
    ("meta-llama/Meta-Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-70B-Instruct",
     "the hub's Meta-Llama-3 -> Llama-3 rename"),
])
def test_relatives(asked: str, relative: str, how: str) -> None:
    assert siblings.relative(asked) == (relative, how)


@pytest.mark.parametrize("asked", [
    # other parameter sizes
    "Qwen/Qwen2.5-4B", "Qwen/Qwen2.5-32B-Instruct-1M", "meta-llama/Llama-3.1-13B-Instruct",
    # other lines of a family keep their word: a coder, a VL model, a distill are not the base
    "Qwen/Qwen2.5-Coder-7B-Instruct", "Qwen/Qwen2.5-VL-7B-Instruct",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
    # another producer's quantized checkpoint (nvidia's FP8 Llama also quantizes the KV cache)
    "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8",
    # a quantization the catalog does not hold, in the same org
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8", "Qwen/Qwen3-32B-AWQ",
    "google/gemma-7b-AWQ",
    # a point release that changed the architecture (V3.2's sparse-attention indexer)
    "deepseek-ai/DeepSeek-V3.2-Exp",
    # other versions of a family
    "mistralai/Mistral-7B-Instruct-v0.1", "Qwen/Qwen2-14B-Instruct",
    # a fine-tune named after its base plus its own word
    "acme/Qwen3-32B-support-ft",
])
def test_names_that_must_not_match(asked: str) -> None:
    assert siblings.relative(asked) is None


def test_relatives_in_the_catalog_share_their_shape() -> None:
    """The rule checked against the authentic configs it would pair: every bundled pair with one
    stem has the same parsed shape, except max_position_embeddings (an -Instruct release trained
    to another context), which the finding names as the relative's."""
    pairs = 0
    for ids in siblings._by_stem().values():
        shapes = []
        for i in ids:
            entry = catalog.find(i)
            assert entry is not None
            shape = parse_config(load_json(entry.config_path), name="m", path="p")
            shapes.append(replace(shape, max_position_embeddings=None))
        pairs += len(ids) - 1
        assert all(s == shapes[0] for s in shapes), ids
    assert pairs >= 14  # Qwen2/2.5/3, Gemma, Llama-2/3/3.1/3.2 base+tuned pairs in the catalog


def test_resolver_says_which_relative(tmp_path: Path) -> None:
    r = Resolver(offline=True, cwd=str(tmp_path))
    res = r.resolve_hinted("Qwen/Qwen2.5-14B-Instruct")
    # Qwen2.5-14B: 48 layers, 40 query heads over 8 KV heads
    assert (res.config["num_hidden_layers"], res.config["num_attention_heads"],
            res.config["num_key_value_heads"]) == (48, 40, 8)
    assert res.source == "catalog" and res.location.endswith("Qwen--Qwen2.5-14B/config.json")
    assert res.hint == ("shape of relative Qwen/Qwen2.5-14B (-instruct dropped); pin it with "
                        "`tpcheck models pull` or [tool.tpcheck.models]")
    # a mapping is never second-guessed, and a served name gets relatives too
    res = r.resolve_hinted("${MODEL}", served_name="deepseek-ai/DeepSeek-V3.1-Terminus")
    assert res.config["num_hidden_layers"] == 61  # DeepSeek-V3
    assert res.hint is not None and res.hint.startswith(
        "model taken from --served-model-name `deepseek-ai/DeepSeek-V3.1-Terminus` -> "
        "deepseek-ai/DeepSeek-V3.1-Terminus: shape of relative deepseek-ai/DeepSeek-V3 ")
    mapped = Resolver(offline=True, cwd=str(tmp_path),
                      mappings={"Qwen/Qwen2.5-14B-Instruct": "missing.json"})
    with pytest.raises(ResolveError):
        mapped.resolve_hinted("Qwen/Qwen2.5-14B-Instruct")


def test_a_relative_that_disagrees_on_quantization_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The name says unquantized, the relative's name says FP8: no relative, and TP000 says
    why (the rule never pairs these; the resolver checks what it is given)."""
    monkeypatch.setattr(siblings, "relative", lambda _: ("Qwen/Qwen3-32B-FP8", "test"))
    with pytest.raises(ResolveError) as e:
        Resolver(offline=True, cwd=str(tmp_path)).resolve_hinted("Qwen/Qwen3-32B-Chat")
    assert ("relative Qwen/Qwen3-32B-FP8: quantized otherwise than Qwen/Qwen3-32B-Chat"
            in e.value.message)


def test_the_real_values_file_reads_its_relative(capsys: pytest.CaptureFixture[str]) -> None:
    """production-stack's V100 TP-4 values name Qwen/Qwen2.5-14B-Instruct, which is not bundled:
    inspect shows Qwen2.5-14B's config and says so; before, TP000."""
    path = FIXTURES / ("vllm-project--production-stack_tutorials_assets_"
                       "values-25-v100-multi-gpu-tp4.yaml")
    assert main(["inspect", "--offline", "--format", "json", str(path)]) == 0
    (d,) = json.loads(capsys.readouterr().out)["deployments"]
    assert d["model"] == "Qwen/Qwen2.5-14B-Instruct" and d["tensor_parallel_size"] == 4
    assert d["model_problem"] is None
    assert "Qwen--Qwen2.5-14B/config.json (shape of relative Qwen/Qwen2.5-14B" in d["model_config"]


def test_lint_findings_name_the_relative(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "run.sh").write_text(
        "vllm serve Qwen/Qwen2.5-14B-Instruct --tensor-parallel-size 3\n"
        "vllm serve Qwen/Qwen2.5-Coder-7B-Instruct --tensor-parallel-size 3\n")
    assert main(["--offline", "--format", "json", str(tmp_path / "run.sh")]) == 1
    found = json.loads(capsys.readouterr().out)["findings"]
    # 40 query heads % 3 = 1: the engine refuses TP 3 (TP101), said with the relative
    (tp101,) = [f for f in found if f["code"] == "TP101"]
    assert tp101["line"] == 1 and "40" in tp101["message"]
    assert "assumes: shape of relative Qwen/Qwen2.5-14B (-instruct dropped)" in said(tp101)
    assert [f["code"] for f in found if f["line"] == 2] == ["TP000"]


@pytest.mark.parametrize(("asked", "base"), [
    # kubeai's repacks (../shared/corpus/real/substratusai__kubeai) name their bundled bases;
    # tpcheck.models.repacks takes these (tests/models/test_repacks.py)
    ("neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", "meta-llama/Llama-3.1-70B-Instruct"),
    ("hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", "meta-llama/Llama-3.1-70B-Instruct"),
    ("amd/Llama-3.1-405B-Instruct-FP8-KV", "meta-llama/Llama-3.1-405B"),
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8",
     "meta-llama/Llama-4-Maverick-17B-128E-Instruct"),
    # quantization words the repack rule does not price: the base is named, not taken
    ("nvidia/Llama-3.1-70B-Instruct-NVFP4", "meta-llama/Llama-3.1-70B-Instruct"),
    ("acme/Meta-Llama-3.1-70B-Instruct-FP8-GGUF", "meta-llama/Llama-3.1-70B-Instruct"),
    # no base bundled, or an unquantized name: nothing to say
    ("RedHatAI/NVIDIA-Nemotron-3-Ultra-550B-A55B-FP8-block", None),
    ("Qwen/Qwen3-8B", None),
])
def test_a_quantized_name_names_its_base(asked: str, base: str | None) -> None:
    assert siblings.unquantized_base(asked) == base


@pytest.mark.parametrize("asked", ["nvidia/Llama-3.1-70B-Instruct-NVFP4",
                                   "acme/Meta-Llama-3.1-70B-Instruct-FP8-GGUF"])
def test_a_repack_of_no_known_format_takes_nothing(asked: str, tmp_path: Path) -> None:
    run = tmp_path / "run.sh"
    run.write_text(f"vllm serve {asked} --tensor-parallel-size 8\n")
    res = Linter(Settings(offline=True, gpu="h100-sxm")).run([str(run)])
    [f] = [f for f in res.findings if f.code == "TP000"]
    assert f.message == f"no config.json found for {asked}"
    assert ("relative meta-llama/Llama-3.1-70B-Instruct: same shape, not taken: the figures "
            f"need {asked}'s own quantization_config (its quantization words are not a rule "
            "tpcheck knows)") in f.text
    assert not [g for g in res.findings if g.code.startswith(("TP1", "TP2"))]
