"""Helm values read without their templates: vLLM production-stack and SGLang's LWS chart.

vLLM production-stack: ``servingEngineSpec.modelSpec[]``.

The chart renders ``vllmConfig`` keys into flags
(``tensorParallelSize`` → ``--tensor-parallel-size``) and ``extraArgs`` verbatim;
``requestGPU`` is the pod's GPU request.
"""

from __future__ import annotations

from tpcheck.deferred import lazy_re
from tpcheck.sources.argv import Fields, deployment_from_fields, parse_args, set_typed
from tpcheck.sources.base import Deployment, Span
from tpcheck.sources.pyyaml import yaml
from tpcheck.sources.words import Word, k8s_word
from tpcheck.sources.yamlnodes import engine_version, mget, mpath, product_in_terms

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any, Protocol

    from tpcheck.sources.yamlctx import Ctx

    class Walker(Protocol):
        """What these readers need of kube's walker: the nodes it must not read again."""

        seen: set[int]
        consumed: set[int]

# vllmConfig key → (Deployment field, kind)
VLLM_CONFIG_KEYS: dict[str, tuple[str, Any]] = {
    "tensorParallelSize": ("tensor_parallel_size", "int"),
    "pipelineParallelSize": ("pipeline_parallel_size", "int"),
    "dataParallelSize": ("data_parallel_size", "int"),
    "maxModelLen": ("max_model_len", "int"),
    "maxNumSeqs": ("max_num_seqs", "int"),
    "maxNumBatchedTokens": ("max_num_batched_tokens", "int"),
    "gpuMemoryUtilization": ("gpu_memory_utilization", "float"),
    "dtype": ("dtype", "str"),
    "kvCacheDtype": ("kv_cache_dtype", "str"),
    "quantization": ("quantization", "str"),
    "enforceEager": ("enforce_eager", "bool"),
}


def read_model_specs(seq: Any, ctx: Ctx, walker: Walker) -> list[Deployment]:
    """production-stack's ``servingEngineSpec.modelSpec`` (and a VLLMRuntime's spec): one
    deployment per spec, its values read where the chart reads them."""
    out: list[Deployment] = []
    for spec in (seq.value if isinstance(seq, yaml.SequenceNode) else [seq]):
        if not isinstance(spec, yaml.MappingNode):
            continue
        walker.seen.add(id(spec))
        keys = {k.value: v for k, v in spec.value if isinstance(k, yaml.ScalarNode)}
        f = Fields()
        extra: dict[str, Any] = {"entrypoint": "serve"}
        spans: dict[str, Span] = {}
        url = (keys.get("modelURL") or mget(keys.get("model"), "modelURL")
               or mget(keys.get("model"), "id"))  # a chart's own values: model.id
        if isinstance(url, yaml.ScalarNode):
            f.set("model", url.value, ctx.span(url))
        _spec_gpus(keys, ctx, extra, spans)
        _spec_vllm_config(spec, keys, ctx, walker, f)
        _spec_image(keys, extra)
        kv_role = mpath(keys.get("lmcacheConfig"), "kvRole")  # the chart's PD pair (enablePD)
        if isinstance(kv_role, yaml.ScalarNode) and kv_role.value in ("kv_producer",
                                                                      "kv_consumer"):
            extra["pd_role"] = "prefill" if kv_role.value == "kv_producer" else "decode"
            spans["pd_role"] = ctx.span(kv_role)
        prod = product_in_terms(keys.get("nodeSelectorTerms"))
        if prod is not None:
            extra["gpu_product"] = prod.value
            spans["gpu_product"] = ctx.span(prod)
        out.append(
            deployment_from_fields(ctx.path, "vllm", ctx.span(spec), f, extra=extra,
                                   extra_spans=spans)
        )
    return out


def _spec_gpus(keys: dict[str, Any], ctx: Ctx, extra: dict[str, Any],
               spans: dict[str, Span]) -> None:
    gpu = keys.get("requestGPU")
    if gpu is None:  # a chart's own values: resources.limits["nvidia.com/gpu"]
        gpu = mpath(keys.get("resources"), "limits", "nvidia.com/gpu")
    if isinstance(gpu, yaml.ScalarNode):
        try:
            extra["gpus_requested"] = int(gpu.value)
            spans["gpus_requested"] = ctx.span(gpu)
        except ValueError:
            pass
    ray = mget(keys.get("raySpec"), "enabled")
    if isinstance(ray, yaml.ScalarNode) and ray.value.lower() == "true":
        extra["ray_cluster"] = True  # head and worker pods each bring requestGPU


def _spec_vllm_config(spec: Any, keys: dict[str, Any], ctx: Ctx, walker: Walker,
                      f: Fields) -> None:
    """``vllmConfig``'s ``extraArgs`` (a command line) and camelCase keys, then the same keys
    on the spec itself (a VLLMRuntime), where vllmConfig did not set them."""
    cfg = keys.get("vllmConfig")
    if isinstance(cfg, yaml.MappingNode):
        walker.seen.add(id(cfg))
        extra_args = mget(cfg, "extraArgs")
        if isinstance(extra_args, yaml.SequenceNode):
            words = [
                k8s_word(ctx.locate(a), {})
                for a in extra_args.value
                if isinstance(a, yaml.ScalarNode)
            ]
            f.merge(parse_args("vllm", words, False))
        for k, v in cfg.value:
            row = VLLM_CONFIG_KEYS.get(getattr(k, "value", ""))
            if row is not None and isinstance(v, yaml.ScalarNode):
                set_typed(f, row[0], row[1], Word(ctx.locate(v), ctx.span(v)))
    for k, v in spec.value:
        row = VLLM_CONFIG_KEYS.get(getattr(k, "value", ""))
        if row is not None and isinstance(v, yaml.ScalarNode) and row[0] not in f.values:
            set_typed(f, row[0], row[1], Word(ctx.locate(v), ctx.span(v)))


def _spec_image(keys: dict[str, Any], extra: dict[str, Any]) -> None:
    repo, tag = keys.get("repository"), keys.get("tag")
    if repo is None and isinstance(keys.get("image"), yaml.MappingNode):
        repo, tag = mget(keys["image"], "repository"), mget(keys["image"], "tag")
    if isinstance(repo, yaml.ScalarNode):
        image = repo.value + (f":{tag.value}" if isinstance(tag, yaml.ScalarNode) else "")
        extra["image"] = image
        extra["engine_version"] = engine_version(image, "vllm")


# SGLang's LeaderWorkerSet chart (sglang docs/references/multi_node_deployment/lws_pd_helm,
# values.yaml): per role (prefill, decode) a `config` of camelCase server arguments (`tp` in
# prefill, `tpSize` in decode, `dpSize`, `enableDpAttention`, `memFractionStatic`,
# `maxRunningRequests`), `leaderWorkerSet.size` pods per group and
# `leader.resources.limits["nvidia.com/gpu"]` per pod; `global.model.path`,
# `global.model.contextLength` and `global.image` are shared. The chart renders the command
# in its _helpers.tpl, which the templates only `include`: the values are where it is read.
_SGLANG_ONLY = frozenset({"tp", "tpSize", "memFractionStatic", "maxRunningRequests",
                          "dpSize", "enableDpAttention", "disaggregationMode"})


def is_role_config(keys: dict[str, Any]) -> bool:
    """A chart role: a ``config`` of SGLang arguments beside a LeaderWorkerSet or leader."""
    cfg = keys.get("config")
    if not isinstance(cfg, yaml.MappingNode) or not (
        "leaderWorkerSet" in keys or "leader" in keys):
        return False
    names = {k.value for k, _ in cfg.value if isinstance(k, yaml.ScalarNode)}
    return bool(names & {"tp", "tpSize"}) and len(names & _SGLANG_ONLY) >= 2


def read_role_config(m: Any, keys: dict[str, Any], ctx: Ctx, walker: Walker,
                     root: Any) -> Deployment:
    from tpcheck.engines.flags import resolve
    from tpcheck.sources.argv import post_process
    f = Fields()
    walker.seen.add(id(keys["config"]))
    for k, v in keys["config"].value:
        if not isinstance(k, yaml.ScalarNode) or not isinstance(v, yaml.ScalarNode):
            continue
        option = "--" + _KEBAB.sub(r"\1-\2", k.value).lower()
        flag = resolve("sglang", option).flag
        if flag is None or (flag.kind == "bool" and not flag.value):
            continue
        walker.consumed.add(id(v))
        set_typed(f, flag.field, flag.kind, Word(ctx.locate(v), ctx.span(v)))
    post_process("sglang", f)
    model = mpath(root, "global", "model", "path")
    if isinstance(model, yaml.ScalarNode) and "model" not in f.values:
        f.set("model", model.value, ctx.span(model))
    length = mpath(root, "global", "model", "contextLength")
    if isinstance(length, yaml.ScalarNode) and "max_model_len" not in f.values:
        set_typed(f, "max_model_len", "int", Word(ctx.locate(length), ctx.span(length)))
    extra: dict[str, Any] = {"entrypoint": "serve"}
    spans: dict[str, Span] = {}
    size = mpath(m, "leaderWorkerSet", "size")
    gpu = mpath(m, "leader", "resources", "limits", "nvidia.com/gpu")
    for name, node in (("group_size", size), ("gpus_requested", gpu)):
        if isinstance(node, yaml.ScalarNode):
            try:
                extra[name] = int(node.value)
                spans[name] = ctx.span(node)
            except ValueError:
                pass
    repo, tag = mpath(root, "global", "image", "repository"), mpath(root, "global", "image", "tag")
    if isinstance(repo, yaml.ScalarNode):
        image = repo.value + (f":{tag.value}" if isinstance(tag, yaml.ScalarNode) else "")
        extra["image"] = image
        extra["engine_version"] = engine_version(image, "sglang")
    role = mget(m, "config")
    return deployment_from_fields(ctx.path, "sglang", ctx.span(role), f, extra=extra,
                                  extra_spans=spans, notes=["SGLang LWS chart values"])


_KEBAB = lazy_re(r"([a-z0-9])([A-Z])")
