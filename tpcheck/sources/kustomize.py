"""Kustomize overlays: a ``kustomization.yaml`` read as ``kustomize build`` would assemble it.

Kept small and without running kustomize: ``resources`` (files, and folders holding their own
kustomization), strategic-merge patches (``patchesStrategicMerge``, ``patches`` with a path or
an inline patch, matched by kind and name or by ``target``), JSON 6902 patches (add, replace,
remove), ``images`` tag overrides, and ``configMapGenerator`` literals for the containers that
take them with ``envFrom``. The merged objects are then read by the Kubernetes
reader, with every value placed in the file that supplied it: the merged tree keeps the
original YAML nodes, it is written out once and composed again so the reader sees one
document, and each composed node is mapped back to the node it was written from. A workload
the overlay leaves unchanged is read through it when its file lies outside the
kustomization's folder (``resources: [../../base]``); a file in that folder or below is read
on its own by any folder run that reaches the kustomization, so it is not read twice.

Strategic merge follows Kubernetes' merge keys for the lists an engine launch lives in
(containers and env by ``name``, volumeMounts by ``mountPath``, ports by ``containerPort``);
other lists (``args``, ``command``) are replaced, as kustomize does. A patch file found alone,
with no kustomization naming it, is read as it is; when it has the look of a patch (a workload
whose containers name no image) and a parent folder holds a workload of that kind and name, its
deployments carry a note naming that base (TP000 says it).
"""

from __future__ import annotations

import os
from functools import lru_cache

from tpcheck.record import replace
from tpcheck.sources.base import MAX_BYTES, PATCH_NOTE, Deployment, ReadResult, SourceError, Span
from tpcheck.sources.files import NAMES, given_paths, is_kustomization, kustomization_beside
from tpcheck.sources.kustomize_gen import env_from, generated_env
from tpcheck.sources.kustomize_nodes import (
    MAP,
    SEQ,
    Files,
    KustomizeError,
    error_at,
    get_key,
    identity,
    is_null,
    placed,
    scalar_text,
    seq_items,
)
from tpcheck.sources.kustomize_patch import images, merge, patch_one, patches
from tpcheck.sources.positions import LineIndex, Located
from tpcheck.sources.pyyaml import yaml
from tpcheck.sources.yamlctx import LOADER, Ctx

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

WORKLOADS = frozenset({"Deployment", "StatefulSet", "LeaderWorkerSet", "DaemonSet", "Job",
                       "Pod"})
OVERLAY_NOTE = "as kustomize builds"
LIST_FIELDS = ("resources", "bases", "patches", "patchesStrategicMerge", "patchesJson6902",
               "images", "configMapGenerator", "secretGenerator")
MAX_DEPTH = 8  # kustomizations including kustomizations: a cycle or a deep chain stops here
MAX_SCANNED = 200  # files per parent folder looked at for a lone patch's base

# ---- the kustomization -----------------------------------------------------------------------
def build(path: str, files: Files, depth: int = 0, chain: tuple[str, ...] = ()) -> list[Any]:
    """The objects ``kustomize build`` would emit for the kustomization at ``path``; ``chain``
    holds the kustomizations being built around it, so a cycle is named as one."""
    chain = (*chain, os.path.realpath(path))
    if depth > MAX_DEPTH:
        raise KustomizeError(path, 1, 1, f"kustomizations nest more than {MAX_DEPTH} deep")
    folder = os.path.dirname(path) or "."
    (kz, *_) = files.docs(path, (path, None)) or [None]
    if kz is None:
        return []
    if not isinstance(kz, MAP):  # kustomize: "json: cannot unmarshal array into Kustomization"
        raise placed(files, kz, "a kustomization must be a mapping of fields")
    for key in LIST_FIELDS:  # `resources: app.yaml` read as nothing would hide the whole app
        node = get_key(kz, key)
        if node is not None and not isinstance(node, SEQ) and not is_null(node):
            raise placed(files, node, f"{key} must be a list")
    ctx = files.ctx_of[id(kz)]
    objects: list[Any] = []
    for entry in seq_items(get_key(kz, "resources")) + seq_items(get_key(kz, "bases")):
        ref = scalar_text(entry)
        if ref is None:
            continue
        if "://" in ref or ref.startswith(("github.com/", "git@", "gitlab.com/",
                                           "bitbucket.org/")):
            files.remote.append((ref, path, entry.start_mark.line + 1))
            continue  # a remote base: not fetched (tpcheck reads no network)
        target = os.path.normpath(os.path.join(folder, ref))
        if os.path.isdir(target):
            inner = next((os.path.join(target, n) for n in NAMES
                          if os.path.isfile(os.path.join(target, n))), None)
            if inner is None:
                raise error_at((path, entry), f"{ref}: a folder with no kustomization.yaml")
            if os.path.realpath(inner) in chain:  # kustomize refuses it too ("cycle detected")
                raise error_at((path, entry), f"{ref}: leads back to a kustomization already "
                             "being built (a cycle)")
            objects.extend(build(inner, files, depth + 1, chain))
        else:
            objects.extend(files.docs(target, (path, entry)))
    for patch, target, _ in patches(kz, folder, files, path):
        objects = [patch_one(o, patch, target, files) for o in objects]
    generated = generated_env(kz, folder, files, path)
    if generated:
        objects = [env_from(o, generated, files) for o in objects]
    overrides = [(e, ctx) for e in seq_items(get_key(kz, "images")) if isinstance(e, MAP)]
    return [images(o, overrides, files) for o in objects]


# ---- reading ---------------------------------------------------------------------------------
class MergedCtx(Ctx):
    """Positions for the composed text of the merged objects: each node is placed where the
    node it was written from sits, in that node's own file."""

    def __init__(self, path: str, index: LineIndex, origin: dict[int, tuple[Any, Ctx]],
                 synthetic: set[int]) -> None:
        super().__init__(path, index)
        self.origin = origin
        self.synthetic = synthetic

    def locate(self, node: Any) -> Located:
        hit = self.origin.get(id(node))
        if hit is None:
            return super().locate(node)
        orig, ctx = hit
        if id(orig) in self.synthetic:  # an image override: the kustomization entry's span
            return Located(node.value, (), ctx.span(orig), ctx.path)
        return ctx.locate(orig)

    def span(self, node: Any) -> Span:
        hit = self.origin.get(id(node))
        if hit is None:
            return super().span(node)
        orig, ctx = hit
        return ctx.span(orig)

    def inner(self, loc: Located) -> Ctx:
        return Ctx(loc.path, LineIndex(loc.value), loc)


def _pair(written: Any, read: Any, files: Files, origin: dict[int, tuple[Any, Ctx]]) -> None:
    """Map each composed node to the merged node it was written from (same shape)."""
    stack = [(written, read)]
    while stack:
        w, r = stack.pop()
        if id(r) in origin:
            continue
        ctx = files.ctx_of.get(id(w))
        if ctx is not None:
            origin[id(r)] = (w, ctx)
        if isinstance(w, MAP) and isinstance(r, MAP):
            for (wk, wv), (rk, rv) in zip(w.value, r.value, strict=False):
                stack.append((wk, rk))
                stack.append((wv, rv))
        elif isinstance(w, SEQ) and isinstance(r, SEQ):
            stack.extend(zip(w.value, r.value, strict=False))


def _one_file(span: Span) -> Span:
    """A launch whose words come from two files (the base's command, the patch's args) ends
    in the other file: keep its start, in the file it names."""
    if (span.end_line, span.end_column) <= (span.line, span.column):
        return Span(span.path, span.line, span.column, span.line, span.column + 1)
    return span


def read_kustomization(path: str, text: str) -> ReadResult:
    """The workloads of ``kustomize build`` on this kustomization, with their positions."""
    from tpcheck.sources.kube import Walker

    files = Files()
    files.given(path, text)
    try:
        # the workloads a patch or an image override changed, and those it takes unchanged
        # from outside its own folder (``resources: [../../base]``); a file in its folder or
        # below is read on its own by any folder run that reaches this kustomization
        objects = [o for o in build(path, files) if identity(o)[0] in WORKLOADS]
        objects = [o for o in objects if not _read_alone(files.file_of(o), path)]
    except KustomizeError as e:
        return ReadResult(path, (), (e.error,), text)
    except RecursionError:
        return ReadResult(path, (), (SourceError(path, 1, 1, "nesting too deep to read"),),
                          text)
    notes = tuple(SourceError(f, line, 1, f"remote base {ref} not fetched: its workloads are "
                              "not checked; the overlay's patches are read as written")
                  for ref, f, line in files.remote)
    remote_patches = _remote_patches(path, files) if files.remote else []
    if not objects and not remote_patches:
        return ReadResult(path, (), (), text, notes=notes)
    written = yaml.serialize_all(objects, Dumper=yaml.SafeDumper)
    found: list[Deployment] = []
    for w, r in zip(objects, yaml.compose_all(written, Loader=LOADER), strict=True):
        origin: dict[int, tuple[Any, Ctx]] = {}
        _pair(w, r, files, origin)
        ctx = MergedCtx(path, LineIndex(written), origin, files.synthetic)
        # each launch is where its container is written (the base, or the patch that replaced
        # it), and says which overlay it was read through
        found.extend(replace(d, path=d.span.path, span=_one_file(d.span),
                             notes=(*d.notes, f"{OVERLAY_NOTE} {path}"))
                     for d in Walker(ctx).run(r))
    found.extend(remote_patches)
    return ReadResult(path, tuple(found), (), text, notes=notes)


def _read_alone(file: str | None, kustomization: str) -> bool:
    """Whether a document the build takes unchanged from ``file`` is read in that file by the
    run: a file in the kustomization's folder or below, when the run was given that file or a
    folder holding it (always, for a reader called on its own)."""
    if file is None:
        return False  # a patch or an override changed it: only the overlay has it
    folder = os.path.dirname(os.path.abspath(kustomization))
    a = os.path.abspath(file)
    if not a.startswith(folder + os.sep):
        return False
    given = given_paths()
    if given is None:
        return True
    files, dirs = given
    return a in files or any(a.startswith(d + os.sep) for d in dirs)


def _remote_patches(path: str, files: Files) -> list[Deployment]:
    """The launches written in the patches of an overlay whose base is remote: a patch that
    names a workload's containers with their args is read as it is (its base unseen)."""
    from tpcheck.sources.kube import Walker

    (kz, *_) = files.docs(path, (path, None)) or [None]
    if not isinstance(kz, MAP):
        return []
    found: list[Deployment] = []
    folder = os.path.dirname(path) or "."
    for doc, _, _ in patches(kz, folder, files, path):
        if identity(doc)[0] not in WORKLOADS:
            continue
        ctx = files.ctx_of.get(id(doc))
        if ctx is None:
            continue
        found.extend(replace(d, notes=(*d.notes, f"a patch of a remote base, read through "
                                                 f"{path}"))
                     for d in Walker(ctx).run(doc))
    return found


# ---- files kustomize reads as patches --------------------------------------------------------
@lru_cache(maxsize=64)
def listed_patches(kz: str, mtime_ns: int, size: int) -> frozenset[str]:
    """Absolute paths of the files kustomization ``kz`` names as patches (read through it, not
    alone). Read once per version of the file (its mtime and size in the key), not once per
    YAML file beside it."""
    files = Files()
    try:
        (doc, *_) = files.docs(kz, (kz, None)) or [None]
        found = ([] if not isinstance(doc, MAP)
                 else list(patches(doc, os.path.dirname(kz), files, kz)))
    except KustomizeError:
        return frozenset()
    return frozenset(os.path.abspath(w[0]) for _, _, w in found if w[0] != kz)


def is_listed_patch(path: str) -> bool:
    """Whether a kustomization beside ``path`` reads it as a patch."""
    found = kustomization_beside(path)
    return found is not None and os.path.abspath(path) in listed_patches(*found)


def note_lone_patch(path: str, result: ReadResult, docs: list[Any] | None = None) -> ReadResult:
    """A workload whose containers name no image, with a workload of that kind and name in a
    parent folder: the deployments say which file kustomize would merge it into. ``docs``: the
    file's documents as its reader composed them (``yamlfile.read_yaml_docs``), else composed
    here."""
    unresolved = [d for d in result.deployments if d.image is None and (
        d.model is None or "$" in d.model)]
    if not unresolved or not result.text or "image:" in result.text:
        return result
    if docs is None:
        try:
            docs = [d for d in yaml.compose_all(result.text, Loader=LOADER) if d is not None]
        except yaml.YAMLError:
            return result
    kinds = {identity(d) for d in docs if identity(d)[0] in WORKLOADS and identity(d)[1]}
    if not kinds:
        return result
    bases = _bases_above(os.path.dirname(os.path.abspath(path)), frozenset(kinds))
    if not bases:
        return result
    kind, name = next(iter(kinds))
    here = os.path.dirname(os.path.abspath(path))
    best = sorted(bases, key=lambda b: (os.path.splitext(os.path.basename(b))[0]
                                        != os.path.basename(here), b))
    shown = os.path.relpath(best[0], here)
    more = f" (and {len(best) - 1} other file(s) there)" if len(best) > 1 else ""
    note = (f"{PATCH_NOTE} (no image): kustomize would merge it into {kind} {name} in "
            f"{shown}{more}; lint the overlay's kustomization.yaml, or the base")
    out = tuple(replace(d, notes=(*d.notes, note)) if d in unresolved else d
                for d in result.deployments)
    return ReadResult(result.path, out, result.errors, result.text, result.skipped)


def _bases_above(folder: str, kinds: frozenset[tuple[str | None, str | None]]) -> list[str]:
    """YAML files in the parent folders (two levels up) defining one of ``kinds``."""
    from tpcheck.sources.files import decode_utf8_sig, read_capped

    out: list[str] = []
    parent = os.path.dirname(folder)
    names_wanted = [n for _, n in kinds if n]
    for _ in range(2):
        try:
            names = sorted(os.listdir(parent))[:MAX_SCANNED]
        except OSError:
            break
        for n in names:
            p = os.path.join(parent, n)
            if not n.endswith((".yaml", ".yml")) or not os.path.isfile(p):
                continue
            try:
                text = decode_utf8_sig(read_capped(p, MAX_BYTES))
                if not any(w in text for w in names_wanted):
                    continue  # cheaper than composing every file beside the patch
                docs = list(yaml.compose_all(text, Loader=LOADER))
            except (OSError, UnicodeDecodeError, yaml.YAMLError):
                continue
            if any(d is not None and identity(d) in kinds for d in docs):
                out.append(p)
        if out:
            break
        parent = os.path.dirname(parent)
    return out


# the node helpers the KServe pairing (sources.kserve) shares with the overlay build (the node
# helpers themselves live in sources.kustomize_nodes, merge in sources.kustomize_patch)
pair_nodes, one_file = _pair, _one_file

__all__ = ["NAMES", "PATCH_NOTE", "Files", "KustomizeError", "get_key", "identity",
           "is_kustomization", "is_listed_patch", "merge", "note_lone_patch", "one_file",
           "pair_nodes", "read_kustomization", "scalar_text"]
