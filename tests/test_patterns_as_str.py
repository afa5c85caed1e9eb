"""Tests spelled as patterns and asked with str methods (start-up: each pattern's compile cost a
one-file lint ~0.2-1.2 million instructions) give the pattern's answer on every text."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

import tpcheck.engines as versions
from tpcheck.hardware import gpus, machines
from tpcheck.models import refs
from tpcheck.sources import kube, kube_pod, yamlnodes

_TEXT = st.text(alphabet=st.sampled_from(
    "aAzZlmetrgvV09_-./$({%}) \t\n\u0661\u00e9\u0130\u2003"), max_size=16)


def _pieces(*words: str) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(words), max_size=6).map("".join) | _TEXT


@given(_pieces("p5", ".", "48x", "large", "metal", "-", "g6e", "4", "x", "A", "\u0661", "_"))
def test_aws_sizes_are_the_pattern(text: str) -> None:
    assert machines.is_aws_size(text) is (re.fullmatch(machines.AWS_SIZE, text) is not None)


@given(_TEXT)
def test_dashed_is_the_substitution(text: str) -> None:
    assert gpus.dashed(text) == re.sub(r"[^a-z0-9]+", "-", text).strip("-")
    assert gpus.is_dashed(text) is (re.sub(r"[^a-z0-9]+", "-", text).strip("-") == text)


@given(_pieces("p5", ".", "48x", "large", "-", "--", "a3", "highgpu", "8g", "Standard_ND96",
               " ", "A", "\u0661"))
def test_a_machine_name_already_normal_is_kept_as_the_slow_path_keeps_it(text: str) -> None:
    n = text.strip().lower()
    assert machines._norm(text) == (n if machines.is_aws_size(n) else gpus.dashed(n))


@given(_pieces("0", "33", ".", "v", "V", "1", "rc", "\u0661", " ", "x"))
def test_versions_are_the_patterns_first_match(text: str) -> None:
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    want = None if not text or not m else tuple(int(x) for x in m.groups() if x is not None)
    assert versions.parse_version.__wrapped__(text) == want


@given(_pieces("$", "(", "{", "{{", "%", "A", "_", "1", "x", " "))
def test_expressions_are_the_pattern(text: str) -> None:
    want = not text.strip() or re.search(refs.EXPRESSION, text) is not None
    assert refs.is_expression(text) is want


@given(_pieces("Qwen", "/", "Qwen3-32B", ".", "-", "_", "\u00e9", "\u0661", " ", "a"))
def test_repo_ids_are_the_pattern(text: str) -> None:
    want = (len(text) <= 96 and re.fullmatch(refs.REPO_ID, text) is not None
            and "--" not in text and ".." not in text)
    assert refs.is_repo_id(text) is want


def test_the_usual_names() -> None:
    assert [machines.is_aws_size(n) for n in ("p5.48xlarge", "g6e.metal-48xl", "p5", "a.b.c",
                                              "p4d.24xlarge", "bm.gpu.h100.8")] == [
        True, True, False, False, True, False]
    assert machines.find_machine("p5.48xlarge") is not None
    assert versions.parse_version("vllm/vllm-openai:v0.8.5") == (0, 8, 5)
    assert versions.parse_version("v0.33.0") == (0, 33, 0)
    assert refs.is_repo_id("Qwen/Qwen3-32B") and not refs.is_repo_id("a/b/c")
    assert refs.is_expression("$(MODEL)") and not refs.is_expression("Qwen/Qwen3-32B")


@given(_pieces("rdma/", "nvidia.com/", "rdma", "mlnx", "sriov", "hostdev", "gpu", "\n", "x",
               "vpc.amazonaws.com/efa", "/"))
def test_nic_resources_are_the_pattern(text: str) -> None:
    want = re.match(kube_pod.NET_RESOURCE, text) is not None
    assert kube_pod.is_net_resource(text) is want


@given(_pieces("vllm", "sglang", " ", "\t", "\n", "\u2003", "serve", "serv", ".entrypoints",
               ".launch_server", "dynamo", ".", "x"))
def test_launch_hints_are_the_pattern(text: str) -> None:
    assert kube.has_launch_hint(text) is (re.search(kube.LAUNCH_HINT, text) is not None)


@given(_pieces("v", "V", "0", "33", ".", "8", "rc", "1", "post", "-cu126", "_", "\u0661", "x"))
def test_image_releases_are_the_patterns(tag: str) -> None:
    m = re.match(yamlnodes._IMAGE_VERSION_TEXT, tag)
    named = {x.group(1) for x in re.finditer(
        r"(?<![^-_.])vllm[-_]?" + yamlnodes._IMAGE_VERSION_TEXT, tag.lower())}
    want = m.group(1) if m else (named.pop() if len(named) == 1 else None)
    assert yamlnodes.engine_version(f"vllm/vllm-openai:{tag}", "vllm") == want
