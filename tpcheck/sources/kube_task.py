"""Task files (SkyPilot, Truss) whose GPUs, image and release pin apply to every launch in them.

``kube.Walker`` imports this module only for a document with a task file's top-level keys."""

from __future__ import annotations

from tpcheck.sources.base import Deployment, Span
from tpcheck.sources.kube_env import int_or_none
from tpcheck.sources.positions import Located
from tpcheck.sources.pyyaml import yaml
from tpcheck.sources.yamlctx import Ctx
from tpcheck.sources.yamlnodes import engine_version, mget

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any, Protocol

    from tpcheck.sources.shell_vars import Vars

    class Walker(Protocol):
        """What these readers use of ``kube.Walker`` (which imports them: no import back)."""

        ctx: Ctx
        top_vars: Vars
        task_image: str | None
        task_extra: dict[str, Any]
        task_spans: dict[str, Span]

# Exported by SkyPilot to each node's run with a value of its own (environment-variables docs)
SKYPILOT_PER_NODE = frozenset({"SKYPILOT_NODE_RANK", "SKYPILOT_NODE_IPS"})


def _accelerator_count(node: Any, ctx: Ctx) -> Located | None:
    """The GPU count of a SkyPilot ``accelerators``: ``H100:8`` (a bare name is 1), a
    mapping ``{H100: 8}`` or a set ``{H200:8, H100:8}``, a list of those; None unless
    every choice names the same whole count (a fraction is rounded up by SkyPilot and
    such tasks are not multi-GPU launches)."""
    choices: list[tuple[Any, str | None]] = []  # (node holding the count, written count)
    if isinstance(node, yaml.ScalarNode):
        choices.append((node, None))
    elif isinstance(node, yaml.SequenceNode):
        choices.extend((i, None) for i in node.value)
    elif isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(v, yaml.ScalarNode) and v.value not in ("", None) and v.tag.endswith(
                    ("int", "str")):
                choices.append((v, v.value))  # {H100: 8}
            else:
                choices.append((k, None))  # {H100:8} (a flow set: the count is in the key)
    found: list[Located] = []
    for n, written in choices:
        if not isinstance(n, yaml.ScalarNode) or not isinstance(n.value, str):
            return None
        loc = ctx.locate(n)
        if written is None:
            name, colon, cnt = n.value.rpartition(":")
            if not colon:
                cnt, name = "1", n.value
            if not name or not cnt.strip().isdigit():
                return None
            sub = loc.sub(len(n.value) - len(cnt), len(n.value)) if colon else None
            found.append(sub if sub is not None else Located("1", (), loc.span(), loc.path))
        else:
            if not written.strip().isdigit():
                return None
            found.append(loc)
    if not found or len({int(f.value) for f in found}) != 1 or int(found[0].value) < 1:
        return None
    return found[0]


def _accelerator_name(node: Any) -> str | None:
    """The GPU product of a SkyPilot ``accelerators`` when it names one (``H100:8``,
    ``{H100: 8}``); None for a set or list of several products (SkyPilot picks one)."""
    if isinstance(node, yaml.ScalarNode):
        names = [str(node.value)]
    elif isinstance(node, yaml.MappingNode):
        names = [str(k.value) for k, _ in node.value if isinstance(k, yaml.ScalarNode)]
    elif isinstance(node, yaml.SequenceNode):
        names = [str(i.value) for i in node.value if isinstance(i, yaml.ScalarNode)]
    else:
        return None
    products = {n.rpartition(":")[0] or n for n in names}
    (one, *rest) = products or {""}
    return (one.strip() or None) if not rest else None


def skypilot_env(w: Walker, root: Any) -> None:
    """What SkyPilot exports to a task's ``run`` that the task fixes (docs.skypilot.co,
    running-jobs/environment-variables, "SkyPilot environment variables"):
    ``SKYPILOT_NUM_NODES`` is ``num_nodes`` (bound only when written) and
    ``SKYPILOT_NUM_GPUS_PER_NODE`` the count of ``resources.accelerators`` (``H100:8``;
    every choice of a set or list must agree). ``SKYPILOT_NODE_RANK`` and
    ``SKYPILOT_NODE_IPS`` differ between nodes: set, never known."""
    if not isinstance(mget(root, "run"), yaml.ScalarNode):
        return
    res = mget(root, "resources")
    nodes = mget(root, "num_nodes")
    if not isinstance(res, yaml.MappingNode) and nodes is None:
        return
    image_id = mget(res, "image_id")  # the task runs in this container (docs: Docker)
    if isinstance(image_id, yaml.ScalarNode) and str(image_id.value).startswith("docker:"):
        w.task_image = str(image_id.value).removeprefix("docker:").strip() or None
    top = w.top_vars
    top.per_pod = SKYPILOT_PER_NODE
    if isinstance(nodes, yaml.ScalarNode) and int_or_none(nodes.value) is not None:
        top.shell.setdefault("SKYPILOT_NUM_NODES", w.ctx.locate(nodes))
        top.origins["SKYPILOT_NUM_NODES"] = "num_nodes"
    acc = mget(res, "accelerators")
    count = _accelerator_count(acc, w.ctx)
    if count is not None:
        top.shell.setdefault("SKYPILOT_NUM_GPUS_PER_NODE", count)
        top.origins["SKYPILOT_NUM_GPUS_PER_NODE"] = "resources.accelerators"
        # the GPUs of a one-node task (the checks count a pod's GPUs, and a task of
        # several nodes is one launch per node, as Slurm's --nodes), and the product
        # when the task names one (issue 33)
        if nodes is None or int_or_none(str(getattr(nodes, "value", ""))) == 1:
            w.task_extra["gpus_requested"] = int(count.value)
            w.task_spans["gpus_requested"] = count.span()
        name = _accelerator_name(acc)
        if name is not None:
            w.task_extra["gpu_product"] = name
            w.task_spans["gpu_product"] = w.ctx.span(acc)


def task_facts(w: Walker, root: Any) -> None:
    """A Truss config's ``resources.accelerator: H100:8`` (beside ``docker_server``: the
    GPUs its start command gets), and a ``pip install vllm==X`` pin in a SkyPilot
    ``setup`` or Truss ``build_commands`` / ``requirements`` (the release ``run`` uses)."""
    if not isinstance(root, yaml.MappingNode):
        return
    res = mget(root, "resources")
    acc = mget(res, "accelerator")
    if mget(root, "docker_server") is not None and isinstance(acc, yaml.ScalarNode) and (
            isinstance(acc.value, str)):
        name, colon, cnt = acc.value.rpartition(":")
        if not colon:
            name, cnt = acc.value, "1"
        if name and cnt.strip().isdigit() and int(cnt) >= 1:
            span = w.ctx.span(acc)
            w.task_extra.update(gpus_requested=int(cnt), gpu_product=name.strip())
            w.task_spans.update(gpus_requested=span, gpu_product=span)
    for key in ("setup", "build_commands", "requirements"):
        node = mget(root, key)
        items = [node] if isinstance(node, yaml.ScalarNode) else (
            list(node.value) if isinstance(node, yaml.SequenceNode) else [])
        for item in items:
            if not isinstance(item, yaml.ScalarNode) or not isinstance(item.value, str):
                continue
            # here, so a manifest with no setup imports no Dockerfile reader
            from tpcheck.sources.dockerfile import pin_release

            lead = "" if key != "requirements" else "pip install "
            pin = pin_release(lead + item.value)
            if pin is not None:
                at = max(0, pin[2] - len(lead))
                line = w.ctx.locate(item).sub(at, at + 1).span().line
                w.task_extra["pin"] = (pin[0], pin[1],
                                          f"from `{pin[0]}=={pin[1]}` pinned in {key} at "
                                          f"{w.ctx.path}:{line}")


def with_task_facts(w: Walker, d: Deployment) -> Deployment:
    from tpcheck.record import replace

    kw: dict[str, Any] = {}
    spans: dict[str, Span] = {}
    for k in ("gpus_requested", "gpu_product"):
        if k in w.task_extra and getattr(d, k) is None:
            kw[k] = w.task_extra[k]
            spans[k] = w.task_spans[k]
    pin = w.task_extra.get("pin")
    if pin is not None and pin[0] == d.engine and d.engine_version is None:
        kw.update(engine_version=pin[1], engine_version_from=pin[2])
    return replace(d, **kw, spans={**spans, **d.spans}) if kw else d


def with_task_image(w: Walker, d: Deployment) -> Deployment:
    """A SkyPilot task's ``run`` executes in its ``image_id`` container: that image pins
    the engine release as a pod's image does (a launch that names its own image keeps it)."""
    from tpcheck.record import replace

    img = w.task_image
    if d.image or img is None:
        return d
    return replace(d, image=img, engine_version=engine_version(img, d.engine))
