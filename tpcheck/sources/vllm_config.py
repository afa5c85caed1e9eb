"""vLLM ``--config`` YAML: flat keys that are long flag names without ``--``.

``_pull_args_from_config`` (vllm 0.33 utils/argparse_utils.py l.516-604) turns each key into
``--key``; dashes and underscores both work; short aliases (``tp:``) do not.
"""

from __future__ import annotations

from tpcheck.engines.flags import FLAGS
from tpcheck.sources.argv import Fields, deployment_from_fields, post_process, set_typed
from tpcheck.sources.base import Deployment
from tpcheck.sources.pyyaml import yaml
from tpcheck.sources.words import Word
from tpcheck.sources.yamlctx import Ctx

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any


def looks_like_config(root: Any) -> bool:
    """A flat mapping with no ``kind`` whose keys include a parallel/model engine flag, and
    whose keys are mostly vLLM options: vLLM turns every key into ``--key``, so in a real
    config they all are. A Helm values file (``model:`` beside ``image:``, ``resources:``) or
    a dstack service (``type:``, ``commands:``) names a flag or two among its own keys."""
    if not isinstance(root, yaml.MappingNode):
        return False
    keys = [k.value for k, _ in root.value if isinstance(k, yaml.ScalarNode)]
    if "kind" in keys or "apiVersion" in keys or "services" in keys:
        return False
    table = FLAGS["vllm"]
    hits = options = 0
    for k in keys:
        flag = table.get("--" + str(k).replace("_", "-"))
        options += flag is not None
        if flag is not None and flag.field in (
            "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "model",
            "max_model_len", "max_num_seqs",
        ):
            hits += 1
    return hits >= 1 and 2 * options > len(keys) and any(
        str(k).replace("_", "-") in ("tensor-parallel-size", "model", "pipeline-parallel-size")
        for k in keys
    )


def read_config(root: Any, ctx: Ctx) -> list[Deployment]:
    f = Fields()
    table = FLAGS["vllm"]
    for k, v in root.value:
        if not isinstance(k, yaml.ScalarNode):
            continue
        flag = table.get("--" + k.value.replace("_", "-"))
        if flag is None or not isinstance(v, yaml.ScalarNode) or flag.field == "config":
            continue
        set_typed(f, flag.field, flag.kind, Word(ctx.locate(v), ctx.span(v)))
    post_process("vllm", f)
    return [deployment_from_fields(ctx.path, "vllm", ctx.span(root), f,
                                   extra={"entrypoint": "serve"},
                                   notes=["vLLM --config file"])]
