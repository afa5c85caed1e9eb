"""The environment a container launch sees: its own env and what LWS and charts inject."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping

from tpcheck.sources.positions import Located
from tpcheck.sources.pyyaml import yaml
from tpcheck.sources.words import k8s_word
from tpcheck.sources.yamlctx import Ctx
from tpcheck.sources.yamlnodes import mget, mpath

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any



def int_or_none(v: str) -> int | None:
    try:
        return int(str(v).strip().strip('"'))
    except ValueError:
        return None


def first_keys(node: Any) -> dict[str, Any]:
    """Key → value of a mapping node; the first of duplicate keys wins, as in ``mget``."""
    return {
        k.value: v for k, v in reversed(node.value) if isinstance(k, yaml.ScalarNode)
    }


class LazyEnv(MutableMapping[str, Located]):
    """Name → value with positions, where a value still in its YAML node is located on first
    read: most container env values are never expanded into a launch's words."""

    __slots__ = ("_ctx", "_done", "_nodes")

    def __init__(self, ctx: Ctx, done: Mapping[str, Located] | None = None) -> None:
        self._ctx = ctx
        self._done: dict[str, Located] = dict(done) if done else {}
        self._nodes: dict[str, tuple[Any, int]] = {}  # name → (scalar node, first char)

    def defer(self, name: str, node: Any, skip: int) -> None:
        """``name`` is ``node``'s value from character ``skip`` on (``NAME=value`` items)."""
        self._done.pop(name, None)
        self._nodes[name] = (node, skip)

    def update_from(self, other: LazyEnv) -> None:
        for k, v in other._done.items():
            self[k] = v
        for k, (node, skip) in other._nodes.items():
            self.defer(k, node, skip)

    def __getitem__(self, name: str) -> Located:
        done = self._done.get(name)
        if done is not None:
            return done
        node, skip = self._nodes.pop(name)  # KeyError when unknown, as a dict
        loc = self._ctx.locate(node)
        if skip:
            loc = loc.sub(skip, len(loc.value))
        self._done[name] = loc
        return loc

    def __contains__(self, name: object) -> bool:
        return name in self._done or name in self._nodes

    def __setitem__(self, name: str, value: Located) -> None:
        self._nodes.pop(name, None)
        self._done[name] = value

    def __delitem__(self, name: str) -> None:
        if name in self._nodes:
            del self._nodes[name]
        else:
            del self._done[name]

    def __iter__(self) -> Iterator[str]:
        yield from list(self._done)
        yield from list(self._nodes)

    def __len__(self) -> int:
        return len(self._done) + len(self._nodes)


_PARALLELISM = frozenset({"tensor", "data", "dataLocal", "workers"})


def _multinode(anc: tuple[Any, ...]) -> bool:
    """Whether the chart renders a LeaderWorkerSet: ``multinode: true`` (modelservice values)
    or ``multinode: {enabled: true}`` (llm-d-benchmark, also under ``common``), nearest first."""
    for a in reversed(anc):
        for node in (mget(a, "multinode"), mpath(a, "common", "multinode")):
            if isinstance(node, yaml.MappingNode):
                node = mget(node, "enabled")
            if isinstance(node, yaml.ScalarNode):
                return str(node.value).lower() == "true"
    return False


class EnvReaders:
    """The walker's readers of the variables around a container (mixed into ``kube.Walker``)."""

    ctx: Ctx

    def _lws_env(self, anc: tuple[Any, ...]) -> dict[str, tuple[Located, str]]:
        """What a LeaderWorkerSet injects into every container of its pods that the manifest
        fixes: ``LWS_GROUP_SIZE``, the group's ``leaderWorkerTemplate.size`` (LWS docs,
        reference/labels-annotations-and-environment-variables; kubernetes-sigs/lws
        pkg/utils/pod/pod_utils.go sets it from the pod's size annotation). The leader's
        address and the worker index differ between pods (``LWS_PER_POD``)."""
        for a in reversed(anc):
            lwt = mget(a, "leaderWorkerTemplate")  # (no key dict: one key is asked)
            if lwt is not None:
                size = mget(lwt, "size")
                if isinstance(size, yaml.ScalarNode) and (int_or_none(size.value) or 0) >= 1:
                    loc = self.ctx.locate(size)
                    return {"LWS_GROUP_SIZE": (loc, "leaderWorkerTemplate.size")}
                return {}
        return {}

    def _modelservice_env(self, anc: tuple[Any, ...]) -> dict[str, tuple[Located, str]]:
        """What the llm-d-modelservice chart adds to every container of a role from the role's
        ``parallelism`` block (llm-d-incubation/llm-d-modelservice templates/_helpers.tpl,
        ``parallelismEnv``: DP_SIZE, TP_SIZE, DP_SIZE_LOCAL, each worked out by the
        ``dataParallelism`` / ``tensorParallelism`` / ``dataLocalParallelism`` helpers), and,
        when the chart renders a LeaderWorkerSet (``multinode``), its size: ``numWorkers``
        (templates/decode-lws.yaml). llm-d-benchmark scenarios pass the block through
        (config/templates/jinja/13_ms-values.yaml.j2). Nothing is bound unless every written
        value is a whole number of at least 1."""
        for i in range(len(anc) - 1, -1, -1):
            par = mget(anc[i], "parallelism")
            if not isinstance(par, yaml.MappingNode):
                continue
            nodes: dict[str, Any] = {}
            for k, v in par.value:
                if isinstance(k, yaml.ScalarNode) and k.value in _PARALLELISM:
                    if not isinstance(v, yaml.ScalarNode) or (int_or_none(v.value) or 0) < 1:
                        return {}  # a template, zero or a word: the chart's arithmetic is not ours
                    nodes[k.value] = v
            if not nodes:
                return {}
            return self._parallelism_env(par, nodes, anc[: i + 1])
        return {}

    def _parallelism_env(self, par: Any, nodes: dict[str, Any],
                         anc: tuple[Any, ...]) -> dict[str, tuple[Located, str]]:
        """The chart's helpers on the written values (a value not written is worked out as
        they do: data = dataLocal·workers, dataLocal = data / workers, workers = data /
        dataLocal, else 1; a division that leaves a remainder makes the chart fail)."""
        ctx = self.ctx
        n = {k: int(int_or_none(v.value) or 0) for k, v in nodes.items()}
        t, d, dl, w = (n.get(k) for k in ("tensor", "data", "dataLocal", "workers"))
        here = ctx.span(par)

        def val(key: str, value: int | None) -> tuple[Located, str] | None:
            if value is None:
                return None
            if key in nodes and n[key] == value:
                return ctx.locate(nodes[key]), f"parallelism.{key}"
            return Located(str(value), (), here, ctx.path), "parallelism"

        def exact(a: int, b: int) -> int | None:
            return a // b if a % b == 0 else None

        data = d or (dl * w if dl and w else dl or 1)
        local = dl or ((exact(d, w) if w else d) if d else 1)
        workers = w or ((exact(d, dl) if dl else 1) if d else 1)
        out = {name: v for name, v in (("TP_SIZE", val("tensor", t or 1)),
                                       ("DP_SIZE", val("data", data)),
                                       ("DP_SIZE_LOCAL", val("dataLocal", local))) if v}
        if _multinode(anc):
            lws = val("workers", workers)
            if lws is not None:
                out["LWS_GROUP_SIZE"] = lws
        return out

    def _container_env(
        self, keys: dict[str, Any], injected: Mapping[str, tuple[Located, str]]
    ) -> tuple[LazyEnv, dict[str, str]]:
        """The container's variables: for ``$(VAR)`` (placed lazily) and as plain text.
        ``injected`` come first, as the orchestrator adds them; the container's own win."""
        ctx = self.ctx
        env_nodes = keys.get("env") or keys.get("environment")
        k8s_env = LazyEnv(ctx)
        plain_env: dict[str, str] = {}
        for key, (loc, _) in injected.items():
            k8s_env[key] = loc
        if isinstance(env_nodes, yaml.SequenceNode):
            for item in env_nodes.value:
                # mget(item, "name"), mget(item, "value") in one pass over the item's keys
                name: Any = None
                value: Any = None
                if isinstance(item, yaml.MappingNode):
                    for k, v in item.value:
                        kv = k.value
                        if kv == "name" and name is None and isinstance(k, yaml.ScalarNode):
                            name = v
                        elif kv == "value" and value is None and isinstance(k, yaml.ScalarNode):
                            value = v
                if isinstance(name, yaml.ScalarNode) and isinstance(value, yaml.ScalarNode):
                    if isinstance(value.value, str) and "$(" in value.value:
                        # the kubelet expands $(VAR) in a value from the variables defined
                        # before it (an unknown one stays as written)
                        refused = ctx.expansion.refused
                        expanded = k8s_word(ctx.locate(value), k8s_env, ctx.expansion).text
                        if ctx.expansion.refused != refused:
                            # past the expansion limits: the value is not known, so a later
                            # $(NAME) is unresolved too (as the shell's A=$(hostname))
                            k8s_env.pop(name.value, None)
                            plain_env[name.value] = value.value
                            continue
                        k8s_env[name.value] = expanded
                        plain_env[name.value] = expanded.value
                        continue
                    k8s_env.defer(name.value, value, 0)
                    plain_env[name.value] = value.value
                elif isinstance(item, yaml.ScalarNode) and "=" in item.value:
                    nm = item.value.split("=", 1)[0]
                    k8s_env.defer(nm, item, len(nm) + 1)
                    plain_env[nm] = item.value[len(nm) + 1 :]
        elif isinstance(env_nodes, yaml.MappingNode):
            for k, v in env_nodes.value:
                if isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.ScalarNode):
                    k8s_env.defer(k.value, v, 0)
                    plain_env[k.value] = v.value
        return k8s_env, plain_env
