"""KServe ``LLMInferenceService``: the ``vllm serve`` KServe's well-known configs run for it.

An LLMInferenceService (serving.kserve.io v1alpha1/v1alpha2) names the model (``spec.model.uri``,
``spec.model.name``), the layout (``spec.parallelism``), a pod template whose ``main`` container
usually writes no command, and optionally a disaggregated prefill pool (``spec.prefill``, with
its own parallelism and template) and multi-node ``worker`` pods. The controller merges, in
order, a well-known ``LLMInferenceServiceConfig`` picked from the spec's shape, the configs the
spec's ``baseRefs`` name, and the spec itself (kserve pkg/controller/v1alpha2/llmisvc/
config_merge.go, ``combineBaseRefsConfig``): no prefill and no worker, ``config-llm-template``;
a worker with ``data``/``dataLocal``, ``config-llm-worker-data-parallel``; a worker with
``pipeline``, ``config-llm-worker-pipeline-parallel``; with a prefill pool, the decode and
prefill variants of the same. Their ``main`` container runs (config/llmisvcconfig/*.yaml, kserve
commit aaac4e294dae, ``eval "exec vllm serve /mnt/models ... ${VLLM_ADDITIONAL_ARGS} $@"``):

- every template: ``--served-model-name {{ .Spec.Model.Name }}``, and
  ``--tensor-parallel-size`` when ``parallelism.tensor`` is set (the single-node templates
  since kserve #5782, commit 92da7158c, 2026-07: said in a note, since a KServe before it
  passes no TP there);
- data parallel: ``--enable-expert-parallel`` when ``expert``, ``--data-parallel-size
  {{ or .Data 1 }}``, ``--data-parallel-size-local {{ or .DataLocal 1 }}``;
- pipeline parallel: ``--pipeline-parallel-size {{ or .Pipeline 1 }}`` and ``--nnodes`` the same;
- then the words of the ``VLLM_ADDITIONAL_ARGS`` env value (``eval``: shell quoting applies),
  then the container's ``args``.

The v1alpha1-era single-node template (commit d9d658f80, 2025-10) ran ``vllm serve /mnt/models``
with the container's ``args`` and no ``VLLM_ADDITIONAL_ARGS``: a v1alpha1 document is read as
today's controller runs it, with a note saying so. A worker's LeaderWorkerSet has
``Parallelism.GetSize()`` pods (llm_inference_service_types_func.go: data / dataLocal, at least
1; else pipeline). That launch is what tpcheck reads, each value placed where the file writes
it; a ``main`` container that writes its own ``command`` replaces the template's and is read as
written (``kube.Walker``). ``baseRefs`` are merged from the configs of the same file or folder
(the nearest writer of a container key wins, env merged by name), each value placed in the file
that writes it; one found nowhere is named in a note. A config whose main container writes a
command gives the service that launch, with the service's model and GPUs. A config no service
beside it names is read as a service would run it; one a service names is read through that
service only.
"""

from __future__ import annotations

import os
from functools import lru_cache

from tpcheck.record import replace
from tpcheck.sources.argv import Launch, deployment_from_words
from tpcheck.sources.base import MAX_BYTES, Deployment, ModelHint, Span
from tpcheck.sources.files import folder_stamp
from tpcheck.sources.kube_env import LazyEnv, first_keys, int_or_none
from tpcheck.sources.pyyaml import yaml
from tpcheck.sources.words import Word
from tpcheck.sources.yamlctx import Ctx
from tpcheck.sources.yamlnodes import mget, mpath

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SERVICE = "LLMInferenceService"
CONFIG = "LLMInferenceServiceConfig"
GROUP = "serving.kserve.io/"
MAIN = "main"  # the container the well-known configs' templates name
MOUNT = "/mnt/models"  # constants.DefaultModelLocalMountPath: where the model is mounted
ADDITIONAL = "VLLM_ADDITIONAL_ARGS"
MAX_SCANNED = 200  # YAML files of the folder looked at for the configs baseRefs name
SINGLE_TP_NOTE = ("--tensor-parallel-size from spec.parallelism.tensor: KServe's single-node "
                  "templates pass it since kserve #5782 (2026-07); an older KServe does not")
V1ALPHA1_NOTE = ("a v1alpha1 service, read as today's templates run it; the v1alpha1-era "
                 "single-node template took only the container's args")


def kind_of(doc: Any) -> str | None:
    """``LLMInferenceService`` or ``LLMInferenceServiceConfig`` of KServe's API group, else None."""
    if not isinstance(doc, yaml.MappingNode):
        return None
    kind, api = mget(doc, "kind"), mget(doc, "apiVersion")
    if not (isinstance(kind, yaml.ScalarNode) and isinstance(api, yaml.ScalarNode)):
        return None
    if kind.value in (SERVICE, CONFIG) and str(api.value).startswith(GROUP):
        return str(kind.value)
    return None


def _name(doc: Any) -> str:
    n = mpath(doc, "metadata", "name")
    return str(n.value) if isinstance(n, yaml.ScalarNode) else "?"


def _refs(doc: Any) -> list[str]:
    refs = mpath(doc, "spec", "baseRefs")
    return [str(n.value) for r in (refs.value if isinstance(refs, yaml.SequenceNode) else ())
            if isinstance(n := mget(r, "name"), yaml.ScalarNode)]


class _Src:
    """One spec and the file it is written in (its positions, its own reader)."""

    def __init__(self, doc: Any, ctx: Ctx) -> None:
        from tpcheck.sources.kube import Walker

        self.doc, self.ctx = doc, ctx
        self.spec = mget(doc, "spec")
        self.walker = Walker(ctx)


class _Layers:
    """The service and the configs its baseRefs name, nearest (the service) first."""

    def __init__(self, doc: Any, ctx: Ctx, docs: list[Any]) -> None:
        self.srcs = [_Src(doc, ctx)]
        self.missing: list[str] = []
        here = {_name(d): d for d in docs if kind_of(d) == CONFIG}
        for name in reversed(_refs(doc)):  # a later ref overrides an earlier one
            src = _Src(here[name], ctx) if name in here else _folder_config(ctx.path, name)
            if src is not None and isinstance(src.spec, yaml.MappingNode):
                self.srcs.append(src)
            else:
                self.missing.append(name)

    def first(self, *keys: str) -> tuple[Any, _Src]:
        """The nearest layer's node at ``keys`` (None, the service when none writes it)."""
        for s in self.srcs:
            v = mpath(s.spec, *keys)
            if v is not None:
                return v, s
        return None, self.srcs[0]

    def node(self, *keys: str) -> Any:
        return self.first(*keys)[0]

    def containers(self, *keys: str) -> list[tuple[Any, _Src]]:
        """The ``main`` containers at ``keys``/containers, nearest layer first."""
        out = []
        for s in self.srcs:
            seq = mpath(s.spec, *keys, "containers")
            for c in seq.value if isinstance(seq, yaml.SequenceNode) else ():
                name = mget(c, "name")
                if isinstance(name, yaml.ScalarNode) and name.value == MAIN:
                    out.append((c, s))
        return out


def _word(text: str, where: Span, path: str) -> Word:
    from tpcheck.sources.positions import Located

    return Word(Located(text, (), where, path), where)


def _flag(flag: str, at: tuple[Any, Ctx], value: Any) -> list[Word]:
    """``flag`` placed on the node ``at`` and its value on ``value`` (a node of that file, or
    text placed on ``at`` for a template's default such as ``{{ or .Data 1 }}``)."""
    node, ctx = at
    where = ctx.span(node)
    out = [_word(flag, where, ctx.path)]
    if isinstance(value, yaml.ScalarNode):
        out.append(Word(ctx.locate(value), ctx.span(value)))
    elif value is not None:
        out.append(_word(str(value), where, ctx.path))
    return out


def _int(node: Any) -> int | None:
    return int_or_none(str(node.value)) if isinstance(node, yaml.ScalarNode) else None


class _Role:
    """One pool of the service: the decode/main pool (``spec``) or the prefill pool."""

    def __init__(self, layers: _Layers, prefix: tuple[str, ...], pd: bool) -> None:
        self.layers, self.prefix, self.pd = layers, prefix, pd
        self.label = "prefill" if prefix else ("decode" if pd else "main")

    def par(self, key: str) -> tuple[Any, Ctx]:
        node, src = self.layers.first(*self.prefix, "parallelism", key)
        return node, src.ctx

    def shape(self) -> str | None:
        """``single``, ``data`` or ``pipeline``: the well-known config the controller picks."""
        if self.layers.node(*self.prefix, "worker") is None:
            return "single"
        if (_int(self.par("data")[0]) or 0) > 0 or (_int(self.par("dataLocal")[0]) or 0) > 0:
            return "data"
        if (_int(self.par("pipeline")[0]) or 0) > 0:
            return "pipeline"
        return None  # a worker with neither: no well-known template applies

    def template_words(self, shape: str, at: tuple[Any, Ctx]) -> list[Word]:
        """The template's own flags for this pool's parallelism (module docstring)."""
        words: list[Word] = []
        expert = self.par("expert")
        if shape == "data" and str(getattr(expert[0], "value", "")).lower() == "true":
            words += _flag("--enable-expert-parallel", expert, None)
        tensor = self.par("tensor")
        if (_int(tensor[0]) or 0) > 0:
            words += _flag("--tensor-parallel-size", tensor, tensor[0])
        if shape == "data":
            for flag, key in (("--data-parallel-size", "data"),
                              ("--data-parallel-size-local", "dataLocal")):
                node = self.par(key)
                good = (_int(node[0]) or 0) > 0
                words += _flag(flag, node if good else at, node[0] if good else 1)
        if shape == "pipeline":
            node = self.par("pipeline")
            words += _flag("--pipeline-parallel-size", node, node[0])
            words += _flag("--nnodes", node, node[0])
        return words

    def group_size(self, shape: str) -> tuple[int, tuple[Any, Ctx]] | None:
        """Pods per replica of the worker's LeaderWorkerSet (``GetSize``)."""
        if shape == "data":
            data, local = self.par("data"), self.par("dataLocal")
            size = max(max(_int(data[0]) or 1, 1) // max(_int(local[0]) or 1, 1), 1)
            return size, data if data[0] is not None else local
        if shape == "pipeline":
            node = self.par("pipeline")
            return _int(node[0]) or 1, node
        return None


def read_llmisvc(doc: Any, ctx: Ctx, docs: list[Any]) -> list[Deployment]:
    """The launches of one LLMInferenceService (or of a config no service beside it names)."""
    layers = _Layers(doc, ctx, docs)
    own = layers.srcs[0]
    written = own.walker.run(doc)  # a main container with its own command, read as written
    kind = kind_of(doc) or SERVICE
    if kind == CONFIG and _name(doc) in _referenced(ctx.path, docs):
        return []  # read through the service that names it
    pd = layers.node("prefill") is not None
    roles = [_Role(layers, (), pd)] + ([_Role(layers, ("prefill",), pd)] if pd else [])
    made: list[Deployment] = []
    replaced: list[Any] = []
    for role in roles:
        d = _read_role(kind, role)
        if d is not None:
            made.append(d)
            replaced.extend(c for c, s in layers.containers(*role.prefix, "template")
                            if s is own)
    kept = [d for d in written if not any(_inside(d, c) for c in replaced)]
    return kept + made


def _inside(d: Deployment, node: Any) -> bool:
    return bool(node.start_mark.line < d.span.line <= node.end_mark.line + 1)


def _read_role(kind: str, role: _Role) -> Deployment | None:
    """The pool's launch: the template's words, VLLM_ADDITIONAL_ARGS, the container's args; or
    the command a config of its baseRefs writes."""
    layers = role.layers
    own = layers.srcs[0]
    shape = role.shape()
    mains = layers.containers(*role.prefix, "template")
    if shape is None or not mains:
        return None
    commanded = next(((c, s) for c, s in mains if mget(c, "command") is not None), None)
    if commanded is not None:
        return None if commanded[1] is own else _config_command(kind, role, commanded)
    at_node, at_src = mains[0]
    at = (mget(at_node, "name"), at_src.ctx)
    here = at_src.ctx.span(at[0])
    words = [_word("vllm", here, at_src.ctx.path), _word("serve", here, at_src.ctx.path)]
    uri, usrc = layers.first("model", "uri")
    name, nsrc = layers.first("model", "name")
    words += _flag(MOUNT, (uri, usrc.ctx) if uri is not None else at, None)[:1]
    if isinstance(name, yaml.ScalarNode):
        words += _flag("--served-model-name", (name, nsrc.ctx), name)
    words += role.template_words(shape, at)
    env, plain = _env(mains, own.ctx)
    words += _additional(mains, env)
    words += _args(mains, env)
    extra, spans, notes = _pod(role, mains)
    group = role.group_size(shape)
    if group is not None:
        node, gctx = group[1]
        extra["group_size"] = group[0]
        spans["group_size"] = gctx.span(node) if node is not None else here
    notes = [*notes, _note(layers.srcs[0].doc, kind, role, shape)]
    if shape == "single" and (_int(role.par("tensor")[0]) or 0) > 0:
        notes.append(SINGLE_TP_NOTE)
    api = mget(own.doc, "apiVersion")
    if shape == "single" and str(getattr(api, "value", "")).endswith("/v1alpha1"):
        notes.append(V1ALPHA1_NOTE)
    if layers.missing:
        notes.append(f"baseRefs {', '.join(layers.missing)}: not found beside this file, not "
                     "read (a config that writes the main container's command runs that instead)")
    d = deployment_from_words(own.ctx.path, words, Launch("vllm", 0, 2, True),
                              env=plain, extra=extra, extra_spans=spans, notes=notes)
    return replace(d, span=_launch_span(role, mains),
                   model_hints=(*d.model_hints, *_hints(layers)))


def _launch_span(role: _Role, mains: list[tuple[Any, _Src]]) -> Span:
    """The pool's main container in the service's file, else the service's spec."""
    own = role.layers.srcs[0]
    mine = next((c for c, s in mains if s is own), None)
    return own.ctx.span(mine if mine is not None else own.spec)


def _pod(role: _Role, mains: list[tuple[Any, _Src]]
         ) -> tuple[dict[str, Any], dict[str, Span], list[str]]:
    """GPUs (the nearest container that writes resources), node product, annotations and
    labels (the service's template and metadata), image and release."""
    layers = role.layers
    own = layers.srcs[0]
    anc = tuple(a for a in (own.doc, own.spec, mget(own.spec, "prefill") if role.prefix else None,
                            mpath(own.spec, *role.prefix, "template")) if a is not None)
    mine = next((c for c, s in mains if s is own), None)
    extra, spans, notes = own.walker.context(mine, first_keys(mine) if mine else {}, anc)
    res = next(((c, s) for c, s in mains if mget(c, "resources") is not None), None)
    if res is not None and res[1] is not own:
        res[1].walker._container_gpus(first_keys(res[0]), extra, spans)
    if role.pd:
        extra.setdefault("pd_role", role.label)
    image = next((mget(c, "image") for c, _ in mains if mget(c, "image") is not None), None)
    if isinstance(image, yaml.ScalarNode):
        from tpcheck.sources.yamlnodes import engine_version

        extra["image"] = str(image.value)
        extra["engine_version"] = engine_version(str(image.value), "vllm")
    return extra, spans, notes


def _note(doc: Any, kind: str, role: _Role, shape: str) -> str:
    template = {"single": "template", "data": "worker-data-parallel",
                "pipeline": "worker-pipeline-parallel"}[shape]
    if role.pd:
        template = f"{'prefill' if role.prefix else 'decode'}-{template}"
    return (f"KServe {kind} {_name(doc)} ({role.label}): vllm serve as KServe's "
            f"config-llm-{template} runs it, with VLLM_ADDITIONAL_ARGS and args")


def _env(mains: list[tuple[Any, _Src]], ctx: Ctx) -> tuple[LazyEnv, dict[str, str]]:
    """The main container's env merged by name, the nearest layer's winning, each value
    placed in its own file."""
    env = LazyEnv(ctx)
    plain: dict[str, str] = {}
    for c, s in reversed(mains):
        seq = mget(c, "env")
        if not isinstance(seq, yaml.SequenceNode):
            continue
        lazy, flat = s.walker._container_env({"env": seq}, {})
        for k in list(lazy):
            env[k] = lazy[k]
        plain.update(flat)
    return env, plain


def _additional(mains: list[tuple[Any, _Src]], env: LazyEnv) -> list[Word]:
    """VLLM_ADDITIONAL_ARGS's words (the nearest layer's) as ``eval`` splits them."""
    from tpcheck.sources.shell import Vars, tokenize

    for c, s in mains:
        seq = mget(c, "env")
        for item in reversed(seq.value) if isinstance(seq, yaml.SequenceNode) else ():
            n, v = mget(item, "name"), mget(item, "value")
            if isinstance(n, yaml.ScalarNode) and n.value == ADDITIONAL:
                if isinstance(v, yaml.ScalarNode) and v.value:
                    vars_ = Vars(k8s=env, arithmetic=False)
                    return [w for cmd in tokenize(s.ctx.locate(v), vars_) for w in cmd]
                return []
    return []


def _args(mains: list[tuple[Any, _Src]], env: LazyEnv) -> list[Word]:
    """The nearest layer's ``args`` (``$@`` of the template's script)."""
    from tpcheck.sources.words import k8s_word

    for c, s in mains:
        node = mget(c, "args")
        if isinstance(node, yaml.SequenceNode):
            return [k8s_word(s.ctx.locate(i), env, s.ctx.expansion) for i in node.value
                    if isinstance(i, yaml.ScalarNode)]
    return []


def _config_command(kind: str, role: _Role, commanded: tuple[Any, _Src]) -> Deployment | None:
    """A config of the baseRefs writes the main container's command: its launch, as read in
    the config's file, with the service's model and GPUs."""
    container, src = commanded
    got = [d for d in src.walker.run(src.doc) if _inside(d, container)]
    if not got:
        return None
    d = got[0]
    mains = role.layers.containers(*role.prefix, "template")
    extra, spans, _ = _pod(role, mains)
    kw = {k: v for k, v in extra.items()
          if k in ("gpus_requested", "gpu_product", "network_resource", "pd_role")}
    own = role.layers.srcs[0]
    where = os.path.relpath(src.ctx.path, os.path.dirname(own.ctx.path) or ".")
    note = (f"KServe {kind} {_name(own.doc)} ({role.label}): the command of "
            f"{CONFIG} {_name(src.doc)} ({where}) it names in baseRefs")
    return replace(d, **kw, spans={**d.spans, **{k: spans[k] for k in kw if k in spans}},
                   notes=(*d.notes, note), model_hints=(*d.model_hints, *_hints(role.layers)))


def _hints(layers: _Layers) -> list[ModelHint]:
    """``hf://org/name`` names a hub id; another URI (``pvc://``, ``s3://``) a folder whose name
    may spell it; ``spec.model.name`` is the name the model is served under."""
    out: list[ModelHint] = []
    uri, usrc = layers.first("model", "uri")
    name, nsrc = layers.first("model", "name")
    if isinstance(uri, yaml.ScalarNode) and str(uri.value).strip():
        text = str(uri.value).strip()
        repo = text[len("hf://"):].split(":", 1)[0].strip("/") if text.startswith(
            "hf://") else text
        if repo:
            out.append(ModelHint(repo, f"spec.model.uri `{text}` "
                                       f"(line {usrc.ctx.span(uri).line})"))
    if isinstance(name, yaml.ScalarNode) and str(name.value).strip():
        v = str(name.value).strip()
        out.append(ModelHint(v, f"spec.model.name `{v}` (line {nsrc.ctx.span(name).line})"))
    return out


# ---- the folder: configs baseRefs name, and the names services there use --------------------


def _docs(path: str) -> tuple[list[Any], Ctx] | None:
    from tpcheck.sources.files import decode_utf8_sig, read_capped
    from tpcheck.sources.positions import LineIndex
    from tpcheck.sources.yamlctx import LOADER

    try:
        text = decode_utf8_sig(read_capped(path, MAX_BYTES))
    except (OSError, UnicodeDecodeError):
        return None
    if "LLMInferenceService" not in text:
        return None
    try:
        docs = [d for d in yaml.compose_all(text, Loader=LOADER) if d is not None]
    except yaml.YAMLError:
        return None
    return docs, Ctx(path, LineIndex(text))


@lru_cache(maxsize=16)
def _index(folder: str, stamp: tuple[tuple[str, int, int], ...]
           ) -> tuple[tuple[tuple[str, str], ...], frozenset[tuple[str, str]]]:
    """((config name, file), ...) and {(file, name) a service names in baseRefs} of the
    folder's YAML files, composed once per folder state."""
    configs: list[tuple[str, str]] = []
    used: set[tuple[str, str]] = set()
    for name, _, _ in stamp:
        p = os.path.join(folder, name)
        got = _docs(p)
        for d in got[0] if got else ():
            if kind_of(d) == CONFIG:
                configs.append((_name(d), p))
            elif kind_of(d) == SERVICE:
                used.update((p, r) for r in _refs(d))
    return tuple(configs), frozenset(used)


def _folder_config(path: str, name: str) -> _Src | None:
    """The config ``name`` in another YAML file of ``path``'s folder."""
    folder = os.path.dirname(path)
    same = os.path.abspath(path)
    for cname, p in _index(folder, folder_stamp(folder, MAX_SCANNED))[0]:
        if cname != name or os.path.abspath(p) == same:
            continue
        got = _docs(p)
        if got is None:
            continue
        for d in got[0]:
            if kind_of(d) == CONFIG and _name(d) == name:
                return _Src(d, got[1])
    return None


def _referenced(path: str, docs: list[Any]) -> set[str]:
    """Config names a service in this file or its folder names in baseRefs."""
    out = {r for d in docs if kind_of(d) == SERVICE for r in _refs(d)}
    folder = os.path.dirname(path)
    same = os.path.abspath(path)
    beside = _index(folder, folder_stamp(folder, MAX_SCANNED))[1]
    out.update(r for p, r in beside if os.path.abspath(p) != same)
    return out
