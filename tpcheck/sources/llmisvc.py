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
  ``--tensor-parallel-size`` when ``parallelism.tensor`` is set;
- data parallel: ``--enable-expert-parallel`` when ``expert``, ``--data-parallel-size
  {{ or .Data 1 }}``, ``--data-parallel-size-local {{ or .DataLocal 1 }}``;
- pipeline parallel: ``--pipeline-parallel-size {{ or .Pipeline 1 }}`` and ``--nnodes`` the same;
- then the words of the ``VLLM_ADDITIONAL_ARGS`` env value (``eval``: shell quoting applies),
  then the container's ``args``.

A worker's LeaderWorkerSet has ``Parallelism.GetSize()`` pods (llm_inference_service_types_
func.go: data / dataLocal, at least 1; else pipeline). That launch is what tpcheck reads, each
value placed where the file writes it; a ``main`` container that writes its own ``command``
replaces the template's and is read as written (``kube.Walker``). ``baseRefs`` are merged from
configs in the same file (the nearest writer of a container key wins, env merged by name); one
elsewhere is named in a note, its fields not read. A config no service in its file names is
read as a service would run it.
"""

from __future__ import annotations

from tpcheck.record import replace
from tpcheck.sources.argv import Launch, deployment_from_words
from tpcheck.sources.base import Deployment, ModelHint, Span
from tpcheck.sources.kube_env import first_keys, int_or_none
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


class _Layers:
    """The spec and the same-file configs its baseRefs name, nearest (the spec) first."""

    def __init__(self, doc: Any, configs: dict[str, Any]) -> None:
        spec = mget(doc, "spec")
        self.specs: list[Any] = [spec] if isinstance(spec, yaml.MappingNode) else []
        self.missing: list[str] = []
        refs = mget(spec, "baseRefs")
        names = [str(n.value) for r in (refs.value if isinstance(refs, yaml.SequenceNode) else ())
                 if isinstance(n := mget(r, "name"), yaml.ScalarNode)]
        for name in reversed(names):  # a later ref overrides an earlier one
            cfg = configs.get(name)
            if cfg is not None and isinstance(mget(cfg, "spec"), yaml.MappingNode):
                self.specs.append(mget(cfg, "spec"))
            else:
                self.missing.append(name)

    def first(self, *keys: str) -> Any:
        """The nearest layer's node at ``keys``."""
        for s in self.specs:
            v = mpath(s, *keys)
            if v is not None:
                return v
        return None

    def containers(self, *keys: str) -> list[Any]:
        """The ``main`` containers at ``keys``/containers, nearest layer first."""
        out = []
        for s in self.specs:
            seq = mpath(s, *keys, "containers")
            for c in seq.value if isinstance(seq, yaml.SequenceNode) else ():
                name = mget(c, "name")
                if isinstance(name, yaml.ScalarNode) and name.value == MAIN:
                    out.append(c)
        return out


def _flag(flag: str, at: Any, value: Any, ctx: Ctx) -> list[Word]:
    """``flag`` placed on the key ``at`` and its value on ``value`` (a node, or text placed on
    ``at`` for a template's default such as ``{{ or .Data 1 }}``)."""
    where = ctx.span(at)
    out = [_word(flag, where, ctx)]
    if value is not None:
        if isinstance(value, yaml.ScalarNode):
            out.append(Word(ctx.locate(value), ctx.span(value)))
        else:
            out.append(_word(str(value), where, ctx))
    return out


def _word(text: str, where: Span, ctx: Ctx) -> Word:
    from tpcheck.sources.positions import Located

    return Word(Located(text, (), where, ctx.path), where)


def _int(node: Any) -> int | None:
    return int_or_none(str(node.value)) if isinstance(node, yaml.ScalarNode) else None


class _Role:
    """One pool of the service: the decode/main pool (``spec``) or the prefill pool."""

    def __init__(self, layers: _Layers, prefix: tuple[str, ...], pd: bool) -> None:
        self.layers, self.prefix, self.pd = layers, prefix, pd
        self.label = "prefill" if prefix else ("decode" if pd else "main")

    def par(self, key: str) -> Any:
        return self.layers.first(*self.prefix, "parallelism", key)

    def shape(self) -> str | None:
        """``single``, ``data`` or ``pipeline``: the well-known config the controller picks."""
        if self.layers.first(*self.prefix, "worker") is None:
            return "single"
        if (_int(self.par("data")) or 0) > 0 or (_int(self.par("dataLocal")) or 0) > 0:
            return "data"
        if (_int(self.par("pipeline")) or 0) > 0:
            return "pipeline"
        return None  # a worker with neither: no well-known template applies

    def template_words(self, shape: str, at: Any, ctx: Ctx) -> list[Word]:
        """The template's own flags for this pool's parallelism (module docstring)."""
        words: list[Word] = []
        if shape == "data" and str(getattr(self.par("expert"), "value", "")).lower() == "true":
            words += _flag("--enable-expert-parallel", self.par("expert"), None, ctx)
        tensor = self.par("tensor")
        if (_int(tensor) or 0) > 0:
            words += _flag("--tensor-parallel-size", tensor, tensor, ctx)
        for flag, key in (("--data-parallel-size", "data"),
                          ("--data-parallel-size-local", "dataLocal")):
            if shape == "data":
                node = self.par(key)
                good = (_int(node) or 0) > 0
                words += _flag(flag, node if good else at, node if good else 1, ctx)
        if shape == "pipeline":
            node = self.par("pipeline")
            words += _flag("--pipeline-parallel-size", node, node, ctx)
            words += _flag("--nnodes", node, node, ctx)
        return words

    def group_size(self, shape: str) -> tuple[int, Any] | None:
        """Pods per replica of the worker's LeaderWorkerSet (``GetSize``)."""
        if shape == "data":
            data, local = _int(self.par("data")), _int(self.par("dataLocal"))
            size = max(max(data or 1, 1) // max(local or 1, 1), 1)
            return size, self.par("data") or self.par("dataLocal")
        if shape == "pipeline":
            return _int(self.par("pipeline")) or 1, self.par("pipeline")
        return None


def same_file_configs(docs: list[Any]) -> dict[str, Any]:
    """The file's LLMInferenceServiceConfigs by name."""
    return {_name(d): d for d in docs if kind_of(d) == CONFIG}


def referenced(docs: list[Any]) -> set[str]:
    """Config names the file's services name in baseRefs."""
    out: set[str] = set()
    for d in docs:
        if kind_of(d) != SERVICE:
            continue
        refs = mpath(d, "spec", "baseRefs")
        for r in refs.value if isinstance(refs, yaml.SequenceNode) else ():
            n = mget(r, "name")
            if isinstance(n, yaml.ScalarNode):
                out.add(str(n.value))
    return out


def read_llmisvc(doc: Any, ctx: Ctx, docs: list[Any]) -> list[Deployment]:
    """The launches of one LLMInferenceService (or a config no service in the file names)."""
    from tpcheck.sources.kube import Walker

    walker = Walker(ctx)
    written = walker.run(doc)  # a main container with its own command, read as written
    kind = kind_of(doc)
    if kind == CONFIG and _name(doc) in referenced(docs):
        return []  # read through the service that names it
    layers = _Layers(doc, same_file_configs(docs))
    pd = layers.first("prefill") is not None
    roles = [_Role(layers, (), pd)] + ([_Role(layers, ("prefill",), pd)] if pd else [])
    made: list[Deployment] = []
    replaced: list[Any] = []
    for role in roles:
        d = _read_role(doc, kind or SERVICE, role, ctx, walker)
        if d is not None:
            made.append(d)
            replaced.extend(layers.containers(*role.prefix, "template"))
    kept = [d for d in written if not any(_inside(d, c) for c in replaced)]
    return kept + made


def _inside(d: Deployment, node: Any) -> bool:
    return bool(node.start_mark.line < d.span.line <= node.end_mark.line + 1)


def _read_role(doc: Any, kind: str, role: _Role, ctx: Ctx, walker: Any) -> Deployment | None:
    """The pool's launch: the template's words, VLLM_ADDITIONAL_ARGS, the container's args."""
    shape = role.shape()
    mains = role.layers.containers(*role.prefix, "template")
    if shape is None or not mains or any(mget(c, "command") is not None for c in mains):
        return None
    keys = _merged_keys(mains)
    k8s_env, plain_env = walker._container_env(keys, {})
    at = mget(mains[0], "name")
    words = [_word("vllm", ctx.span(at), ctx), _word("serve", ctx.span(at), ctx)]
    uri = role.layers.first("model", "uri")
    name = role.layers.first("model", "name")
    words.append(_word(MOUNT, ctx.span(uri if uri is not None else at), ctx))
    if isinstance(name, yaml.ScalarNode):
        words += _flag("--served-model-name", name, name, ctx)
    words += role.template_words(shape, at, ctx)
    words += _additional(keys, k8s_env, ctx)
    words += _args(keys, k8s_env, ctx)
    template = role.layers.first(*role.prefix, "template")
    anc = tuple(a for a in (doc, mget(doc, "spec"), *(
        [role.layers.first("prefill")] if role.prefix else []), template) if a is not None)
    extra, spans, notes = walker.context(mains[0], keys, anc)
    group = role.group_size(shape)
    if group is not None:
        extra["group_size"] = group[0]
        spans["group_size"] = ctx.span(group[1] if group[1] is not None else at)
    if role.pd:
        extra.setdefault("pd_role", role.label)
    image = keys.get("image")
    if isinstance(image, yaml.ScalarNode):
        from tpcheck.sources.yamlnodes import engine_version

        extra["image"] = str(image.value)
        extra["engine_version"] = engine_version(str(image.value), "vllm")
    notes = [*notes, _note(doc, kind, role, shape)]
    if role.layers.missing:
        notes.append(f"baseRefs {', '.join(role.layers.missing)}: not in this file, not read "
                     "(a config that writes the main container's command runs that instead)")
    d = deployment_from_words(ctx.path, words, Launch("vllm", 0, 2, True),
                              env=plain_env, extra=extra, extra_spans=spans, notes=notes)
    # the launch is the pool's main container (its words are spread over the spec)
    return replace(d, span=ctx.span(mains[0]),
                   model_hints=(*d.model_hints, *_hints(uri, name, ctx)))


def _note(doc: Any, kind: str, role: _Role, shape: str) -> str:
    template = {"single": "template", "data": "worker-data-parallel",
                "pipeline": "worker-pipeline-parallel"}[shape]
    if role.pd:
        template = f"{'prefill' if role.prefix else 'decode'}-{template}"
    return (f"KServe {kind} {_name(doc)} ({role.label}): vllm serve as KServe's "
            f"config-llm-{template} runs it, with VLLM_ADDITIONAL_ARGS and args")


def _merged_keys(mains: list[Any]) -> dict[str, Any]:
    """The main container's keys, the nearest layer's winning; env merged by name."""
    keys: dict[str, Any] = {}
    for c in reversed(mains):
        keys.update(first_keys(c))
    env: dict[str, Any] = {}
    for c in reversed(mains):
        seq = mget(c, "env")
        for item in seq.value if isinstance(seq, yaml.SequenceNode) else ():
            n = mget(item, "name")
            if isinstance(n, yaml.ScalarNode):
                env.pop(str(n.value), None)
                env[str(n.value)] = item
    if env:
        keys["env"] = yaml.SequenceNode("tag:yaml.org,2002:seq", list(env.values()))
    return keys


def _additional(keys: dict[str, Any], k8s_env: Any, ctx: Ctx) -> list[Word]:
    """VLLM_ADDITIONAL_ARGS's words as ``eval`` splits them (quotes removed)."""
    from tpcheck.sources.kube import _split_words_flat
    from tpcheck.sources.shell import Vars

    env = keys.get("env")
    for item in reversed(env.value) if isinstance(env, yaml.SequenceNode) else ():
        n, v = mget(item, "name"), mget(item, "value")
        if isinstance(n, yaml.ScalarNode) and n.value == ADDITIONAL:
            if isinstance(v, yaml.ScalarNode) and v.value:
                return _split_words_flat(ctx.locate(v), Vars(k8s=k8s_env, arithmetic=False))
            return []
    return []


def _args(keys: dict[str, Any], k8s_env: Any, ctx: Ctx) -> list[Word]:
    """The container's ``args`` (``$@`` of the template's script)."""
    from tpcheck.sources.words import k8s_word

    node = keys.get("args")
    if not isinstance(node, yaml.SequenceNode):
        return []
    return [k8s_word(ctx.locate(i), k8s_env, ctx.expansion) for i in node.value
            if isinstance(i, yaml.ScalarNode)]


def _hints(uri: Any, name: Any, ctx: Ctx) -> list[ModelHint]:
    """``hf://org/name`` names a hub id; another URI (``pvc://``, ``s3://``) a folder whose name
    may spell it; ``spec.model.name`` is the name the model is served under."""
    out: list[ModelHint] = []
    if isinstance(uri, yaml.ScalarNode) and str(uri.value).strip():
        text = str(uri.value).strip()
        repo = text[len("hf://"):].split(":", 1)[0].strip("/") if text.startswith(
            "hf://") else text
        if repo:
            out.append(ModelHint(repo, f"spec.model.uri `{text}` (line {ctx.span(uri).line})"))
    if isinstance(name, yaml.ScalarNode) and str(name.value).strip():
        v = str(name.value).strip()
        out.append(ModelHint(v, f"spec.model.name `{v}` (line {ctx.span(name).line})"))
    return out
