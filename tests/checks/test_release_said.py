"""Memory findings and the plan header say which engine release they assume (issue 19)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.shared import said
from tpcheck.engines.release import NOT_PINNED
from tpcheck.engines.release import resolve as release_for

ROOT = Path(__file__).resolve().parents[2]


def lint(tmp_path: Path, name: str, text: str, *args: str) -> list[dict[str, object]]:
    (tmp_path / name).write_text(text)
    p = subprocess.run([sys.executable, "-m", "tpcheck.cli", "--format", "json", "--offline",
                        *args, name], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert p.returncode in (0, 1), p.stderr
    doc = json.loads(p.stdout)
    assert doc["errors"] == []
    return doc["findings"]  # type: ignore[no-any-return]


def one(findings: list[dict[str, object]], code: str) -> dict[str, object]:
    [f] = [f for f in findings if f["code"] == code]
    return f


@pytest.mark.parametrize(("kw", "version", "source", "pinned"), [
    ({"image": "vllm/vllm-openai:v0.21.0", "image_version": "0.21.0"}, "0.21.0",
     "from the image tag vllm-openai:v0.21.0", True),
    ({"setting": "0.12.0", "setting_from": "--engine-version"}, "0.12.0",
     "from --engine-version", True),
    ({"image": "vllm/vllm-openai:latest"}, "0.33.0",
     "newest known (image vllm-openai:latest not pinned: pin it to be exact)", False),
    ({"image": "vllm/vllm-openai:nightly"}, "0.33.0",
     "newest known (image vllm-openai:nightly not pinned: pin it to be exact)", False),
    ({}, "0.33.0", NOT_PINNED, False),
    # NGC's year.month tag and a wrapper's own version are not vLLM releases tpcheck has read.
    ({"image": "nvcr.io/nvidia/vllm:26.02-py3", "image_version": "26.02-py3"}, "0.33.0",
     "newest known (the image tag vllm:26.02-py3 names no release tpcheck has read: pin a "
     "known one to be exact)", False),
])
def test_release_for(kw: dict[str, str], version: str, source: str, pinned: bool) -> None:
    r = release_for("vllm", **kw)  # type: ignore[arg-type]
    assert (r.version, r.source, r.pinned) == (version, source, pinned)


# Llama-3.2-3B on a T4 (14.75 GiB): the pool holds 60,512 tokens with 0.21.0-0.33.0 (u 0.92,
# CUDA-graph estimate, FlashInfer sampler), 61,472 with 0.10.1 (u 0.9, no graph estimate, 18 B
# per logit), 62,336 with 0.17.0 (u 0.9, the Triton sampler's 15 B per logit), 63,968 with
# 0.20.0 (u 0.92, no graph estimate) and 55,744 with 0.12.0 (sort sampler); every release's
# weights hold the 32 MiB rotary cache (131,072 · 128 · 2 B). 61,000 tokens (3,813 blocks of 16
# = 61,008) fit only with 0.10.1, 0.17.0 and 0.20.0.
FLIPS = "vllm serve meta-llama/Llama-3.2-3B-Instruct --max-model-len 61000\n"


def test_unpinned_verdict_that_flips_says_so_and_stays_below_error(tmp_path: Path) -> None:
    f = one(lint(tmp_path, "run.sh", FLIPS, "--gpu", "t4"), "TP204")
    msg = said(f)
    assert f["severity"] == "warning"
    assert f"assumes: vLLM 0.33.0, {NOT_PINNED}" in msg
    assert "it does not hold with 0.10.1, 0.17.0, 0.20.0, so pin the image to know" in msg


def test_pinned_release_is_named_with_its_source(tmp_path: Path) -> None:
    f = one(lint(tmp_path, "run.sh", FLIPS, "--gpu", "t4", "--engine-version", "0.12.0"),
            "TP204")
    msg = said(f)
    assert "assumes: vLLM 0.12.0, from --engine-version" in msg
    assert "depends on the release" not in msg and "every known release" not in msg
    # 0.12.0's pool: 6,394,500,629 B (sort sampler) // (114,688 B · 16) = 3,484 blocks of 16 =
    # 55,744 tokens; the caching allocator's 0.5 MiB slack on the 751.5 MiB embedding
    # (128,256 · 3,072 · 2 B, a 752 MiB block: physics/alloc.py) took the 3,485th block
    assert "the predicted pool holds 55,744 tokens" in msg


def test_settings_file_is_named(tmp_path: Path) -> None:
    (tmp_path / ".tpcheck.toml").write_text('engine-version = "0.17.0"\n')
    fs = lint(tmp_path, "run.sh", FLIPS, "--gpu", "t4")
    assert [f for f in fs if f["code"] == "TP204"] == []  # 61,776 tokens hold 61,008 with 0.17
    (tmp_path / ".tpcheck.toml").write_text('engine-version = "0.21.0"\n')
    f = one(lint(tmp_path, "run.sh", FLIPS, "--gpu", "t4"), "TP204")
    assert ("assumes: vLLM 0.21.0, from [tool.tpcheck] engine-version in .tpcheck.toml"
            in said(f))


def test_verdict_that_holds_everywhere_says_so_and_stays_an_error(tmp_path: Path) -> None:
    # rules/TP204.md's example: 40,960 tokens of Qwen3-32B need 10 GiB; the pool is about 7 GiB
    # with every known release, a shortfall beyond the 1 GiB error band.
    f = one(lint(tmp_path, "run.sh", "vllm serve Qwen/Qwen3-32B --max-model-len 40960\n",
                 "--gpu", "h100-sxm"), "TP204")
    assert f["severity"] == "error"
    assert "the verdict holds for every known release (0.10.1 to 0.33.0)" in said(f)


MANIFEST = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: m}
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: IMAGE
          args: ["vllm", "serve", "Qwen/Qwen3-32B", "--tensor-parallel-size", "16",
                 "--max-model-len", "32768"]
          resources: {limits: {nvidia.com/gpu: 16}}
"""


@pytest.mark.parametrize(("image", "expected"), [
    ("vllm/vllm-openai:v0.21.0", "assumes: vLLM 0.21.0, from the image tag vllm-openai:v0.21.0"),
    ("vllm/vllm-openai:latest",
     "assumes: vLLM 0.33.0, newest known (image vllm-openai:latest not pinned: pin it to be "
     "exact)"),
])
def test_tp201_names_the_image_release(tmp_path: Path, image: str, expected: str) -> None:
    f = one(lint(tmp_path, "d.yaml", MANIFEST.replace("IMAGE", image), "--gpu", "h100-sxm"),
            "TP201")
    assert expected in said(f)


def test_plan_header_names_the_release_and_each_default_once() -> None:
    p = subprocess.run([sys.executable, "-m", "tpcheck.cli", "plan",
                        "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h100-sxm", "--offline",
                        "--engine-version", "0.9.2", "--tp", "1"],
                       capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "engine=vllm 0.9.2 (from --engine-version)" in p.stdout
    assert "default max_num_batched_tokens (" not in p.stdout
    [line] = [x for x in p.stdout.splitlines() if "default max_num_batched_tokens" in x]
    assert line.strip().startswith("default max_num_batched_tokens = 8192 (vllm 0.9.2 ")
    assert "0.33.0" not in line


def test_another_release_is_asked_only_for_its_verdict() -> None:
    """An unpinned TP205 asks each other known release whether it fires (issue 30): that
    evaluates the written layout once per release, not the what-fits-instead scan (wider TP,
    more stages, fp8 weights) the finding's fix is built from."""
    from tpcheck.checks import BY_CODE
    from tpcheck.checks.context import CheckContext
    from tpcheck.lint import Linter
    from tpcheck.settings import Settings
    from tpcheck.sources import read_path

    linter = Linter(Settings(offline=True), gpu_flag="h100-sxm")
    # Llama-3.1-70B at t = 1: 141 GB of bf16 weights on an 80 GB H100, with every release
    [d] = read_path("run.sh", "vllm serve meta-llama/Llama-3.1-70B-Instruct\n").deployments
    shape, problem, _ = linter.shape_for(d)
    assert shape is not None and problem is None
    gpu, origin = linter.gpu_for(d)
    memo = linter._evaluations
    ctx = CheckContext(d, shape=shape, settings=linter.settings, gpu=gpu, gpu_origin=origin,
                       evaluations=memo)
    rule = BY_CODE["TP205"]
    assert ctx.fires_with(rule, "0.20.0")
    # the written layout (t = 1, p = 1) and nothing else: its layout, which no release changes
    # for a bf16 Llama (kept without one); no capacity at 0.20.0 and no decode step, which the
    # verdict (weights > M·u, 0.20.0's u = 0.92) does not need
    assert {(t, o.pp, o.engine_version, kind) for _, t, o, kind in memo} == {(1, 1, None, None)}
    [f] = rule.check(ctx)  # the finding itself still scans what fits instead
    assert f.fix is not None and "--tensor-parallel-size 2" in f.fix
    assert "the verdict holds for every known release (0.10.1 to 0.33.0)" in said(f.to_json())
    # (the scan prices the weights of other layouts, kept as parts; their pools are not kept)
    assert len({k[2] for k in memo.parts if k[0] == "weights"}) > 1


def test_another_releases_options_are_the_ones_its_own_context_builds() -> None:
    """fires_with's contexts copy the asking context's options with what the release decides
    replaced (the release, DP-attention's width, the checkpoint's KV dtype, the context): equal
    to the options a context of that deployment builds field by field."""
    from tpcheck.checks.context import CheckContext
    from tpcheck.engines.defaults import KNOWN_RELEASES
    from tpcheck.lint import Linter
    from tpcheck.record import replace
    from tpcheck.settings import Settings
    from tpcheck.sources import read_path

    linter = Linter(Settings(offline=True), gpu_flag="h100-sxm")
    launches = (
        "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 4 "
        "--max-model-len -1\n",
        "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 "
        "--enable-dp-attention\n",
        "vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-cache-dtype auto --dtype half\n",
    )
    for text in launches:
        [d] = read_path("run.sh", text).deployments
        shape, _, _ = linter.shape_for(d)
        assert shape is not None
        gpu, _ = linter.gpu_for(d)
        # SGLang <= 0.4.4 (the asking launch's): --enable-dp-attention alone sets dp = tp
        asking = (d, replace(d, engine_version="0.4.3")) if d.engine == "sglang" else (d,)
        for ctx, v in ((CheckContext(a, shape=shape, settings=linter.settings, gpu=gpu,
                                     evaluations=linter._evaluations), v)
                       for a in asking for v in KNOWN_RELEASES[d.engine]):
            other_d = replace(d, engine_version=v)
            like = CheckContext(other_d, shape=shape, settings=linter.settings, gpu=gpu,
                                evaluations=linter._evaluations)
            like._like = ctx
            own = CheckContext(other_d, shape=shape, settings=linter.settings, gpu=gpu,
                               evaluations=linter._evaluations)
            assert like.options == own.options, (text, v)
            assert like.options_for(1234) == own.options_for(1234), (text, v)
