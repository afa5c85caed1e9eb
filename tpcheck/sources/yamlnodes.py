"""Lookups on composed YAML nodes shared by the Kubernetes walker and the Helm-values readers:
keys and key paths, the GPU product in node affinity, the engine release an image tag pins.

A leaf module (issue 15): ``helm_values`` used to import them from ``kube``, which imports
``helm_values``.
"""

from __future__ import annotations

from tpcheck.deferred import lazy_re
from tpcheck.sources.pyyaml import yaml

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

    from tpcheck.sources.base import Engine

PRODUCT_LABELS = (
    "nvidia.com/gpu.product",
    "cloud.google.com/gke-accelerator",
    "karpenter.k8s.aws/instance-gpu-name",
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
    "cloud.google.com/gke-tpu-accelerator",  # a TPU slice: tpcheck then knows it is no GPU
)
# The release at the start of a tag (up to four numbers, then PEP 440 rc/post/dev parts), and
# whatever build suffix follows a separator: v0.5.2rc2-cu126, 0.5.10.post1-cu124, v0.7.3.self.post1.
_IMAGE_VERSION_TEXT = (
    r"v?(\d+\.\d+(?:\.\d+){0,2}(?:(?:a|b|rc)\d+)?(?:\.?post\d+)?(?:\.?dev\d+)?)(?:[-+_]|\.(?!\d)|$)"
)
_IMAGE_VERSION = lazy_re(_IMAGE_VERSION_TEXT)


# Vendor tags that carry the engine's release after its name, anywhere in the tag (AMD's
# rocm/vllm:rocm6.3.1_vllm_0.8.5_20250513, rocm6.3.1_instinct_vllm0.8.3_20250415,
# rocm7.12.0_gfx950-dcgpu_ubuntu24.04_py3.12_pytorch_2.9.1_vllm_0.16.0; GPUStack's
# gpustack/runner:rocm7.2-vllm0.25.0, rocm7.2-sglang0.5.12.post1): the word, an optional
# _/- separator, then the release as above. Compiled on first use: a tag that starts with its
# release (vllm/vllm-openai:v0.8.5) never needs them (~3 million instructions).
_NAMED_VERSION = {
    engine: lazy_re(r"(?<![^-_.])" + engine + r"[-_]?" + _IMAGE_VERSION_TEXT)
    for engine in ("vllm", "sglang")
}
# Image names that are an engine's build under another name (AMD's SGLang images are
# rocm/sgl-dev:v0.5.13.post1-ubuntu24.04-py3.14-rocm7.14).
_ENGINE_IMAGES = {"vllm": ("vllm",), "sglang": ("sglang", "sgl-dev")}


_MAP, _SCALAR = yaml.MappingNode, yaml.ScalarNode


def mget(node: Any, key: str) -> Any:
    """The value of the first ``key`` in a mapping node (None: no such key, or no mapping).

    Called ~60 times a manifest: the key's text is compared before its kind (a collection
    key's value is a list, never equal to a string), so the kind is checked once, on a match."""
    if isinstance(node, _MAP):
        for k, v in node.value:
            if k.value == key and isinstance(k, _SCALAR):
                return v
    return None


def mpath(node: Any, *keys: str) -> Any:
    for k in keys:
        node = mget(node, k)
        if node is None:
            return None
    return node


_VERSIONS: dict[tuple[str | None, str], str | None] = {}
_UNKNOWN = object()


def engine_version(image: str | None, engine: Engine) -> str | None:
    """``image_version`` remembered per image and engine (its answer depends on nothing else):
    every container asks it of its image, and a repository's manifests name a few images."""
    key = (image, engine)
    v = _VERSIONS.get(key, _UNKNOWN)
    if v is _UNKNOWN:
        v = image_version(image, engine)
        if len(_VERSIONS) < 4096:  # bounded: a hostile file cannot grow it without limit
            _VERSIONS[key] = v
    return v  # type: ignore[return-value]


def image_version(image: str | None, engine: Engine) -> str | None:
    """``vllm/vllm-openai:v0.6.4`` → ``0.6.4``; only for an image of that engine. The release
    keeps its rc/post part and drops the build suffix (``v0.5.2rc2-cu126`` → ``0.5.2rc2``), as
    the option tables and defaults are per release, not per CUDA build. Images that
    wrap an engine carry their own version in the tag: NGC's ``nvcr.io/nvidia/vllm:26.02-py3``
    (a container release) and Dynamo's ``ai-dynamo-vllm-runtime:1.2.0`` are not vLLM 26.02 or
    1.2.0, so they pin nothing.

    A tag that does not start with a release may name it after the engine's name (ROCm and
    other vendor builds: ``rocm/vllm:rocm6.3.1_vllm_0.8.5_20250513`` → ``0.8.5``); only when
    it names one release, so ``rocm/vllm:instinct_main`` and a tag naming two pin nothing."""
    low = (image or "").lower()
    if (not image or not any(w in low for w in _ENGINE_IMAGES[engine]) or "dynamo" in low
            or low.startswith("nvcr.io/nvidia/")):
        return None
    name = image.split("@", 1)[0].rsplit("/", 1)[-1]  # a registry's :port is no tag
    if ":" not in name:
        return None  # untagged or a digest only: no release named
    tag = name.rsplit(":", 1)[1]
    bare = tag[1:] if tag[:1] == "v" else tag
    parts = bare.split(".")
    if 2 <= len(parts) <= 4 and all(p.isascii() and p.isdigit() for p in parts):
        return bare  # v0.8.5: the pattern's release, found without compiling it (~1.2 M)
    m = _IMAGE_VERSION.match(tag)
    if m:
        return m.group(1)
    named = {x.group(1) for x in _NAMED_VERSION[engine].finditer(tag.lower())}
    return named.pop() if len(named) == 1 else None


def product_in_terms(terms: Any) -> Any:
    """The first GPU-product value in node-affinity ``nodeSelectorTerms`` (a scalar node)."""
    if not isinstance(terms, yaml.SequenceNode):
        return None
    for term in terms.value:
        exprs = mget(term, "matchExpressions")
        if not isinstance(exprs, yaml.SequenceNode):
            continue
        for ex in exprs.value:
            key, values = mget(ex, "key"), mget(ex, "values")
            if (
                isinstance(key, yaml.ScalarNode)
                and key.value in PRODUCT_LABELS
                and isinstance(values, yaml.SequenceNode)
                and values.value
                and isinstance(values.value[0], yaml.ScalarNode)
            ):
                return values.value[0]
    return None
