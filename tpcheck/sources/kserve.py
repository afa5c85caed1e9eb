"""KServe: an ``InferenceService`` read together with the ``ServingRuntime`` it runs on.

A ServingRuntime is a pod template (image, command, the engine's fixed args) whose model is
mounted at run time (``--model=/mnt/models``); the InferenceService names the model
(``storageUri``), the runtime (``runtime:``, or a ``modelFormat`` the runtime auto-selects) and
its own args and resources. KServe builds the predictor's container the way
``MergeRuntimeContainers`` (kserve pkg/utils/utils.go) does: the InferenceService's container
fields strategic-merged over the runtime's ``kserve-container``, then ``args`` concatenated,
the runtime's first. That container is what tpcheck reads, with each value placed in the file
that wrote it.

Pairs are looked for in the same file and among the YAML files of the same folder (a
kustomization reads its resources through ``kustomize.read_kustomization``). A runtime that an
InferenceService beside it uses is read through that InferenceService, not alone; a runtime no
InferenceService there uses is still read (its args are checked), and carries
:data:`RUNTIME_NOTE`, on which TP000 stays silent: its model is not its own to name.
"""

from __future__ import annotations

import os
from functools import lru_cache

from tpcheck.record import record, replace
from tpcheck.sources import kustomize as kz
from tpcheck.sources.base import MAX_BYTES, RUNTIME_NOTE, Deployment, ReadResult
from tpcheck.sources.files import folder_stamp
from tpcheck.sources.pyyaml import yaml

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


RUNTIME_KINDS = frozenset({"ServingRuntime", "ClusterServingRuntime"})
ISVC_KIND = "InferenceService"
CONTAINER = "kserve-container"  # constants.InferenceServiceContainerName in KServe
MAX_SCANNED = 200  # YAML files of the folder looked at for the other half of a pair
__all__ = ["RUNTIME_NOTE", "pair_kserve"]


@record
class Runtime:
    """A ServingRuntime as the pairing needs it: where it is, and ``node`` once composed here."""

    name: str
    formats: frozenset[str]
    path: str
    via_kustomization: bool = False
    node: Any = None


@record
class Use:
    """How an InferenceService picks its runtime: by ``runtime:`` name, else by format."""

    named: str | None
    fmt: str


def _kinds(text: str) -> bool:
    return "ServingRuntime" in text or "kind: InferenceService" in text


def _spec(doc: Any, *keys: str) -> Any:
    node = doc
    for k in keys:
        node = kz.get_key(node, k)
    return node


def _runtime_name(doc: Any) -> str | None:
    """A ServingRuntime's name when it has containers (an OME or engineConfig runtime has not)."""
    kind, name = kz.identity(doc)
    containers = _spec(doc, "spec", "containers") if kind in RUNTIME_KINDS else None
    if isinstance(containers, yaml.SequenceNode) and any(
            isinstance(c, yaml.MappingNode) for c in containers.value):
        return name
    return None


def _formats(runtime: Any) -> frozenset[str]:
    """The model formats a runtime auto-selects (``supportedModelFormats`` with autoSelect)."""
    out: set[str] = set()
    formats = _spec(runtime, "spec", "supportedModelFormats")
    for f in formats.value if isinstance(formats, yaml.SequenceNode) else ():
        name = kz.scalar_text(kz.get_key(f, "name"))
        auto = kz.scalar_text(kz.get_key(f, "autoSelect"))
        if name and auto is not None and auto.lower() == "true":
            out.add(name.lower())
    return frozenset(out)


def _model(isvc: Any) -> Any:
    if kz.identity(isvc)[0] != ISVC_KIND:
        return None
    model = _spec(isvc, "spec", "predictor", "model")
    return model if isinstance(model, yaml.MappingNode) else None


def _use(model: Any) -> Use:
    fmt = kz.scalar_text(kz.get_key(kz.get_key(model, "modelFormat"), "name")) or ""
    return Use(kz.scalar_text(kz.get_key(model, "runtime")) or None, fmt.lower())


def _runtime(doc: Any, path: str, via: bool = False) -> Runtime | None:
    name = _runtime_name(doc)
    return None if name is None else Runtime(name, _formats(doc), path, via, doc)


def _runtime_for(use: Use, runtimes: list[Runtime]) -> Runtime | None:
    """The runtime an InferenceService's model runs on: the one ``runtime:`` names, else the
    one runtime that auto-selects its ``modelFormat`` (KServe refuses several)."""
    if use.named:
        return next((r for r in runtimes if r.name == use.named), None)
    hits = [r for r in runtimes if use.fmt and use.fmt in r.formats]
    return hits[0] if len(hits) == 1 else None


def _inside(d: Deployment, doc: Any, path: str) -> bool:
    return d.span.path == path and doc.start_mark.line < d.span.line <= doc.end_mark.line + 1


@lru_cache(maxsize=16)
def _index(folder: str, stamp: tuple[tuple[str, int, int], ...]
           ) -> tuple[tuple[Runtime, ...], tuple[tuple[str, Use], ...]]:
    """(runtimes, (file, use) of each InferenceService) in the folder's YAML files and what its
    kustomization builds; composed once per folder state, not once per file read in it (a
    folder of 200 InferenceServices would compose 40,000 files)."""
    from tpcheck.sources.files import decode_utf8_sig, read_capped

    files = kz.Files()
    runtimes: list[Runtime] = []
    uses: list[tuple[str, Use]] = []
    for name, _, _ in stamp:
        p = os.path.join(folder, name)  # as the run names the folder, so findings say it so
        if name in kz.NAMES:
            try:
                objects = kz.build(p, files)
            except (kz.KustomizeError, RecursionError):
                continue
            for o in objects:
                ctx = files.ctx_of.get(id(o))
                if ctx is None:
                    continue
                r = _runtime(o, ctx.path, via=True)
                if r is not None:
                    runtimes.append(replace(r, node=None))
                elif _model(o) is not None:
                    uses.append((ctx.path, _use(_model(o))))
            continue
        try:
            if not _kinds(decode_utf8_sig(read_capped(p, MAX_BYTES))):
                continue  # cheaper than composing every file beside this one
            docs = files.docs(p, (p, None))
        except (OSError, UnicodeDecodeError, kz.KustomizeError):
            continue
        for d in docs:
            r = _runtime(d, p)
            if r is not None:
                runtimes.append(replace(r, node=None))
            elif _model(d) is not None:
                uses.append((p, _use(_model(d))))
    return tuple(runtimes), tuple(uses)


def _load(r: Runtime, folder: str, files: kz.Files) -> Any:
    """The runtime's node, composed into this read's ``files`` (built through the folder's
    kustomization when that is where it came from, so its patches apply)."""
    if r.via_kustomization:
        kfile = next((p for n in kz.NAMES if os.path.isfile(p := os.path.join(folder, n))), None)
        docs = kz.build(kfile, files) if kfile is not None else []
    else:
        docs = files.docs(r.path, (r.path, None))
    return next((d for d in docs if _runtime_name(d) == r.name), None)


def _merged(isvc: Any, model: Any, runtime: Any, files: kz.Files) -> Any:
    """A Pod holding the container KServe builds for ``isvc`` on ``runtime``."""
    containers = [c for c in _spec(runtime, "spec", "containers").value
                  if isinstance(c, yaml.MappingNode)]  # one at least (_runtime_name)
    base = next((c for c in containers if kz.scalar_text(kz.get_key(c, "name")) == CONTAINER),
                containers[0])
    container = kz.merge(base, model, files)
    r_args, i_args = kz.get_key(base, "args"), kz.get_key(model, "args")
    if isinstance(r_args, yaml.SequenceNode) and isinstance(i_args, yaml.SequenceNode):
        args = files.adopt(yaml.SequenceNode(r_args.tag, [*r_args.value, *i_args.value],
                                             r_args.start_mark, r_args.end_mark), r_args)
        container.value = [(k, args if kz.scalar_text(k) == "args" else v)
                           for k, v in container.value]
    pod_spec: list[tuple[Any, Any]] = []
    for key in ("nodeSelector", "tolerations"):
        value = (kz.get_key(_spec(isvc, "spec", "predictor"), key)
                 or kz.get_key(_spec(runtime, "spec"), key))
        if value is not None:
            pod_spec.append((_key(key, files, isvc), value))
    seq = files.adopt(yaml.SequenceNode("tag:yaml.org,2002:seq", [container]), runtime)
    pod_spec.insert(0, (_key("containers", files, isvc), seq))
    spec = files.adopt(yaml.MappingNode("tag:yaml.org,2002:map", pod_spec), isvc)
    return files.adopt(yaml.MappingNode("tag:yaml.org,2002:map", [
        (_key("kind", files, isvc), _key("Pod", files, isvc)),
        (_key("spec", files, isvc), spec)]), isvc)


def _key(text: str, files: kz.Files, like: Any) -> Any:
    return files.adopt(yaml.ScalarNode("tag:yaml.org,2002:str", text), like)


def _read_pairs(path: str, pairs: list[tuple[Any, Runtime]], files: kz.Files
                ) -> list[list[Deployment]]:
    """The launches of each (InferenceService, runtime) pair, read as one Pod."""
    from tpcheck.sources.kube import Walker
    from tpcheck.sources.positions import LineIndex
    from tpcheck.sources.yamlctx import LOADER

    objects = [_merged(i, _model(i), r.node, files) for i, r in pairs]
    written = yaml.serialize_all(objects, Dumper=yaml.SafeDumper)
    found: list[list[Deployment]] = []
    for (isvc, rt), w, r in zip(pairs, objects, yaml.compose_all(written, Loader=LOADER),
                                strict=True):
        origin: dict[int, Any] = {}
        kz.pair_nodes(w, r, files, origin)
        ctx = kz.MergedCtx(path, LineIndex(written), origin, files.synthetic)
        where = ("" if rt.path == path
                 else f" ({os.path.relpath(rt.path, os.path.dirname(path) or '.')})")
        note = (f"KServe InferenceService {kz.identity(isvc)[1]} on ServingRuntime "
                f"{rt.name}{where}: the runtime's container with the InferenceService's args "
                "appended")
        found.append([replace(d, path=d.span.path, span=kz.one_file(d.span),
                              notes=(*d.notes, note)) for d in Walker(ctx).run(r)])
    return found


def pair_kserve(path: str, text: str, result: ReadResult,
                docs: list[Any] | None = None) -> ReadResult:
    """``result`` (a YAML file's launches) with each InferenceService read on its runtime and
    each runtime read through the InferenceServices beside it, or noted when none uses it.
    ``docs``: the file's documents as its reader composed them, else composed here."""
    if not text or not _kinds(text) or result.errors:
        return result
    files = kz.Files()
    files.given(path, text, docs)
    try:
        docs = files.docs(path, (path, None))
    except kz.KustomizeError:
        return result
    here = [r for d in docs if (r := _runtime(d, path)) is not None]
    isvcs = [d for d in docs if _model(d) is not None]
    if not here and not isvcs:
        return result
    folder = os.path.dirname(path)
    stamp = folder_stamp(folder, MAX_SCANNED, frozenset(kz.NAMES))
    runtimes_beside, uses_beside = _index(folder, stamp)
    same = os.path.abspath(path)
    runtimes = _known_runtimes(here, runtimes_beside, same)
    try:
        pairs = _pairs(isvcs, runtimes, folder, files)
        read = _read_pairs(path, pairs, files) if pairs else []
    except (yaml.YAMLError, kz.KustomizeError, RecursionError):
        return result
    uses = [_use(_model(d)) for d in isvcs] + [u for p, u in uses_beside
                                               if os.path.abspath(p) != same]
    used = {hit.name for u in uses if (hit := _runtime_for(u, runtimes)) is not None}
    drop, alone = _replaced(pairs, read, here, used)
    return _kept_launches(result, path, read, drop=drop, alone=alone)


def _replaced(pairs: list[tuple[Any, Runtime]], read: list[list[Deployment]],
              here: list[Runtime], used: set[str]) -> tuple[list[Any], list[Any]]:
    """(the documents whose own launches the pairs replace, this file's runtimes nothing
    uses)."""
    # a pair with no engine launch (a runtime of another server) leaves the ISVC as it read
    drop = [isvc for (isvc, _), got in zip(pairs, read, strict=True) if got]
    drop += [r.node for r in here if r.name in used]
    alone = [r.node for r in here if r.name not in used]
    return drop, alone


def _known_runtimes(here: list[Runtime], beside: tuple[Runtime, ...], same: str) -> list[Runtime]:
    """The runtimes an InferenceService may name, by name: this file's text wins over its copy
    on disk; a runtime the folder's kustomization builds (patched) over the file it comes from."""
    named = {r.name: r for r in beside if os.path.abspath(r.path) != same}
    named.update({r.name: r for r in here})
    return list(named.values())


def _pairs(isvcs: list[Any], runtimes: list[Runtime], folder: str,
           files: kz.Files) -> list[tuple[Any, Runtime]]:
    """Each InferenceService with the runtime it names, loaded; those whose runtime is unknown
    or unreadable are left out."""
    pairs: list[tuple[Any, Runtime]] = []
    for isvc in isvcs:
        hit = _runtime_for(_use(_model(isvc)), runtimes)
        if hit is not None and hit.node is None:
            hit = replace(hit, node=_load(hit, folder, files))
        if hit is not None and hit.node is not None:
            pairs.append((isvc, hit))
    return pairs


def _kept_launches(result: ReadResult, path: str, read: list[list[Deployment]], *,
            drop: list[Any], alone: list[Any]) -> ReadResult:
    """The file's launches without those the pairs replace, a note on each runtime nothing
    uses, and the paired launches, in file order (this file's first)."""
    kept: list[Deployment] = []
    for d in result.deployments:
        if any(_inside(d, doc, path) for doc in drop):
            continue
        if any(_inside(d, doc, path) for doc in alone):
            d = replace(d, notes=(*d.notes, RUNTIME_NOTE))
        kept.append(d)
    kept.extend(d for got in read for d in got)
    kept.sort(key=lambda d: (d.span.path != path, d.span.line))
    return ReadResult(result.path, tuple(kept), result.errors, result.text, result.skipped,
                      notes=result.notes)
