"""dstack run configurations (``type: service`` / ``task``): ``commands:`` run as one script.
Which documents are such configurations is ``tpcheck.sources.yamlfile.is_dstack``.

dstack provisions ``resources.gpu`` (``H100:8``, ``MI300X:8``, ``A100:80GB:2``, ``80GB:8``, or
``{name: H100, count: 8}``) and exports the count to the commands: ``DSTACK_GPUS_PER_NODE``,
``DSTACK_NODES_NUM`` (``nodes:``, tasks only, default 1) and ``DSTACK_GPUS_NUM`` (nodes × GPUs
per node), so ``--tensor-parallel-size $DSTACK_GPUS_NUM`` reads as the count, underlined where
the count is written. ``env:`` items ``NAME=value`` are the commands' environment; a bare
``NAME`` is taken from the user's shell and stays unknown. A count written as a range
(``H100:1..2``) is not a count: the variables stay unresolved.
"""

from __future__ import annotations

import re

from tpcheck.deferred import lazy_re
from tpcheck.sources.base import Deployment, Span
from tpcheck.sources.positions import Located
from tpcheck.sources.pyyaml import yaml
from tpcheck.sources.yamlctx import Ctx

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

_MEMORY = lazy_re(r"^\d+(?:\.\d+)?\s*(?:GB|MB|TB)(?:\.\.\d*(?:GB|MB|TB)?)?$", re.I)


def read_dstack(root: Any, ctx: Ctx) -> list[Deployment]:
    from tpcheck.record import replace
    from tpcheck.sources.shell import Vars, read_shell_text
    from tpcheck.sources.yamlnodes import engine_version, mget

    variables = Vars()
    env: dict[str, str] = {}
    env_node = mget(root, "env")
    if isinstance(env_node, yaml.SequenceNode):
        for item in env_node.value:
            if isinstance(item, yaml.ScalarNode) and "=" in item.value:
                name = item.value.split("=", 1)[0]
                variables.shell[name] = ctx.locate(item).sub(len(name) + 1, len(item.value))
                env[name] = item.value[len(name) + 1:]
    elif isinstance(env_node, yaml.MappingNode):
        for k, v in env_node.value:
            if isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.ScalarNode):
                variables.shell[k.value] = ctx.locate(v)
                env[k.value] = v.value
    count, product = _gpu(mget(mget(root, "resources"), "gpu"), ctx)
    nodes_node = mget(root, "nodes")
    nodes = _int(nodes_node.value) if isinstance(nodes_node, yaml.ScalarNode) else 1
    extra: dict[str, Any] = {"entrypoint": "serve"}
    spans: dict[str, Span] = {}
    if count is not None:
        extra["gpus_requested"] = int(count.value)
        spans["gpus_requested"] = count.span()
        variables.shell["DSTACK_GPUS_PER_NODE"] = count
        if nodes == 1:
            variables.shell["DSTACK_GPUS_NUM"] = count
    if nodes is not None and isinstance(nodes_node, yaml.ScalarNode):
        variables.shell["DSTACK_NODES_NUM"] = ctx.locate(nodes_node)
        if count is not None and nodes > 1:
            total = str(nodes * int(count.value))
            # the product is written nowhere: its characters sit on the count
            variables.shell["DSTACK_GPUS_NUM"] = Located(
                total, [count.positions[0]] * len(total) if count.positions else (),
                count.span(), ctx.path)
    if product is not None:
        extra["gpu_product"] = product.value
        spans["gpu_product"] = product.span()
    image = mget(root, "image")
    out: list[Deployment] = []
    commands = mget(root, "commands")
    items = commands.value if isinstance(commands, yaml.SequenceNode) else [commands]
    for item in items:
        if not isinstance(item, yaml.ScalarNode):
            continue
        # the commands are one script: an assignment or export carries to the next item
        for d in read_shell_text(ctx.locate(item), ctx.path, variables, env):
            kw = dict(extra)
            if isinstance(image, yaml.ScalarNode):
                kw["image"] = image.value
                kw["engine_version"] = engine_version(image.value, d.engine)
            kw = {k: v for k, v in kw.items() if getattr(d, k) is None}
            out.append(replace(d, spans={**spans, **d.spans}, notes=(*d.notes, "dstack " + (
                str(mget(root, "type").value))), **kw))
    return out


def _gpu(node: Any, ctx: Ctx) -> tuple[Located | None, Located | None]:
    """(count, product name) from ``resources.gpu``, each located where it is written."""
    from tpcheck.sources.yamlnodes import mget

    if isinstance(node, yaml.MappingNode):
        cnt, name = mget(node, "count"), mget(node, "name")
        count = (ctx.locate(cnt) if isinstance(cnt, yaml.ScalarNode)
                 and _int(cnt.value) is not None else None)
        if isinstance(name, yaml.SequenceNode) and len(name.value) == 1:
            name = name.value[0]
        product = (ctx.locate(name) if isinstance(name, yaml.ScalarNode)
                   and _is_name(name.value) else None)
        return count, product
    if not isinstance(node, yaml.ScalarNode):
        return None, None
    loc = ctx.locate(node)
    parts = loc.value.split(":")
    count = product = None
    at = 0
    for k, part in enumerate(parts):
        piece = loc.sub(at, at + len(part))
        at += len(part) + 1
        if k == len(parts) - 1 and _int(part) is not None:
            count = piece
        elif k == 0 and _is_name(part):
            product = piece
    return count, product


def _is_name(s: str) -> bool:
    """``H100``, ``MI300X``; not a memory size, a count, a range or a list of names."""
    s = s.strip()
    return bool(s) and not _MEMORY.match(s) and _int(s) is None and ".." not in s and (
        "," not in s) and s[0].isalpha()


def _int(s: str) -> int | None:
    s = str(s).strip()
    return int(s) if s.isdigit() else None
