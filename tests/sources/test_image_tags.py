"""Engine releases read from image tags as published (vLLM, SGLang, and images built on them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tpcheck.engines.release import resolve as release_for
from tpcheck.sources import read_path
from tpcheck.sources.kube import engine_version


@pytest.mark.parametrize(("image", "engine", "release"), [
    # build suffixes (CUDA, extras) are dropped: the option tables and defaults are per release
    ("vllm/vllm-openai:v0.5.2-cu126", "vllm", "0.5.2"),
    ("vllm/vllm-openai:v0.8.5-cu126", "vllm", "0.8.5"),
    ("docker.io/vllm/vllm-openai:v0.10.0", "vllm", "0.10.0"),
    ("vllm/vllm-openai:v0.10.1.1", "vllm", "0.10.1.1"),  # vLLM's four-part patch release
    ("aibrix/vllm-openai:v0.10.2-aibrix-v0.5.0.pdr-nixl-0.7.1-20251219", "vllm", "0.10.2"),
    ("aibrix/vllm-openai:v0.7.3.self.post1", "vllm", "0.7.3"),  # a rebuild's suffix, no PEP 440
    # post and rc parts are the release's own
    ("vllm/vllm-openai:v0.6.3.post1", "vllm", "0.6.3.post1"),
    ("lmsysorg/sglang:v0.4.6.post1-cu124", "sglang", "0.4.6.post1"),
    ("lmsysorg/sglang:0.5.10.post1-cu124", "sglang", "0.5.10.post1"),
    ("lmsysorg/sglang:v0.5.2rc2-cu126", "sglang", "0.5.2rc2"),
    ("lmsysorg/sglang:v0.5.7-mooncake", "sglang", "0.5.7"),
    ("registry.local:5000/vllm/vllm-openai:v0.6.4", "vllm", "0.6.4"),  # :5000 is a port
    ("vllm/vllm-openai:v0.6.4@sha256:0123abcd", "vllm", "0.6.4"),
    # no release named: unknown, as before
    ("vllm/vllm-openai:latest", "vllm", None),
    ("vllm/vllm-openai:nightly", "vllm", None),
    ("vllm/vllm-openai@sha256:0123abcd", "vllm", None),
    ("registry.local:5000/vllm/vllm-openai", "vllm", None),
    ("lmcache/vllm-openai:2025-05-05-v1", "vllm", None),  # a date, not a release
    ("vllm/vllm-openai:v0.5.2foo", "vllm", None),  # not 0.5 either
    ("lmsysorg/sglang:v0.4.6.post1-cu124", "vllm", None),  # another engine's image
    ("nvcr.io/nvidia/vllm:26.02-py3", "vllm", None),  # NGC's container release
    # Vendor builds naming the release after the engine's word, as published. AMD's table
    # https://rocm.docs.amd.com/en/docs-7.1.0/how-to/rocm-for-ai/inference/benchmark-docker/
    # previous-versions/vllm-history.html (tag -> "vLLM 0.8.5", "vLLM 0.9.0.1", ...):
    ("rocm/vllm:rocm6.3.1_vllm_0.8.5_20250513", "vllm", "0.8.5"),
    ("rocm/vllm:rocm7.0.0_vllm_0.11.1_20251024", "vllm", "0.11.1"),
    ("rocm/vllm:rocm6.4.1_vllm_0.9.0.1_20250605", "vllm", "0.9.0.1"),
    ("rocm/vllm:rocm6.3.1_instinct_vllm0.8.3_20250415", "vllm", "0.8.3"),
    # https://rocm.docs.amd.com/en/7.12.0-preview/rocm-for-ai/vllm.html: py3.12 and
    # pytorch_2.9.1 are other versions in the same tag; only the one after "vllm" counts
    ("rocm/vllm:rocm7.12.0_gfx950-dcgpu_ubuntu24.04_py3.12_pytorch_2.9.1_vllm_0.16.0", "vllm",
     "0.16.0"),
    # https://rocm.docs.amd.com/projects/ai-ecosystem/en/latest/inference/sglang.html
    ("rocm/sgl-dev:v0.5.13.post1-ubuntu24.04-py3.14-rocm7.14", "sglang", "0.5.13.post1"),
    # AMD's SGLang history table: lmsysorg/sglang:v0.4.5-rocm630 is "SGLang 0.4.5"
    ("lmsysorg/sglang:v0.4.5-rocm630", "sglang", "0.4.5"),
    # gpustack/runner PR 233, gpustack_runner/runner.py.json ("service_version")
    ("gpustack/runner:rocm7.2-vllm0.25.0", "vllm", "0.25.0"),
    ("gpustack/runner:rocm7.2-sglang0.5.12.post1", "sglang", "0.5.12.post1"),
    ("gpustack/runner:rocm7.2-sglang0.5.12.post1", "vllm", None),  # the other engine's build
    # no release named (production-stack tutorials/assets/values-01-minimal-amd-example.yaml)
    ("rocm/vllm:instinct_main", "vllm", None),
    ("rocm/vllm:rocm6.3.1_vllm_0.8.5_vllm_0.9.1", "vllm", None),  # two releases: ambiguous
])
def test_release_from_tag(image: str, engine: str, release: str | None) -> None:
    assert engine_version(image, engine) == release  # type: ignore[arg-type]


def test_post_release_with_build_suffix_pins_the_release() -> None:
    """``v0.4.6.post1-cu124`` pinned nothing (the suffix defeated the tag pattern): now the
    manifest's deployment carries 0.4.6.post1 and findings name that release."""
    text = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: s}\nspec:\n  template:\n"
        "    spec:\n      containers:\n      - name: s\n"
        "        image: lmsysorg/sglang:v0.4.6.post1-cu124\n"
        "        command: [python3, -m, sglang.launch_server, --model-path, Qwen/Qwen3-8B,"
        " --tp, '2']\n"
    )
    (d,) = read_path("d.yaml", text).deployments
    assert d.engine_version == "0.4.6.post1"
    rel = release_for("sglang", image=d.image, image_version=d.engine_version)
    assert (rel.version, rel.pinned) == ("0.4.6.post1", True)


@pytest.mark.parametrize("release", ["0.9.2", "0.10.2", "0.11.0"])
def test_chunked_prefill_switch_on_releases_that_type_it_skip_validation(
        tmp_path: Path, release: str) -> None:
    """vLLM 0.9-0.11 annotate enable_chunked_prefill ``SkipValidation[bool]``: argparse still
    gets a BooleanOptionalAction (``--no-enable-chunked-prefill`` accepted on 0.9.2, vLLM
    issue 20914's command line), so a tag that pins those releases is no TP004/TP003."""
    from tpcheck.lint import Linter
    from tpcheck.settings import Settings

    p = tmp_path / "run.yaml"
    p.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: s\n"
        f"    image: vllm/vllm-openai:v{release}-cu126\n"
        "    command: [vllm, serve, Qwen/Qwen3-8B, --no-enable-chunked-prefill,"
        " --enable-chunked-prefill, --max-num-seqs, '8']\n")
    res = Linter(Settings(offline=True)).run([str(p)])
    assert not [f for f in res.findings if f.code in ("TP003", "TP004")], res.findings


def test_rocm_tag_pins_the_release_it_names(tmp_path: Path) -> None:
    """``rocm/vllm:rocm6.3.1_vllm_0.8.5_20250513`` pinned nothing (the tag starts with the ROCm
    version): its deployment now carries vLLM 0.8.5, and the 0.8.5 option table judges it:
    --num-scheduler-steps is registered there (gone after 0.9.2), so no TP004, which unpinned
    (checked against 0.33.0) it was."""
    from tpcheck.lint import Linter
    from tpcheck.settings import Settings

    text = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: v\n"
        "    image: rocm/vllm:rocm6.3.1_vllm_0.8.5_20250513\n"
        "    command: [vllm, serve, Qwen/Qwen3-8B, --num-scheduler-steps, '10']\n"
    )
    (d,) = read_path("p.yaml", text).deployments
    assert d.engine_version == "0.8.5"
    rel = release_for("vllm", image=d.image, image_version=d.engine_version)
    assert (rel.version, rel.pinned) == ("0.8.5", True)
    p = tmp_path / "p.yaml"
    p.write_text(text)
    res = Linter(Settings(offline=True)).run([str(p)])
    assert not [f for f in res.findings if f.code == "TP004"], res.findings
    p.write_text(text.replace("rocm6.3.1_vllm_0.8.5_20250513", "instinct_main"))
    res = Linter(Settings(offline=True)).run([str(p)])
    assert [f.code for f in res.findings if f.code == "TP004"] == ["TP004"]
