"""Kubernetes-shaped YAML: containers anywhere in the tree and the CRDs that carry engine facts.

Any mapping with ``command``/``args`` is a container candidate (Pods, Deployments, StatefulSets,
Jobs, LeaderWorkerSets, KServe, Dynamo ``mainContainer``, aibrix StormServices, ...). Around it
the walk keeps its ancestors, so the GPU count, node selector, LWS group size, KServe
``parallelism`` and Dynamo ``resources.limits.gpu`` that apply to it are found where they are.
The walk visits each node once (an alias is the same node object), so alias bombs stay linear.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator
from operator import itemgetter

from tpcheck.engines.flags import SGLANG_KWARGS
from tpcheck.sources.argv import Launch, deployment_from_words, find_launch, infer_engine
from tpcheck.sources.base import Deployment, ModelHint, Span
from tpcheck.sources.kube_env import EnvReaders, LazyEnv
from tpcheck.sources.kube_pod import PodFacts
from tpcheck.sources.positions import Located
from tpcheck.sources.pyyaml import yaml
from tpcheck.sources.shell_vars import Vars, shell_c_string
from tpcheck.sources.words import Word, k8s_word
from tpcheck.sources.yamlctx import Ctx, NodePlace, scalar
from tpcheck.sources.yamlnodes import engine_version, mget

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any


# Injected by LeaderWorkerSet with a value that differs between the pods of a group (LWS docs,
# reference/labels-annotations-and-environment-variables): never a ``:-`` default, never known.
LWS_PER_POD = frozenset({"LWS_LEADER_ADDRESS", "LWS_WORKER_INDEX"})
LAUNCH_HINT = (
    r"vllm\s+serve|sglang\s+serve|vllm\.entrypoints|sglang\.launch_server|dynamo\.(?:vllm|sglang)"
)  # searched: has_launch_hint, held to it by the tests
_LAUNCH_WORDS = ("vllm.entrypoints", "sglang.launch_server", "dynamo.vllm", "dynamo.sglang")


def has_launch_hint(text: str) -> bool:
    """``re.search(LAUNCH_HINT, text)`` with str methods (asked of every long scalar; the
    pattern's compile was ~1 million instructions of a one-file lint): ``vllm`` or ``sglang``,
    whitespace (``\\s``: ``str.isspace``), ``serve``; or one of the dotted launchers."""
    if "vllm" not in text and "sglang" not in text:
        return False
    if any(w in text for w in _LAUNCH_WORDS):
        return True
    for engine in ("vllm", "sglang"):
        i = text.find(engine)
        while i >= 0:
            j = i + len(engine)
            k = j
            while k < len(text) and text[k].isspace():
                k += 1
            if k > j and text.startswith("serve", k):
                return True
            i = text.find(engine, j)  # the next one starts past this one's whitespace
    return False


_SCALAR = yaml.ScalarNode
# Keys visit_mapping reacts to: a mapping with none of them is only walked through.
_MAPPING_KEYS = frozenset({
    "modelSpec", "vllmConfig", "tensorParallelSize", "engine_kwargs", "resourceProfile",
    "command", "args", "entrypoint", "extraArgs", "runtime_env", "config",
})


# The top-level keys whose task-file readers (tpcheck.sources.kube_task) can find anything:
# SkyPilot's ``run``, Truss's ``docker_server`` and the release pins' setup/build/requirements.
_TASK_KEYS = frozenset({"run", "docker_server", "setup", "build_commands", "requirements"})


class Walker(EnvReaders, PodFacts):
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
        if isinstance(root, yaml.MappingNode) and any(
                k.value in _TASK_KEYS and isinstance(k, yaml.ScalarNode) for k, _ in root.value):
            from tpcheck.sources import kube_task

            kube_task.skypilot_env(self, root)
            kube_task.task_facts(self, root)
        # Ancestors are a linked list (node, parent-link) so a push costs O(1), not O(depth).
        seen, consumed = self.seen, self.consumed
        stack: list[tuple[Any, Any]] = [(root, None)]
        children: Iterator[Any]
        mapping, sequence, scalar_node = yaml.MappingNode, yaml.SequenceNode, yaml.ScalarNode
        # _live, inlined: it runs once per child node
        index = self.ctx.index
        ascii_text, n_text, n_hints = index.ascii, len(index.text), len(hints)
        starts = [] if ascii_text else index.starts
        n_starts = len(starts)
        push = stack.append
        second = itemgetter(1)
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
                children = map(second, reversed(node.value))  # values, last first, in C
            elif cls is sequence:
                children = reversed(node.value)
            else:
                continue
            sub = (node, link)
            for v in children:
                if type(v) is scalar_node:
                    # visit_scalar reads only strings of 10+ characters that name an engine
                    # (has_launch_hint) or hold a Ray serve config: the others are not pushed
                    s = v.value
                    if len(s) >= 10 and ("vllm" in s or "sglang" in s or "applications:" in s):
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

    # -- mappings ---------------------------------------------------------------------------
    def visit_mapping(self, m: Any, link: Any) -> None:
        for k, _ in m.value:
            if type(k) is _SCALAR and k.value in _MAPPING_KEYS:
                break
        else:
            # most mappings on the way to a launch (metadata, spec, template, ...): no key
            # dict is built for them
            return
        keys = {k.value: v for k, v in m.value if type(k) is _SCALAR}
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
            from tpcheck.sources.kube_crd import ray_llm_config

            ray_llm_config(self, m, keys)
            return
        if "runtime_env" in keys and "import_path" in keys:
            from tpcheck.sources.kube_crd import ray_serve_env_app

            ray_serve_env_app(self, m, keys)
            return
        if "resourceProfile" in keys and ("url" in keys or "args" in keys):
            from tpcheck.sources.kube_crd import kubeai_model

            kubeai_model(self, m, keys, _ancestors(link))
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
                        if "$(" in item.value:
                            words.append(k8s_word(ctx.locate(item), k8s_env, ctx.expansion))
                        else:  # k8s_word's own word, placed only when asked
                            words.append(Word.placed_later(item.value, NodePlace(ctx, item),
                                                           None, None))
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
            from tpcheck.sources.shell import read_commands

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
        if has_launch_hint(joined):
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

    # -- scalars ---------------------------------------------------------------------------
    def visit_scalar(self, node: Any, link: Any = None) -> None:
        value = node.value
        if not isinstance(value, str) or len(value) < 10:
            return
        if "applications:" in value and ("engine_kwargs" in value or "env_vars" in value):
            self.embedded_yaml(node)
            return
        if not has_launch_hint(value):
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
        from tpcheck.sources.shell import read_shell_text  # the tokenizer, when a text is read

        found = read_shell_text(loc, self.ctx.path, vars_)
        if found and link is not None:
            found = [self.model_hints(d, anc) for d in found]
        if found and (self.task_image or self.task_extra):
            from tpcheck.sources.kube_task import with_task_facts, with_task_image

            if self.task_image:
                found = [with_task_image(self, d) for d in found]
            if self.task_extra:
                found = [with_task_facts(self, d) for d in found]
        self.found.extend(found)

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


__all__ = ["SGLANG_KWARGS", "Walker", "engine_version", "scalar"]
