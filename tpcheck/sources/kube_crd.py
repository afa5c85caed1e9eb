"""The CRDs and Ray configs that carry engine arguments as fields rather than a command line.

``kube.Walker`` imports this module only for a mapping with a KubeAI or Ray key."""

from __future__ import annotations

from tpcheck.engines.flags import VLLM_KWARGS
from tpcheck.sources.argv import Fields, deployment_from_fields, set_typed
from tpcheck.sources.base import ModelHint, Span
from tpcheck.sources.kube_env import int_or_none
from tpcheck.sources.pyyaml import yaml
from tpcheck.sources.words import Word, k8s_word
from tpcheck.sources.yamlctx import Ctx
from tpcheck.sources.yamlnodes import mget, mpath

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any, Protocol

    from tpcheck.sources.base import Deployment, Engine

    class Walker(Protocol):
        """What these readers use of ``kube.Walker`` (which imports them: no import back)."""

        ctx: Ctx
        found: list[Deployment]
        consumed: set[int]


# Ray Serve runtime_env.env_vars a serve script reads → the vLLM engine argument it sets
_RAY_ENV_FIELDS = (
    ("TENSOR_PARALLEL_SIZE", "tensor_parallel_size"),
    ("PIPELINE_PARALLEL_SIZE", "pipeline_parallel_size"),
    ("MAX_NUM_SEQS", "max_num_seqs"),
    ("MAX_MODEL_LEN", "max_model_len"),
)


def kwargs_fields(
    mapping: Any, ctx: Ctx, table: dict[str, tuple[str, Any]], consumed: set[int]
) -> Fields:
    f = Fields()
    for k, v in mapping.value:
        if not isinstance(k, yaml.ScalarNode) or not isinstance(v, yaml.ScalarNode):
            continue
        row = table.get(k.value.replace("-", "_"))
        if row is None:
            continue
        consumed.add(id(v))
        set_typed(f, row[0], row[1], Word(ctx.locate(v), ctx.span(v)))
    return f


def kubeai_model(w: Walker, m: Any, keys: dict[str, Any], anc: tuple[Any, ...]) -> None:
    ctx = w.ctx
    eng_node = keys.get("engine")
    engine: Engine = (
        "sglang"
        if isinstance(eng_node, yaml.ScalarNode) and "sglang" in eng_node.value.lower()
        else "vllm"
    )
    words: list[Word] = []
    args = keys.get("args")
    if isinstance(args, yaml.SequenceNode):
        for item in args.value:
            if isinstance(item, yaml.ScalarNode):
                w.consumed.add(id(item))
                words.append(k8s_word(ctx.locate(item), {}))
    from tpcheck.sources.argv import parse_args

    f = parse_args(engine, words, False)
    url = keys.get("url")
    if isinstance(url, yaml.ScalarNode) and "model" not in f.values:
        loc = ctx.locate(url)
        skip = len(url.value.split("://", 1)[0]) + 3 if "://" in url.value else 0
        f.set("model", url.value[skip:], loc.span(skip))
    extra: dict[str, Any] = {"entrypoint": "serve"}
    spans: dict[str, Span] = {}
    prof = keys["resourceProfile"]
    if isinstance(prof, yaml.ScalarNode):
        name, _, count = prof.value.partition(":")
        loc = ctx.locate(prof)
        if int_or_none(count) is not None:
            extra["gpus_requested"] = int_or_none(count)
            spans["gpus_requested"] = loc.span(len(name) + 1)
        extra["gpu_product"] = name
        spans["gpu_product"] = loc.span(0, len(name))
    env = {}
    env_node = keys.get("env")
    if isinstance(env_node, yaml.MappingNode):
        env = {k.value: v.value for k, v in env_node.value if isinstance(v, yaml.ScalarNode)}
    w.found.append(
        deployment_from_fields(
            ctx.path, engine, ctx.span(m), f, env=env, extra=extra, extra_spans=spans
        )
    )


def ray_llm_config(w: Walker, m: Any, keys: dict[str, Any]) -> None:
    """Ray Serve LLM: ``engine_kwargs`` are vLLM's EngineArgs."""
    ctx = w.ctx
    f = kwargs_fields(keys["engine_kwargs"], ctx, VLLM_KWARGS, w.consumed)
    src = mpath(m, "model_loading_config", "model_source")
    if isinstance(src, yaml.ScalarNode) and "model" not in f.values:
        f.set("model", src.value, ctx.span(src))
    extra: dict[str, Any] = {"entrypoint": "llm"}
    spans: dict[str, Span] = {}
    acc = mget(m, "accelerator_type")
    if isinstance(acc, yaml.ScalarNode):
        extra["gpu_product"] = acc.value
        spans["gpu_product"] = ctx.span(acc)
    w.found.append(
        deployment_from_fields(ctx.path, "vllm", ctx.span(m), f, extra=extra, extra_spans=spans)
    )


def ray_serve_env_app(w: Walker, m: Any, keys: dict[str, Any]) -> None:
    """A Ray Serve application whose own script builds the engine from its environment:
    ``runtime_env.env_vars`` with ``MODEL_ID`` and ``TENSOR_PARALLEL_SIZE`` (the names of
    KubeRay's and GKE's vLLM serve samples; also PIPELINE_PARALLEL_SIZE, MAX_NUM_SEQS,
    MAX_MODEL_LEN). The script is not read, so the model is a hint (the finding says so) and
    only a literal TENSOR_PARALLEL_SIZE makes this a deployment."""
    env = mpath(m, "runtime_env", "env_vars")
    if not isinstance(env, yaml.MappingNode):
        return
    vals = {k.value: v for k, v in env.value
            if isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.ScalarNode)}
    tp = vals.get("TENSOR_PARALLEL_SIZE")
    if tp is None or int_or_none(tp.value) is None:
        return
    ctx = w.ctx
    f = Fields()
    for var, name in _RAY_ENV_FIELDS:
        node = vals.get(var)
        if node is not None:
            loc = ctx.locate(node)
            set_typed(f, name, VLLM_KWARGS[name][1], Word(loc, loc.fallback))
            w.consumed.add(id(node))
    hints: tuple[ModelHint, ...] = ()
    model = vals.get("MODEL_ID")
    if model is not None and model.value:
        f.unresolved_value("model", "$MODEL_ID", ctx.span(model))
        hints = (ModelHint(model.value, f"runtime_env.env_vars MODEL_ID `{model.value}` "
                                        f"(line {ctx.span(model).line})"),)
    extra: dict[str, Any] = {"entrypoint": "llm", "model_hints": hints or None}
    spans: dict[str, Span] = {}
    acc = vals.get("ACCELERATOR_TYPE")
    if acc is not None and acc.value:
        extra["gpu_product"] = acc.value
        spans["gpu_product"] = ctx.span(acc)
    imp = keys["import_path"]
    script = imp.value if isinstance(imp, yaml.ScalarNode) else "the serve script"
    note = (f"layout read from runtime_env.env_vars, which {script} is assumed to pass to "
            "vLLM (the script itself is not read)")
    w.found.append(deployment_from_fields(ctx.path, "vllm", ctx.span(m), f, extra=extra,
                                             extra_spans=spans, notes=[note]))
