"""vLLM ``--config`` YAML: flat keys that are long flag names without ``--``.

``_pull_args_from_config`` (vllm 0.33 utils/argparse_utils.py l.516-604) turns each key into
``--key``; dashes and underscores both work; short aliases (``tp:``) do not. Which documents
are such files is ``tpcheck.sources.yamlfile.looks_like_config``.
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
