"""Kubernetes-shaped YAML: containers anywhere in the tree and the CRDs that carry engine facts.

Any mapping with ``command``/``args`` is a container candidate (Pods, Deployments, StatefulSets,
Jobs, LeaderWorkerSets, KServe, Dynamo ``mainContainer``, aibrix StormServices, ...). Around it
the walk keeps its ancestors, so the GPU count, node selector, LWS group size, KServe
``parallelism`` and Dynamo ``resources.limits.gpu`` that apply to it are found where they are.
The walk visits each node once (an alias is the same node object), so alias bombs stay linear.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping, MutableMapping

from tpcheck.deferred import lazy_re
from tpcheck.engines.flags import SGLANG_KWARGS, VLLM_KWARGS
from tpcheck.sources.argv import (
    Fields,
    Launch,
    deployment_from_fields,
    deployment_from_words,
    find_launch,
    infer_engine,
    set_typed,
)
from tpcheck.sources.base import Deployment, ModelHint, Span
from tpcheck.sources.positions import Located
from tpcheck.sources.pyyaml import yaml
from tpcheck.sources.shell import Vars, read_commands, read_shell_text, shell_c_string
from tpcheck.sources.words import Word, k8s_word
from tpcheck.sources.yamlctx import Ctx, scalar
from tpcheck.sources.yamlnodes import (
    PRODUCT_LABELS,
    engine_version,
    mget,
    mpath,
    product_in_terms,
)

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

    from tpcheck.sources.base import Engine

GPU_KEYS = ("nvidia.com/gpu", "amd.com/gpu")
# NIC resources a pod can request (AWS EFA, the RDMA device plugins, NVIDIA's network operator)
GKE_INTERFACES = "networking.gke.io/interfaces"
GKE_DEFAULT_INTERFACE = "networking.gke.io/default-interface"
NET_RESOURCE = lazy_re(r"vpc\.amazonaws\.com/efa|rdma/.+|nvidia\.com/(?:rdma|mlnx|hostdev|"
                          r"sriov).*")
# Injected by LeaderWorkerSet with a value that differs between the pods of a group (LWS docs,
# reference/labels-annotations-and-environment-variables): never a ``:-`` default, never known.
LWS_PER_POD = frozenset({"LWS_LEADER_ADDRESS", "LWS_WORKER_INDEX"})
# Exported by SkyPilot to each node's run with a value of its own (environment-variables docs)
SKYPILOT_PER_NODE = frozenset({"SKYPILOT_NODE_RANK", "SKYPILOT_NODE_IPS"})
LAUNCH_HINT = lazy_re(
    r"vllm\s+serve|sglang\s+serve|vllm\.entrypoints|sglang\.launch_server|dynamo\.(?:vllm|sglang)"
)


# Suppression that survives `helm template` and Kustomize (they drop comments):
# metadata.annotations["tpcheck.dev/ignore"] = "TP201,TP203" (optionally ": reason").
IGNORE_ANNOTATION = "tpcheck.dev/ignore"
PD_ROLE_LABEL = "llm-d.ai/role"  # llm-d's prefill/decode pods (its guides' manifests)


def _first_keys(node: Any) -> dict[str, Any]:
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


_SCALAR = yaml.ScalarNode
# Keys visit_mapping reacts to: a mapping with none of them is only walked through.
_MAPPING_KEYS = frozenset({
    "modelSpec", "vllmConfig", "tensorParallelSize", "engine_kwargs", "resourceProfile",
    "command", "args", "entrypoint", "extraArgs", "runtime_env", "config",
})


class Walker:
    """One document's walk; ``found`` collects Deployments."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.found: list[Deployment] = []
        self.seen: set[int] = set()
        self.consumed: set[int] = set()
        self.top_vars = Vars()
        self.root: Any = None
        self.task_image: str | None = None  # SkyPilot ``resources.image_id: docker:IMAGE``
        # what a task file (Truss, SkyPilot) says of every launch in it: GPUs, release pins
        self.task_extra: dict[str, Any] = {}
        self.task_spans: dict[str, Span] = {}

    def run(self, root: Any) -> list[Deployment]:
        self.root = root
        hints = self.ctx.hints()
        if not hints or not _live(root, hints, self.ctx):
            return self.found  # nothing in this document's text can name an engine launch
        envs = mget(root, "envs")  # SkyPilot task
        if isinstance(envs, yaml.MappingNode):
            for k, v in envs.value:
                if isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.ScalarNode):
                    self.top_vars.shell[k.value] = self.ctx.locate(v)
        self._skypilot_env(root)
        self._task_facts(root)
        # Ancestors are a linked list (node, parent-link) so a push costs O(1), not O(depth).
        seen, consumed = self.seen, self.consumed
        stack: list[tuple[Any, Any]] = [(root, None)]
        mapping, sequence, scalar_node = yaml.MappingNode, yaml.SequenceNode, yaml.ScalarNode
        # _live, inlined: it runs once per child node
        index = self.ctx.index
        ascii_text, n_text, n_hints = index.ascii, len(index.text), len(hints)
        starts = [] if ascii_text else index.starts
        n_starts = len(starts)
        push = stack.append
        while stack:
            node, link = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            cls = type(node)
            if cls is scalar_node:
                if id(node) not in consumed:
                    self.visit_scalar(node, link)
                continue
            if cls is mapping:
                self.visit_mapping(node, link)
                children = [pair[1] for pair in reversed(node.value)]
            elif cls is sequence:
                children = node.value[::-1]
            else:
                continue
            sub = (node, link)
            for v in children:
                if type(v) is scalar_node:
                    # visit_scalar reads only strings of 10+ characters
                    if len(v.value) >= 10:
                        push((v, sub))
                    continue
                sm = v.start_mark
                if ascii_text:
                    a = sm.index  # LineIndex.offset_of, inlined
                else:
                    a = starts[sm.line] + sm.column if sm.line < n_starts else n_text
                k = bisect_left(hints, a)
                if k < n_hints:
                    em = v.end_mark
                    if ascii_text:
                        b = em.index
                    else:
                        b = starts[em.line] + em.column if em.line < n_starts else n_text
                    if hints[k] <= b:
                        push((v, sub))
        return self.found

    def _skypilot_env(self, root: Any) -> None:
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
            self.task_image = str(image_id.value).removeprefix("docker:").strip() or None
        top = self.top_vars
        top.per_pod = SKYPILOT_PER_NODE
        if isinstance(nodes, yaml.ScalarNode) and _int(nodes.value) is not None:
            top.shell.setdefault("SKYPILOT_NUM_NODES", self.ctx.locate(nodes))
            top.origins["SKYPILOT_NUM_NODES"] = "num_nodes"
        count = _accelerator_count(mget(res, "accelerators"), self.ctx)
        if count is not None:
            top.shell.setdefault("SKYPILOT_NUM_GPUS_PER_NODE", count)
            top.origins["SKYPILOT_NUM_GPUS_PER_NODE"] = "resources.accelerators"

    def _task_facts(self, root: Any) -> None:
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
                span = self.ctx.span(acc)
                self.task_extra.update(gpus_requested=int(cnt), gpu_product=name.strip())
                self.task_spans.update(gpus_requested=span, gpu_product=span)
        from tpcheck.sources.dockerfile import pin_release

        for key in ("setup", "build_commands", "requirements"):
            node = mget(root, key)
            items = [node] if isinstance(node, yaml.ScalarNode) else (
                list(node.value) if isinstance(node, yaml.SequenceNode) else [])
            for item in items:
                if not isinstance(item, yaml.ScalarNode) or not isinstance(item.value, str):
                    continue
                lead = "" if key != "requirements" else "pip install "
                pin = pin_release(lead + item.value)
                if pin is not None:
                    at = max(0, pin[2] - len(lead))
                    line = self.ctx.locate(item).sub(at, at + 1).span().line
                    self.task_extra["pin"] = (pin[0], pin[1],
                                              f"from `{pin[0]}=={pin[1]}` pinned in {key} at "
                                              f"{self.ctx.path}:{line}")

    def _with_task_facts(self, d: Deployment) -> Deployment:
        from tpcheck.record import replace

        kw: dict[str, Any] = {}
        spans: dict[str, Span] = {}
        for k in ("gpus_requested", "gpu_product"):
            if k in self.task_extra and getattr(d, k) is None:
                kw[k] = self.task_extra[k]
                spans[k] = self.task_spans[k]
        pin = self.task_extra.get("pin")
        if pin is not None and pin[0] == d.engine and d.engine_version is None:
            kw.update(engine_version=pin[1], engine_version_from=pin[2])
        return replace(d, **kw, spans={**spans, **d.spans}) if kw else d

    # -- mappings ---------------------------------------------------------------------------
    def visit_mapping(self, m: Any, link: Any) -> None:
        keys = {k.value: v for k, v in m.value if type(k) is _SCALAR}
        if _MAPPING_KEYS.isdisjoint(keys):
            return  # most mappings on the way to a launch (metadata, spec, template, ...)
        if "modelSpec" in keys and isinstance(keys["modelSpec"], yaml.SequenceNode):
            from tpcheck.sources.helm_values import read_model_specs

            self.found.extend(read_model_specs(keys["modelSpec"], self.ctx, self))
            return
        if (
            "vllmConfig" in keys and isinstance(keys["vllmConfig"], yaml.MappingNode)
        ) or isinstance(keys.get("tensorParallelSize"), yaml.ScalarNode):
            from tpcheck.sources.helm_values import read_model_specs

            self.found.extend(read_model_specs(m, self.ctx, self))
            return
        if "config" in keys:
            from tpcheck.sources.helm_values import is_role_config, read_role_config

            if is_role_config(keys):
                self.found.append(read_role_config(m, keys, self.ctx, self, self.root))
                return
        if "engine_kwargs" in keys and isinstance(keys["engine_kwargs"], yaml.MappingNode):
            self.ray_llm_config(m, keys)
            return
        if "runtime_env" in keys and "import_path" in keys:
            self.ray_serve_env_app(m, keys)
            return
        if "resourceProfile" in keys and ("url" in keys or "args" in keys):
            self.kubeai_model(m, keys, _ancestors(link))
            return
        if (
            "command" in keys or "args" in keys or "entrypoint" in keys or "extraArgs" in keys
        ) and "containers" not in keys:
            self.container(m, keys, link)

    def container(self, m: Any, keys: dict[str, Any], link: Any) -> None:
        ctx = self.ctx
        if not self._may_launch(keys):
            return
        anc = _ancestors(link)
        injected = {**self._modelservice_env(anc), **self._lws_env(anc)}
        k8s_env, plain_env = self._container_env(keys, injected)
        origins = {k: label for k, (loc, label) in injected.items()
                   if k in k8s_env and k8s_env[k] is loc}  # the container's own env wins
        lws = "LWS_GROUP_SIZE" in injected
        shell = Vars(origins=origins, per_pod=LWS_PER_POD if lws else frozenset())
        words = self._container_words(keys, k8s_env, shell)
        if not words:
            return
        image = _image(keys.get("image"))
        extra, extra_spans, notes = self.context(m, keys, anc)
        for cmd, env, la in self._launches(keys, words, k8s_env, plain_env, image, shell):
            kw = dict(extra)
            if image:
                kw["image"] = image
                kw["engine_version"] = engine_version(image, la.engine)
            dnotes = list(notes)
            if la.inferred:
                dnotes.append(f"engine {la.engine} inferred from the image or flags")
            d = deployment_from_words(
                ctx.path, cmd, la, env=env, extra=kw, extra_spans=extra_spans, notes=dnotes
            )
            d = self.model_hints(d, anc, _storage_uri_hint(keys.get("storageUri"), ctx.span))
            self.found.append(self.apply_parallelism(d, anc))

    def _model_label(self, anc: tuple[Any, ...]) -> ModelHint | None:
        """The pod template's ``ai.gke.io/model`` label (GKE's samples name the model they
        serve there: ``gemma-3-27b-it``): a name the resolver matches exactly against the
        catalog's names, as it does a folder's, for a model given as a path or expression."""
        for a in reversed(anc):
            labels = mpath(a, "metadata", "labels") if isinstance(a, yaml.MappingNode) else None
            value = mget(labels, MODEL_LABEL) if isinstance(labels, yaml.MappingNode) else None
            if isinstance(value, yaml.ScalarNode) and isinstance(value.value, str) and (
                    value.value.strip()):
                name = value.value.strip()
                return ModelHint(name, f"label {MODEL_LABEL} `{name}` "
                                       f"(line {self.ctx.span(value).line})")
        return None

    def _lws_env(self, anc: tuple[Any, ...]) -> dict[str, tuple[Located, str]]:
        """What a LeaderWorkerSet injects into every container of its pods that the manifest
        fixes: ``LWS_GROUP_SIZE``, the group's ``leaderWorkerTemplate.size`` (LWS docs,
        reference/labels-annotations-and-environment-variables; kubernetes-sigs/lws
        pkg/utils/pod/pod_utils.go sets it from the pod's size annotation). The leader's
        address and the worker index differ between pods (``LWS_PER_POD``)."""
        for a in reversed(anc):
            if isinstance(a, yaml.MappingNode) and "leaderWorkerTemplate" in _first_keys(a):
                size = mpath(a, "leaderWorkerTemplate", "size")
                if isinstance(size, yaml.ScalarNode) and (_int(size.value) or 0) >= 1:
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
                    if not isinstance(v, yaml.ScalarNode) or (_int(v.value) or 0) < 1:
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
        n = {k: int(_int(v.value) or 0) for k, v in nodes.items()}
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
        for name, (loc, _) in injected.items():
            k8s_env[name] = loc
        if isinstance(env_nodes, yaml.SequenceNode):
            for item in env_nodes.value:
                name, value = mget(item, "name"), mget(item, "value")
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

    def _container_words(self, keys: dict[str, Any], k8s_env: LazyEnv,
                         shell: Vars) -> list[Word]:
        """The words of entrypoint/command/args/extraArgs, lists or strings, in that order."""
        ctx = self.ctx
        words: list[Word] = []
        compose = "entrypoint" in keys or ("image" in keys and "environment" in keys)
        for key in ("entrypoint", "command", "args", "extraArgs"):
            node = keys.get(key)
            if isinstance(node, yaml.SequenceNode):
                for item in node.value:
                    if isinstance(item, yaml.ScalarNode):
                        self.consumed.add(id(item))
                        words.append(k8s_word(ctx.locate(item), k8s_env, ctx.expansion))
            elif isinstance(node, yaml.ScalarNode) and node.value:
                self.consumed.add(id(node))
                loc = ctx.locate(node)
                flags_only = key in ("args", "extraArgs") and loc.value.lstrip().startswith("-")
                if compose or not flags_only:
                    vars_ = Vars(shell=self._shell_env(k8s_env, compose), k8s=k8s_env,
                                 origins=shell.origins, per_pod=shell.per_pod)
                    for cmd in _split_words(loc, vars_):
                        words.extend(cmd)
                else:
                    words.extend(_split_words_flat(loc, Vars(k8s=k8s_env, arithmetic=False)))
        return words

    def _launches(
        self, keys: dict[str, Any], words: list[Word], k8s_env: LazyEnv,
        plain_env: dict[str, str], image: str | None, shell: Vars,
    ) -> list[tuple[list[Word], dict[str, str], Launch]]:
        """The launches in a container's words: inside ``sh -c``, written, or inferred."""
        launches: list[tuple[list[Word], dict[str, str], Launch]] = []
        inner = shell_c_string(words)
        if inner is not None:
            vars_ = Vars(shell=self._shell_env(k8s_env, False), k8s=k8s_env,
                         origins=shell.origins, per_pod=shell.per_pod)
            for cmd, env in read_commands(inner.text, vars_, dict(plain_env)):
                la = find_launch([w.value for w in cmd])
                if la is not None:
                    launches.append((cmd, dict(env), la))  # a view until the next command
            return launches
        la = find_launch([w.value for w in words])
        if la is not None:
            launches.append((words, plain_env, la))
        elif (
            "command" not in keys or words[0].value.startswith("-")
            or _is_python_or_shell(words)
        ):
            eng = infer_engine([w.value for w in words], image)
            flagged = any(w.value.startswith("--") for w in words)
            if eng is not None and flagged:
                # vllm/vllm-openai's entrypoint is `vllm serve`: a first bare word in args
                # is the model (`args: [MODEL, --tensor-parallel-size, "8"]`).
                positional = ("command" not in keys and eng == "vllm" and bool(words)
                              and not words[0].value.startswith("-"))
                launches.append(
                    (words, plain_env, Launch(eng, 0, 0, positional, inferred=True)))
        return launches

    @staticmethod
    def _may_launch(keys: dict[str, Any]) -> bool:
        """Cheap test before positions are computed: a launcher, or engine flags, is written."""
        raw: list[str] = []
        for key in ("entrypoint", "command", "args", "extraArgs"):
            node = keys.get(key)
            if isinstance(node, yaml.ScalarNode):
                raw.append(str(node.value))
            elif isinstance(node, yaml.SequenceNode):
                raw.extend(str(i.value) for i in node.value if isinstance(i, yaml.ScalarNode))
        joined = " ".join(raw)
        if LAUNCH_HINT.search(joined):
            return True
        if "-" not in joined:
            return False
        image = keys.get("image")
        img = image.value if isinstance(image, yaml.ScalarNode) else None
        return infer_engine(joined.split(), img) is not None

    def _shell_env(self, k8s_env: LazyEnv, compose: bool) -> LazyEnv:
        """A fresh copy: the shell's assignments must not leak into the container env."""
        out = LazyEnv(self.ctx, self.top_vars.shell)
        if not compose:
            out.update_from(k8s_env)  # the container env is the shell's environment too
        return out

    def context(
        self, m: Any, keys: dict[str, Any], anc: tuple[Any, ...]
    ) -> tuple[dict[str, Any], dict[str, Span], list[str]]:
        """GPU count, product and group size that apply to a container: its own resources
        first, then each enclosing object's, nearest first, one reader per kind of object."""
        extra: dict[str, Any] = {}
        spans: dict[str, Span] = {}
        notes: list[str] = []
        self._container_gpus(keys, extra, spans)
        readers = (self._dynamo_gpus, self._node_product, self._ray_cluster,
                   self._ignore_annotation, self._group_size, self._ome_group_size,
                   self._pd_role, self._gke_networks)
        for a in reversed(anc):
            if not isinstance(a, yaml.MappingNode):
                continue
            ks = _first_keys(a)  # one pass over the ancestor's keys, not one per lookup
            for read in readers:
                read(a, ks, extra, spans)
        return extra, spans, notes

    def _container_gpus(
        self, keys: dict[str, Any], extra: dict[str, Any], spans: dict[str, Span]
    ) -> None:
        """Kubernetes resources.limits/requests, else compose's reserved devices."""
        ctx = self.ctx
        res = keys.get("resources")
        for where in ("limits", "requests"):
            sect = mget(res, where)
            for gk in GPU_KEYS:
                v = mget(sect, gk)
                if isinstance(v, yaml.ScalarNode) and "gpus_requested" not in extra:
                    n = _int(v.value)
                    if n is not None:
                        extra["gpus_requested"] = n
                        spans["gpus_requested"] = ctx.span(v)
            if isinstance(sect, yaml.MappingNode) and "network_resource" not in extra:
                for kn, vn in sect.value:
                    name = str(getattr(kn, "value", ""))
                    if NET_RESOURCE.match(name) and isinstance(vn, yaml.ScalarNode):
                        extra["network_resource"] = f"{name}={vn.value}"
                        spans["network_resource"] = ctx.span(kn)
                        break
        devices = mpath(res, "reservations", "devices") or mpath(
            mget(keys.get("deploy"), "resources"), "reservations", "devices"
        )
        if isinstance(devices, yaml.SequenceNode) and "gpus_requested" not in extra:
            for dev in devices.value:
                cnt, ids = mget(dev, "count"), mget(dev, "device_ids")
                if isinstance(cnt, yaml.ScalarNode) and _int(cnt.value) is not None:
                    extra["gpus_requested"] = _int(cnt.value)
                    spans["gpus_requested"] = ctx.span(cnt)
                elif isinstance(ids, yaml.SequenceNode):
                    extra["gpus_requested"] = len(ids.value)
                    spans["gpus_requested"] = ctx.span(ids)

    def _dynamo_gpus(
        self, a: Any, ks: dict[str, Any], extra: dict[str, Any], spans: dict[str, Span]
    ) -> None:
        """Dynamo: resources.limits.gpu on the service."""
        if "gpus_requested" in extra or "resources" not in ks:
            return
        res_a = ks["resources"]
        g = mpath(res_a, "limits", "gpu") or mpath(res_a, "requests", "gpu")
        if isinstance(g, yaml.ScalarNode) and _int(g.value) is not None:
            extra["gpus_requested"] = _int(g.value)
            spans["gpus_requested"] = self.ctx.span(g)

    def _node_product(
        self, a: Any, ks: dict[str, Any], extra: dict[str, Any], spans: dict[str, Span]
    ) -> None:
        """The GPU product a pod's nodeSelector or affinity asks for."""
        if "gpu_product" in extra or ("nodeSelector" not in ks and "affinity" not in ks):
            return
        prod = _product(a)
        if prod is not None:
            extra["gpu_product"] = prod.value
            spans["gpu_product"] = self.ctx.span(prod)

    def _ray_cluster(
        self, a: Any, ks: dict[str, Any], extra: dict[str, Any], spans: dict[str, Span]
    ) -> None:
        """KubeRay: a RayCluster's worker or head group."""
        if "ray_cluster" not in extra and ("workerGroupSpecs" in ks or "headGroupSpec" in ks):
            extra["ray_cluster"] = True

    def _ignore_annotation(
        self, a: Any, ks: dict[str, Any], extra: dict[str, Any], spans: dict[str, Span]
    ) -> None:
        """The tpcheck ignore annotation on the object's metadata."""
        if "ignores" in extra or "metadata" not in ks:
            return
        ign = mget(mget(ks["metadata"], "annotations"), IGNORE_ANNOTATION)
        if isinstance(ign, yaml.ScalarNode):
            codes = ign.value.split(":", 1)[0]  # "TP201,TP203: reason"
            extra["ignores"] = {ign.start_mark.line + 1: frozenset(
                c.strip().upper() for c in codes.split(",") if c.strip())}
            spans["ignores"] = self.ctx.span(ign)

    def _gke_networks(
        self, a: Any, ks: dict[str, Any], extra: dict[str, Any], spans: dict[str, Span]
    ) -> None:
        """GKE multi-networking: the pod's ``networking.gke.io/interfaces`` annotation (a JSON
        list of {interfaceName, network}); every interface but the default one is a GPU NIC
        (GKE docs, "Set up multi-network support for Pods"; A3 Mega's eth1–eth8)."""
        if "network_resource" in extra or "metadata" not in ks:
            return
        ann = mget(ks["metadata"], "annotations")
        node = mget(ann, GKE_INTERFACES)
        if not isinstance(node, yaml.ScalarNode):
            return
        try:
            items = json.loads(node.value)
        except ValueError:
            return
        if not isinstance(items, list):
            return
        dflt = mget(ann, GKE_DEFAULT_INTERFACE)
        main = dflt.value if isinstance(dflt, yaml.ScalarNode) else "eth0"
        nets = [str(i.get("network", "")) for i in items
                if isinstance(i, dict) and i.get("interfaceName") != main]
        if nets:
            rdma = ":rdma" if any("rdma" in x.lower() for x in nets) else ""
            extra["network_resource"] = f"{GKE_INTERFACES}={len(nets)}{rdma}"
            spans["network_resource"] = self.ctx.span(node)

    def _pd_role(
        self, a: Any, ks: dict[str, Any], extra: dict[str, Any], spans: dict[str, Span]
    ) -> None:
        """A disaggregated server's side from its labels: llm-d's ``llm-d.ai/role`` (pod
        template or object metadata), Dynamo's ``subComponentType`` on the service."""
        if "pd_role" in extra:
            return
        node = ks.get("subComponentType")
        if node is None and "metadata" in ks:
            node = mget(mget(ks["metadata"], "labels"), PD_ROLE_LABEL)
        if isinstance(node, yaml.ScalarNode) and node.value in ("prefill", "decode"):
            extra["pd_role"] = node.value
            spans["pd_role"] = self.ctx.span(node)

    def _group_size(
        self, a: Any, ks: dict[str, Any], extra: dict[str, Any], spans: dict[str, Span]
    ) -> None:
        """Pods per replica: LWS, Dynamo multinode, podGroupSize, llmaz's workloadTemplate."""
        if "group_size" in extra or not (
            "leaderWorkerTemplate" in ks or "multinode" in ks or "podGroupSize" in ks
            or "workloadTemplate" in ks
        ):
            return
        size = mpath(a, "leaderWorkerTemplate", "size")
        if size is None:
            size = mpath(a, "multinode", "nodeCount")
        if size is None:
            size = mget(a, "podGroupSize")
        if size is None:  # llmaz Service: an LWS template under another name
            size = mpath(a, "workloadTemplate", "size")
        if isinstance(size, yaml.ScalarNode) and _int(size.value) is not None:
            extra["group_size"] = _int(size.value)
            spans["group_size"] = self.ctx.span(size)

    def _ome_group_size(
        self, a: Any, ks: dict[str, Any], extra: dict[str, Any], spans: dict[str, Span]
    ) -> None:
        """OME engine/decoder (and its runtimes' engineConfig): a leader pod and worker.size
        worker pods per replica (OME docs, concepts/omenative/instances)."""
        if "group_size" in extra or "leader" not in ks or "worker" not in ks:
            return
        size = mget(ks["worker"], "size")
        if isinstance(size, yaml.ScalarNode) and _int(size.value) is not None:
            extra["group_size"] = 1 + (_int(size.value) or 0)
            spans["group_size"] = self.ctx.span(size)

    def model_hints(
        self, d: Deployment, anc: tuple[Any, ...], first: ModelHint | None = None
    ) -> Deployment:
        """Where else the document names the model, for a ``--model`` that is an expression or
        a path: ``first`` (KServe's ``storageUri``), then an llm-d-benchmark scenario's
        ``model.huggingfaceId`` (its launch reads ``/model-cache/$MODEL_PATH``, a variable the
        harness fills from that block at run time)."""
        if d.model is not None and not d.model.startswith("/"):
            return d  # a hub id as written: nothing to hint
        found = [first] if first is not None else []
        for a in reversed(anc):
            if not isinstance(a, yaml.MappingNode):
                continue
            hub = mpath(a, "model", "huggingfaceId") or mpath(a, "common", "model",
                                                               "huggingfaceId")
            if isinstance(hub, yaml.ScalarNode) and isinstance(hub.value, str) and hub.value:
                found.append(ModelHint(hub.value, f"model.huggingfaceId `{hub.value}` "
                                                  f"(line {self.ctx.span(hub).line})"))
                break
        label = self._model_label(anc)
        if label is not None:
            found.append(label)
        if not found:
            return d
        from tpcheck.record import replace

        return replace(d, model_hints=(*d.model_hints, *found))

    def apply_parallelism(self, d: Deployment, anc: tuple[Any, ...]) -> Deployment:
        """KServe ``parallelism: {tensor, pipeline, data, expert}`` for fields flags left unset."""
        par = None
        for a in reversed(anc):
            par = mget(a, "parallelism")
            if isinstance(par, yaml.MappingNode):
                break
            par = None
        if par is None:
            return d
        from tpcheck.record import replace

        fields = {"tensor": "tensor_parallel_size", "pipeline": "pipeline_parallel_size",
                  "data": "data_parallel_size"}
        kw: dict[str, Any] = {}
        spans = dict(d.spans)
        for key, name in fields.items():
            v = mget(par, key)
            if isinstance(v, yaml.ScalarNode) and getattr(d, name) is None and (
                name not in d.unresolved
            ):
                n = _int(v.value)
                if n is not None:
                    kw[name] = n
                    spans[name] = self.ctx.span(v)
        ex = mget(par, "expert")
        if isinstance(ex, yaml.ScalarNode) and d.enable_expert_parallel is None:
            kw["enable_expert_parallel"] = ex.value.lower() in ("true", "1", "yes")
            spans["enable_expert_parallel"] = self.ctx.span(ex)
        return replace(d, spans=spans, **kw) if kw else d

    # -- CRDs ------------------------------------------------------------------------------
    def kubeai_model(self, m: Any, keys: dict[str, Any], anc: tuple[Any, ...]) -> None:
        ctx = self.ctx
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
                    self.consumed.add(id(item))
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
            if _int(count) is not None:
                extra["gpus_requested"] = _int(count)
                spans["gpus_requested"] = loc.span(len(name) + 1)
            extra["gpu_product"] = name
            spans["gpu_product"] = loc.span(0, len(name))
        env = {}
        env_node = keys.get("env")
        if isinstance(env_node, yaml.MappingNode):
            env = {k.value: v.value for k, v in env_node.value if isinstance(v, yaml.ScalarNode)}
        self.found.append(
            deployment_from_fields(
                ctx.path, engine, ctx.span(m), f, env=env, extra=extra, extra_spans=spans
            )
        )

    def ray_llm_config(self, m: Any, keys: dict[str, Any]) -> None:
        """Ray Serve LLM: ``engine_kwargs`` are vLLM's EngineArgs."""
        ctx = self.ctx
        f = kwargs_fields(keys["engine_kwargs"], ctx, VLLM_KWARGS, self.consumed)
        src = mpath(m, "model_loading_config", "model_source")
        if isinstance(src, yaml.ScalarNode) and "model" not in f.values:
            f.set("model", src.value, ctx.span(src))
        extra: dict[str, Any] = {"entrypoint": "llm"}
        spans: dict[str, Span] = {}
        acc = mget(m, "accelerator_type")
        if isinstance(acc, yaml.ScalarNode):
            extra["gpu_product"] = acc.value
            spans["gpu_product"] = ctx.span(acc)
        self.found.append(
            deployment_from_fields(ctx.path, "vllm", ctx.span(m), f, extra=extra, extra_spans=spans)
        )

    def ray_serve_env_app(self, m: Any, keys: dict[str, Any]) -> None:
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
        if tp is None or _int(tp.value) is None:
            return
        ctx = self.ctx
        f = Fields()
        for var, name in _RAY_ENV_FIELDS:
            node = vals.get(var)
            if node is not None:
                loc = ctx.locate(node)
                set_typed(f, name, VLLM_KWARGS[name][1], Word(loc, loc.fallback))
                self.consumed.add(id(node))
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
        self.found.append(deployment_from_fields(ctx.path, "vllm", ctx.span(m), f, extra=extra,
                                                 extra_spans=spans, notes=[note]))

    # -- scalars ---------------------------------------------------------------------------
    def visit_scalar(self, node: Any, link: Any = None) -> None:
        value = node.value
        if not isinstance(value, str) or len(value) < 10:
            return
        if "applications:" in value and ("engine_kwargs" in value or "env_vars" in value):
            self.embedded_yaml(node)
            return
        if not LAUNCH_HINT.search(value):
            return
        loc = self.ctx.locate(node)
        top = self.top_vars
        anc = _ancestors(link) if link is not None else ()
        injected = self._modelservice_env(anc)  # a chart's values: its command, as a string
        shell = {k: v for k, (v, _) in injected.items()}
        shell.update(top.shell)
        origins = {k: label for k, (_, label) in injected.items() if k not in top.shell}
        origins.update(top.origins)
        per_pod = top.per_pod | (LWS_PER_POD if "LWS_GROUP_SIZE" in injected else frozenset())
        vars_ = Vars(shell=shell, origins=origins, per_pod=per_pod)
        found = read_shell_text(loc, self.ctx.path, vars_)
        if found and link is not None:
            found = [self.model_hints(d, anc) for d in found]
        if found and self.task_image:
            found = [self._with_task_image(d) for d in found]
        if found and self.task_extra:
            found = [self._with_task_facts(d) for d in found]
        self.found.extend(found)

    def _with_task_image(self, d: Deployment) -> Deployment:
        """A SkyPilot task's ``run`` executes in its ``image_id`` container: that image pins
        the engine release as a pod's image does (a launch that names its own image keeps it)."""
        from tpcheck.record import replace

        img = self.task_image
        if d.image or img is None:
            return d
        return replace(d, image=img, engine_version=engine_version(img, d.engine))

    def embedded_yaml(self, node: Any) -> None:
        """Ray ``serveConfigV2: |`` holds a YAML document; read it with positions mapped back."""
        loc = self.ctx.locate(node)
        sub = self.ctx.inner(loc)
        try:
            docs = list(yaml.compose_all(loc.value, Loader=sub.loader))
        except yaml.YAMLError:
            return
        for doc in docs:
            if doc is not None:
                self.found.extend(Walker(sub).run(doc))


# Ray Serve runtime_env.env_vars a serve script reads → the vLLM engine argument it sets
_RAY_ENV_FIELDS = (
    ("TENSOR_PARALLEL_SIZE", "tensor_parallel_size"),
    ("PIPELINE_PARALLEL_SIZE", "pipeline_parallel_size"),
    ("MAX_NUM_SEQS", "max_num_seqs"),
    ("MAX_MODEL_LEN", "max_model_len"),
)


def _image(node: Any) -> str | None:
    """The container image, written as a string or as Helm-style repository + tag."""
    if isinstance(node, yaml.ScalarNode):
        return str(node.value)
    if isinstance(node, yaml.MappingNode):
        repo, tag = mget(node, "repository"), mget(node, "tag")
        if isinstance(repo, yaml.ScalarNode):
            return str(repo.value) + (f":{tag.value}" if isinstance(tag, yaml.ScalarNode) else "")
    return None


def _storage_uri_hint(node: Any, span: Callable[[Any], Span]) -> ModelHint | None:
    """KServe ``storageUri``: ``hf://org/name`` names a hub id; another URI (``s3://``,
    ``gs://``, ``pvc://``) a folder whose name may spell the model."""
    if not isinstance(node, yaml.ScalarNode) or not isinstance(node.value, str):
        return None
    uri = node.value.strip()
    if not uri:
        return None
    where = f"storageUri `{uri}` (line {span(node).line})"
    if uri.startswith("hf://"):
        repo = uri[len("hf://"):].split(":", 1)[0].strip("/")  # hf://org/name[:revision]
        return ModelHint(repo, where) if repo else None
    return ModelHint(uri, where)


_PARALLELISM = frozenset({"tensor", "data", "dataLocal", "workers"})
MODEL_LABEL = "ai.gke.io/model"  # GKE AI/ML samples: the model a pod template serves


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


def _ancestors(link: Any) -> tuple[Any, ...]:
    """The linked ancestors as a tuple, root first."""
    out: list[Any] = []
    while link is not None:
        out.append(link[0])
        link = link[1]
    out.reverse()
    return tuple(out)


def _live(node: Any, hints: list[int], ctx: Ctx) -> bool:
    """Whether the node's source text holds a hint (a superset test: never drops a launch)."""
    a, b = ctx.index.offset_of(node.start_mark), ctx.index.offset_of(node.end_mark)
    k = bisect_left(hints, a)
    return k < len(hints) and hints[k] <= b


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


def _split_words(loc: Located, vars_: Vars) -> Iterator[list[Word]]:
    from tpcheck.sources.shell import tokenize

    yield from tokenize(loc, vars_)


def _split_words_flat(loc: Located, vars_: Vars) -> list[Word]:
    out: list[Word] = []
    for cmd in _split_words(loc, vars_):
        out.extend(cmd)
    return out


def _is_python_or_shell(words: list[Word]) -> bool:
    first = words[0].value.rsplit("/", 1)[-1] if words else ""
    return first.startswith(("python", "vllm", "sglang"))


def _product(node: Any) -> Any:
    sel = mget(node, "nodeSelector")
    if isinstance(sel, yaml.MappingNode):
        for label in PRODUCT_LABELS:
            v = mget(sel, label)
            if isinstance(v, yaml.ScalarNode):
                return v
    return product_in_terms(mpath(
        node, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
        "nodeSelectorTerms",
    ))


def _int(v: str) -> int | None:
    try:
        return int(str(v).strip().strip('"'))
    except ValueError:
        return None


__all__ = ["SGLANG_KWARGS", "Walker", "engine_version", "scalar"]
