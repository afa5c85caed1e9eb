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

from tpcheck.record import replace
from tpcheck.sources import kustomize as kz
from tpcheck.sources.base import MAX_BYTES, RUNTIME_NOTE, Deployment, ReadResult
from tpcheck.sources.pyyaml import yaml

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


RUNTIME_KINDS = frozenset({"ServingRuntime", "ClusterServingRuntime"})
ISVC_KIND = "InferenceService"
CONTAINER = "kserve-container"  # constants.InferenceServiceContainerName in KServe
MAX_SCANNED = 200  # YAML files of the folder looked at for the other half of a pair
__all__ = ["RUNTIME_NOTE", "pair_kserve"]


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


def _formats(runtime: Any) -> set[str]:
    """The model formats a runtime auto-selects (``supportedModelFormats`` with autoSelect)."""

    out: set[str] = set()
    formats = _spec(runtime, "spec", "supportedModelFormats")
    for f in formats.value if isinstance(formats, yaml.SequenceNode) else ():
        name = kz.scalar_text(kz.get_key(f, "name"))
        auto = kz.scalar_text(kz.get_key(f, "autoSelect"))
        if name and auto is not None and auto.lower() == "true":
            out.add(name.lower())
    return out


def _model(isvc: Any) -> Any:

    if kz.identity(isvc)[0] != ISVC_KIND:
        return None
    model = _spec(isvc, "spec", "predictor", "model")
    return model if isinstance(model, yaml.MappingNode) else None


def _runtime_for(model: Any, runtimes: list[tuple[str, Any, str]]) -> tuple[str, Any, str] | None:
    """The runtime an InferenceService's model runs on: the one ``runtime:`` names, else the
    one runtime that auto-selects its ``modelFormat`` (KServe refuses several)."""

    named = kz.scalar_text(kz.get_key(model, "runtime"))
    if named:
        hits = [r for r in runtimes if r[0] == named]
    else:
        fmt = (kz.scalar_text(kz.get_key(kz.get_key(model, "modelFormat"), "name")) or "").lower()
        hits = [r for r in runtimes if fmt and fmt in _formats(r[1])]
    return hits[0] if len(hits) == 1 or (named and hits) else None


def _inside(d: Deployment, doc: Any, path: str) -> bool:
    return d.span.path == path and doc.start_mark.line < d.span.line <= doc.end_mark.line + 1


def _folder_docs(path: str, files: kz.Files) -> list[tuple[str, Any]]:
    """(file, document) for the other YAML files of ``path``'s folder that hold KServe kinds."""
    from tpcheck.sources.files import read_capped

    folder = os.path.dirname(path)
    try:
        names = sorted(os.listdir(folder or "."))[:MAX_SCANNED]
    except OSError:
        return []
    out: list[tuple[str, Any]] = []
    here = os.path.abspath(path)
    for n in names:
        p = os.path.join(folder, n)  # as the run names the folder, so findings say it so
        if (not n.endswith((".yaml", ".yml")) or os.path.abspath(p) == here
                or kz.is_kustomization(n) or not os.path.isfile(p)):
            continue
        try:
            if not _kinds(read_capped(p, MAX_BYTES).decode("utf-8-sig")):
                continue  # cheaper than composing every file beside this one
            out.extend((p, d) for d in files.docs(p, (p, None)))
        except (OSError, UnicodeDecodeError, kz.KustomizeError):
            continue
    return out + _kustomized(folder, files)


def _kustomized(folder: str, files: kz.Files) -> list[tuple[str, Any]]:
    """(file, object) for what the folder's kustomization builds, wherever its resources live
    (a runtime kept in ``../runtimes``): the other half of a pair may come from there."""
    kfile = next((p for n in kz.NAMES if os.path.isfile(p := os.path.join(folder, n))), None)
    if kfile is None:
        return []
    try:
        objects = kz.build(kfile, files)
    except (kz.KustomizeError, RecursionError):
        return []
    out: list[tuple[str, Any]] = []
    for o in objects:
        ctx = files.ctx_of.get(id(o))
        if ctx is not None and (_runtime_name(o) is not None or _model(o) is not None):
            out.append((ctx.path, o))
    return out


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


def _read_pairs(path: str, pairs: list[tuple[Any, Any, str, str]], files: kz.Files
                ) -> list[list[Deployment]]:
    """The launches of each (InferenceService, runtime) pair, read as one Pod."""
    from tpcheck.sources.kube import Walker
    from tpcheck.sources.positions import LineIndex
    from tpcheck.sources.yamlctx import LOADER

    objects = [_merged(i, _model(i), r, files) for i, r, _, _ in pairs]
    written = yaml.serialize_all(objects, Dumper=yaml.SafeDumper)
    found: list[list[Deployment]] = []
    for (isvc, _, rname, rfile), w, r in zip(
            pairs, objects, yaml.compose_all(written, Loader=LOADER), strict=True):
        origin: dict[int, Any] = {}
        kz.pair_nodes(w, r, files, origin)
        ctx = kz.MergedCtx(path, LineIndex(written), origin, files.synthetic)
        where = "" if rfile == path else f" ({os.path.relpath(rfile, os.path.dirname(path))})"
        note = (f"KServe InferenceService {kz.identity(isvc)[1]} on ServingRuntime {rname}{where}: "
                "the runtime's container with the InferenceService's args appended")
        found.append([replace(d, path=d.span.path, span=kz.one_file(d.span),
                              notes=(*d.notes, note)) for d in Walker(ctx).run(r)])
    return found


def pair_kserve(path: str, text: str, result: ReadResult) -> ReadResult:
    """``result`` (a YAML file's launches) with each InferenceService read on its runtime and
    each runtime read through the InferenceServices beside it, or noted when none uses it."""
    if not text or not _kinds(text) or result.errors:
        return result

    files = kz.Files()
    files.given(path, text)
    try:
        docs = [(path, d) for d in files.docs(path, (path, None))]
    except kz.KustomizeError:
        return result
    runtimes_here = [(n, d, p) for p, d in docs if (n := _runtime_name(d)) is not None]
    isvcs_here = [d for _, d in docs if _model(d) is not None]
    if not runtimes_here and not isvcs_here:
        return result
    beside = _folder_docs(path, files)
    # by name: a runtime the folder's kustomization patches is the one it builds (listed last)
    named = {n: (n, d, p) for p, d in [(p, d) for _, d, p in runtimes_here] + beside
             if (n := _runtime_name(d)) is not None}
    runtimes = list(named.values())
    pairs: list[tuple[Any, Any, str, str]] = []
    for isvc in isvcs_here:
        hit = _runtime_for(_model(isvc), runtimes)
        if hit is not None:
            pairs.append((isvc, hit[1], hit[0], hit[2]))
    try:
        read = _read_pairs(path, pairs, files) if pairs else []
    except (yaml.YAMLError, kz.KustomizeError):
        return result
    users = list({id(d): d for _, d in docs + beside if _model(d) is not None}.values())
    used = {hit[0] for u in users if (hit := _runtime_for(_model(u), runtimes)) is not None}
    # a pair with no engine launch (a runtime of another server) leaves the ISVC as it read
    drop = [isvc for (isvc, _, _, _), got in zip(pairs, read, strict=True) if got]
    drop += [d for n, d, _ in runtimes_here if n in used]
    alone = [d for n, d, _ in runtimes_here if n not in used]
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
