"""Hints for a model reference that does not resolve: folder names and --served-model-name.

Each matching rule, the names that must not match, and the end-to-end path through lint, where a
hinted model's findings say which hint named it. Offline throughout, with an empty HF cache, so
only the bundled catalog can answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.shared import said
from tpcheck.cli import main
from tpcheck.models import catalog, hints
from tpcheck.models.resolve import ResolveError, Resolver
from tpcheck.sources import read_path

# offline, with an empty HF cache (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("empty_hf_cache")


@pytest.mark.parametrize(("ref", "hub_id", "named_by"), [
    ("/models/Qwen3-32B", "Qwen/Qwen3-32B", "Qwen3-32B"),
    ("/models/Qwen3-8B/", "Qwen/Qwen3-8B", "Qwen3-8B"),  # trailing slash
    ("/models/deepseek-r1", "deepseek-ai/DeepSeek-R1", "deepseek-r1"),  # case-insensitive
    ("/root/models/DeepSeek-R1-Distill-Llama-8B", "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
     "DeepSeek-R1-Distill-Llama-8B"),
    # the hub renamed Meta-Llama-3.1-* to Llama-3.1-*; folders keep either name
    ("/home/u/llama/Meta-Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-70B-Instruct",
     "Meta-Llama-3.1-70B-Instruct"),
    # last two components spell the hub id
    ("/data/Qwen/Qwen3-32B-FP8", "Qwen/Qwen3-32B-FP8", "Qwen/Qwen3-32B-FP8"),
    # a Hugging Face cache folder anywhere in the path, even for a model the catalog lacks
    ("/root/.cache/huggingface/hub/models--acme--private-7b/snapshots/0123abcd",
     "acme/private-7b", "models--acme--private-7b"),
    ("C:\\models\\Qwen3-8B", "Qwen/Qwen3-8B", "Qwen3-8B"),
])
def test_folder_names_that_name_a_model(ref: str, hub_id: str, named_by: str) -> None:
    assert hints.folder_hint(ref) == (hub_id, named_by)


@pytest.mark.parametrize("ref", [
    "/llm-folder",
    "/var/mdl/YOUR-MODEL-PATH",
    "/models/my-finetune",
    "/data/nemo_rl_gemma3_27b_3_11/hf3-11",
    "/models/Qwen3-32B-ft",  # no substring matching: a fine-tune's folder is not its base
    "/models/models--",  # a cache prefix with no org and name
    "/",
])
def test_folder_names_that_must_not_match(ref: str) -> None:
    assert hints.folder_hint(ref) is None


def test_a_name_held_by_two_orgs_is_ambiguous(monkeypatch: pytest.MonkeyPatch) -> None:
    ids = [*catalog.known_ids(), "unsloth/Qwen3-8B"]
    monkeypatch.setattr(catalog, "known_ids", lambda: ids)
    hints._by_name.cache_clear()
    assert hints.folder_hint("/models/Qwen3-8B") is None
    # the two-component spelling is still exact
    assert hints.folder_hint("/models/Qwen/Qwen3-8B") == ("Qwen/Qwen3-8B", "Qwen/Qwen3-8B")


@pytest.mark.parametrize(("served", "hub_id"), [
    ("Qwen/Qwen3-8B", "Qwen/Qwen3-8B"),
    (" Qwen/Qwen3-8B ", "Qwen/Qwen3-8B"),
    ("qwen3", None),  # a bare alias names no hub repository
    ("my--model/x", None),
    ("", None),
    (None, None),
])
def test_served_names(served: str | None, hub_id: str | None) -> None:
    assert hints.served_hint(served) == hub_id


def test_resolver_uses_the_folder_name_and_says_so(tmp_path: Path) -> None:
    r = Resolver(offline=True, cwd=str(tmp_path))
    res = r.resolve_hinted("/nonexistent/models/Qwen3-32B")
    assert res.source == "catalog" and res.model == "/nonexistent/models/Qwen3-32B"
    assert res.config["num_attention_heads"] == 64  # Qwen3-32B's config.json
    assert res.hint == ("model taken from the folder name `Qwen3-32B` -> Qwen/Qwen3-32B; "
                        "map it in [tool.tpcheck.models] to be exact")
    assert any(t.startswith("local folder /nonexistent/models/Qwen3-32B") for t in res.tried)


def test_resolver_uses_the_served_name_for_an_expression(tmp_path: Path) -> None:
    r = Resolver(offline=True, cwd=str(tmp_path))
    res = r.resolve_hinted("${MODEL}", served_name="Qwen/Qwen3-8B")
    assert res.config["num_attention_heads"] == 32  # Qwen3-8B's config.json
    assert res.hint is not None and "--served-model-name `Qwen/Qwen3-8B`" in res.hint
    with pytest.raises(ResolveError) as e:
        r.resolve_hinted("${MODEL}", served_name="qwen3")  # no usable hint: the first error
    assert e.value.kind == "unresolved" and "also tried" not in e.value.message


def test_an_unresolvable_hint_falls_back_with_what_was_tried(tmp_path: Path) -> None:
    r = Resolver(offline=True, cwd=str(tmp_path))
    with pytest.raises(ResolveError) as e:
        r.resolve_hinted("/models/my-finetune", served_name="acme/support-ft")
    assert e.value.kind == "not-found"
    assert ("also tried: model taken from --served-model-name `acme/support-ft` -> "
            "acme/support-ft: not-found") in e.value.message
    # a hint naming a hub id leads the message (TP000's headline is its first clause)
    assert e.value.message.startswith("no config.json found for acme/support-ft; ")
    # a hub id that resolves as written takes no hint
    res = r.resolve_hinted("Qwen/Qwen3-8B", served_name="Qwen/Qwen3-32B")
    assert res.hint is None and res.config["num_attention_heads"] == 32


def test_a_mapping_is_never_second_guessed(tmp_path: Path) -> None:
    r = Resolver(offline=True, cwd=str(tmp_path), mappings={"/models/Qwen3-32B": "missing.json"})
    with pytest.raises(ResolveError) as e:
        r.resolve_hinted("/models/Qwen3-32B")
    assert "also tried" not in e.value.message


def test_readers_record_the_served_name(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text(
        "vllm serve /models/x --served-model-name Qwen/Qwen3-8B -tp 2\n"
        "python -m sglang.launch_server --model-path /m/y --served-model-name org/y --tp 2\n")
    ds = read_path(str(script)).deployments
    assert [d.served_model_name for d in ds] == ["Qwen/Qwen3-8B", "org/y"]


def test_lint_findings_name_the_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "run.sh").write_text(
        "vllm serve /models/Qwen3-32B --tensor-parallel-size 3\n"
        "vllm serve ${MODEL} --served-model-name Qwen/Qwen3-8B --tensor-parallel-size 3\n"
        "vllm serve /models/my-finetune --tensor-parallel-size 3\n")
    code = main(["--offline", "--format", "json", str(tmp_path / "run.sh")])
    found = json.loads(capsys.readouterr().out)["findings"]
    by_line: dict[int, list[dict[str, str]]] = {}
    for f in found:
        by_line.setdefault(f["line"], []).append(f)
    assert code == 1
    # 64 heads % 3 = 1 (Qwen3-32B) and 32 % 3 = 2 (Qwen3-8B): TP101 on both hinted lines
    (l1,) = [f for f in by_line[1] if f["code"] == "TP101"]
    assert "64" in l1["message"]
    assert said(l1).endswith("assumes: model taken from the folder name `Qwen3-32B` -> "
                             "Qwen/Qwen3-32B; map it in [tool.tpcheck.models] to be exact")
    (l2,) = [f for f in by_line[2] if f["code"] == "TP101"]
    assert "32" in l2["message"] and "--served-model-name `Qwen/Qwen3-8B`" in said(l2)
    assert [f["code"] for f in by_line[3]] == ["TP000"]
