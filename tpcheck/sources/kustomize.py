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
from collections.abc import Iterator
from functools import lru_cache
from stat import S_ISREG

from tpcheck.record import replace
from tpcheck.sources.base import MAX_BYTES, PATCH_NOTE, Deployment, ReadResult, SourceError, Span
from tpcheck.sources.positions import LineIndex, Located
from tpcheck.sources.pyyaml import ReaderError, yaml
from tpcheck.sources.yamlctx import LOADER, Ctx

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
WORKLOADS = frozenset({"Deployment", "StatefulSet", "LeaderWorkerSet", "DaemonSet", "Job",
                       "Pod"})
OVERLAY_NOTE = "as kustomize builds"
# Kubernetes' patchMergeKey for the lists a launch lives in (core/v1 types.go tags).
MERGE_KEYS = {"containers": "name", "initContainers": "name", "env": "name",
              "volumes": "name", "volumeMounts": "mountPath", "ports": "containerPort",
              "imagePullSecrets": "name"}
LIST_FIELDS = ("resources", "bases", "patches", "patchesStrategicMerge", "patchesJson6902",
               "images", "configMapGenerator", "secretGenerator")
MAX_DEPTH = 8  # kustomizations including kustomizations: a cycle or a deep chain stops here
MAX_SCANNED = 200  # files per parent folder looked at for a lone patch's base
_MAP, _SEQ, _SCALAR = yaml.MappingNode, yaml.SequenceNode, yaml.ScalarNode
_STR = "tag:yaml.org,2002:str"
_SEQ_TAG = "tag:yaml.org,2002:seq"


class KustomizeError(Exception):
    """A kustomization that cannot be assembled: one line naming the file and position."""

    def __init__(self, path: str, line: int, column: int, message: str) -> None:
        super().__init__(message)
        self.error = SourceError(path, line, column, message)


def is_kustomization(path: str) -> bool:
    return os.path.basename(path) in NAMES


class Files:
    """Each file read once per kustomization, with the Ctx that places its nodes."""

    def __init__(self) -> None:
        self.ctx_of: dict[int, Ctx] = {}  # id(node) → the Ctx of the file it was read from
        self.keep: list[Any] = []  # every node registered stays alive (ids stay unique)
        self.synthetic: set[int] = set()  # values no file holds as written (image overrides)
        self.remote: list[tuple[str, str, int]] = []  # remote bases: (ref, file, line)
        self._docs: dict[str, list[Any]] = {}
        self._texts: dict[str, str] = {}

    def given(self, path: str, text: str) -> None:
        """The text of ``path`` as the caller has it (stdin, an editor buffer)."""
        self._texts[path] = text

    def docs(self, path: str, where: tuple[str, Any]) -> list[Any]:
        hit = self._docs.get(path)
        if hit is not None:
            return hit
        text = self._texts.get(path)
        if text is None:
            from tpcheck.sources.files import NotRegular, TooBig, read_capped

            try:  # a FIFO would block, /dev/zero never end: the one side-file reader
                text = read_capped(path, MAX_BYTES).decode("utf-8-sig")
            except NotRegular as e:
                raise _error(where, f"{path}: {e}") from None
            except TooBig:
                raise _error(where, f"{path} is over the {MAX_BYTES}-byte limit") from None
            except (OSError, UnicodeDecodeError) as e:
                raise _error(where, f"cannot read {path}: {getattr(e, 'strerror', None) or e}"
                             ) from None
        ctx = Ctx(path, LineIndex(text))
        try:
            docs = [d for d in yaml.compose_all(text, Loader=LOADER) if d is not None]
        except yaml.MarkedYAMLError as e:
            mark = e.problem_mark or e.context_mark
            line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
            raise KustomizeError(path, line, col, f"YAML does not parse: {e.problem}") from None
        except ReaderError as e:  # a NUL or other control character: no mark, a position
            line, col = LineIndex(text).pos(e.position)
            raise KustomizeError(path, line, col, f"YAML does not parse: {e.reason} "
                                 f"(character #x{e.character:04x})") from None
        for d in docs:
            self.own(d, ctx)
        self._docs[path] = docs
        return docs

    def all_docs(self) -> list[list[Any]]:
        return list(self._docs.values())

    def file_of(self, doc: Any) -> str | None:
        """The file ``doc`` was read from as written; None for a node a merge built."""
        return next((p for p, docs in self._docs.items() if any(d is doc for d in docs)), None)

    def own(self, node: Any, ctx: Ctx) -> None:
        stack = [node]
        while stack:
            n = stack.pop()
            if id(n) in self.ctx_of:
                continue
            self.ctx_of[id(n)] = ctx
            self.keep.append(n)
            if isinstance(n, _MAP):
                stack.extend(x for pair in n.value for x in pair)
            elif isinstance(n, _SEQ):
                stack.extend(n.value)

    def adopt(self, new: Any, like: Any) -> Any:
        """A node built by the merge is placed where ``like`` (its base) was."""
        self.ctx_of[id(new)] = self.ctx_of[id(like)]
        self.keep.append(new)
        return new


def _placed(files: Files, node: Any, message: str) -> KustomizeError:
    """An error at ``node``, placed in its file (also inside an inline patch)."""
    ctx = files.ctx_of.get(id(node))
    if ctx is None:
        return _error(("<kustomization>", node), message)
    s = ctx.span(node)
    return KustomizeError(s.path, s.line, s.column, message)


def _error(where: tuple[str, Any], message: str) -> KustomizeError:
    path, node = where
    mark = getattr(node, "start_mark", None)
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    return KustomizeError(path, line, col, message)


def _get(node: Any, key: str) -> Any:
    if isinstance(node, _MAP):
        for k, v in node.value:
            if isinstance(k, _SCALAR) and k.value == key:
                return v
    return None


def _text(node: Any) -> str | None:
    return node.value if isinstance(node, _SCALAR) else None


def _identity(doc: Any) -> tuple[str | None, str | None]:
    return _text(_get(doc, "kind")), _text(_get(_get(doc, "metadata"), "name"))


# ---- strategic merge -------------------------------------------------------------------------
def _is_null(node: Any) -> bool:
    return isinstance(node, _SCALAR) and not node.style and node.value in ("null", "~", "")


def merge(base: Any, patch: Any, files: Files, key: str | None = None) -> Any:
    """``patch`` merged into ``base`` as a strategic-merge patch (new nodes, originals kept)."""
    if isinstance(base, _MAP) and isinstance(patch, _MAP):
        if _text(_get(patch, "$patch")) == "replace":
            return patch
        out = list(base.value)
        for pk, pv in patch.value:
            name = _text(pk)
            if name is None or name.startswith("$"):
                continue
            at = next((i for i, (k, _) in enumerate(out) if _text(k) == name), None)
            if _is_null(pv):
                if at is not None:
                    del out[at]
            elif at is None:
                out.append((pk, pv))
            else:
                out[at] = (out[at][0], merge(out[at][1], pv, files, name))
        return files.adopt(_MAP(base.tag, out, base.start_mark, base.end_mark,
                                base.flow_style), base)
    if isinstance(base, _SEQ) and isinstance(patch, _SEQ) and key in MERGE_KEYS:
        mk = MERGE_KEYS[key]
        items = list(base.value)
        for item in patch.value:
            ident = _text(_get(item, mk))
            at = next((i for i, b in enumerate(items) if ident is not None
                       and _text(_get(b, mk)) == ident), None)
            if _text(_get(item, "$patch")) == "delete":
                if at is not None:
                    del items[at]
            elif at is None:
                items.append(item)
            else:
                items[at] = merge(items[at], item, files)
        return files.adopt(_SEQ(base.tag, items, base.start_mark, base.end_mark,
                                base.flow_style), base)
    return patch  # scalars and other lists (args, command): the patch's value replaces


# ---- JSON 6902 -------------------------------------------------------------------------------
def _pointer(path: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]


def json6902(doc: Any, ops: Any, files: Files) -> Any:
    """Apply add/replace/remove operations; the tree is rebuilt along each path."""
    if not isinstance(ops, _SEQ):
        raise _placed(files, ops, "a JSON 6902 patch is a list of operations")
    for op in ops.value:
        kind, path = _text(_get(op, "op")), _text(_get(op, "path"))
        if kind not in ("add", "replace", "remove") or path is None:
            raise _placed(files, op, f"JSON patch operation {kind!r} is not read by tpcheck "
                                     "(add, replace and remove are)")
        value = _get(op, "value")
        if value is None and kind != "remove":
            raise _placed(files, op, f"JSON patch {kind} without a value")
        doc = _apply(doc, _pointer(path), kind, value, files, op, path)
    return doc


def _missing(files: Files, where: Any, kind: str, path: str, head: str) -> KustomizeError:
    """kustomize's own refusal ("doc is missing path") of a path through a key or an item
    that is not there (an ``add`` to ``/spec/containers/0/args/-`` without ``args``)."""
    return _placed(files, where, f"JSON patch {kind} does not apply: doc is missing path "
                                 f"{path!r} (no {head!r})")


def _apply(node: Any, parts: list[str], kind: str, value: Any, files: Files,
           where: Any, path: str) -> Any:
    head, rest = parts[0], parts[1:]
    if isinstance(node, _MAP):
        at = next((i for i, (k, _) in enumerate(node.value) if _text(k) == head), None)
        items = list(node.value)
        if not rest:
            if at is None and kind != "add":
                # RFC 6902 §4.2-4.3: replace and remove need the target; kustomize refuses
                raise _missing(files, where, kind, path, head)
            if at is None:
                key = files.adopt(_SCALAR(_STR, head, value.start_mark, value.end_mark), value)
                items.append((key, value))
            elif kind == "remove":
                del items[at]
            else:
                items[at] = (items[at][0], value)
        else:
            if at is None:
                raise _missing(files, where, kind, path, head)
            items[at] = (items[at][0], _apply(items[at][1], rest, kind, value, files, where,
                                              path))
        return files.adopt(_MAP(node.tag, items, node.start_mark, node.end_mark,
                                node.flow_style), node)
    if isinstance(node, _SEQ):
        seq = list(node.value)
        if head == "-":
            i = len(seq)
        elif head.isdigit() and int(head) <= len(seq):
            i = int(head)
        else:
            raise _placed(files, where, f"JSON patch index {head!r} is out of range")
        if not rest:
            if kind == "add":
                seq.insert(i, value)
            elif i >= len(seq):
                raise _missing(files, where, kind, path, head)
            elif kind == "remove":
                del seq[i]
            else:
                seq[i] = value
        elif i < len(seq):
            seq[i] = _apply(seq[i], rest, kind, value, files, where, path)
        else:
            raise _missing(files, where, kind, path, head)
        return files.adopt(_SEQ(node.tag, seq, node.start_mark, node.end_mark,
                                node.flow_style), node)
    raise _placed(files, where, "JSON patch path goes through a scalar")


# ---- images ----------------------------------------------------------------------------------
def _image_name(image: str) -> str:
    """``repo/name:tag@digest`` → ``repo/name`` (a registry's :port stays)."""
    ref = image.split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    return ref[: len(ref) - len(last)] + last.split(":", 1)[0]


def _images(doc: Any, overrides: list[tuple[Any, Ctx]], files: Files) -> Any:
    """Containers whose image matches an ``images`` entry get its newName/newTag/digest."""
    if not overrides:
        return doc

    def visit(node: Any) -> Any:
        if isinstance(node, _MAP):
            items = list(node.value)
            changed = False
            for i, (k, v) in enumerate(items):
                if _text(k) == "image" and isinstance(v, _SCALAR):
                    new = _override(v, overrides, files)
                    if new is not v:
                        items[i], changed = (k, new), True
                elif isinstance(v, (_MAP, _SEQ)):
                    nv = visit(v)
                    if nv is not v:
                        items[i], changed = (k, nv), True
            if changed:
                return files.adopt(_MAP(node.tag, items, node.start_mark, node.end_mark,
                                        node.flow_style), node)
        elif isinstance(node, _SEQ):
            seq = [visit(x) for x in node.value]
            if any(a is not b for a, b in zip(seq, node.value, strict=True)):
                return files.adopt(_SEQ(node.tag, seq, node.start_mark, node.end_mark,
                                        node.flow_style), node)
        return node

    return visit(doc)


def _override(image: Any, overrides: list[tuple[Any, Ctx]], files: Files) -> Any:
    name = _image_name(image.value)
    for entry, ctx in overrides:
        if _text(_get(entry, "name")) != name:
            continue
        new_name = _text(_get(entry, "newName")) or name
        tag, digest = _text(_get(entry, "newTag")), _text(_get(entry, "digest"))
        old = image.value.split("@", 1)[0]
        old_tag = old[len(name) + 1:] if old[len(name):].startswith(":") else ""
        value = new_name + (f"@{digest}" if digest else f":{tag}" if tag else
                            f":{old_tag}" if old_tag else "")
        # the value is the kustomization's: placed on the entry's tag (else its name)
        at = _get(entry, "newTag") or _get(entry, "digest") or _get(entry, "newName") or entry
        node = _SCALAR(_STR, value, at.start_mark, at.end_mark)
        files.ctx_of[id(node)] = ctx
        files.keep.append(node)
        files.synthetic.add(id(node))
        return node
    return image


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
    if not isinstance(kz, _MAP):  # kustomize: "json: cannot unmarshal array into Kustomization"
        raise _placed(files, kz, "a kustomization must be a mapping of fields")
    for key in LIST_FIELDS:  # `resources: app.yaml` read as nothing would hide the whole app
        node = _get(kz, key)
        if node is not None and not isinstance(node, _SEQ) and not _is_null(node):
            raise _placed(files, node, f"{key} must be a list")
    ctx = files.ctx_of[id(kz)]
    objects: list[Any] = []
    for entry in _items(_get(kz, "resources")) + _items(_get(kz, "bases")):
        ref = _text(entry)
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
                raise _error((path, entry), f"{ref}: a folder with no kustomization.yaml")
            if os.path.realpath(inner) in chain:  # kustomize refuses it too ("cycle detected")
                raise _error((path, entry), f"{ref}: leads back to a kustomization already "
                             "being built (a cycle)")
            objects.extend(build(inner, files, depth + 1, chain))
        else:
            objects.extend(files.docs(target, (path, entry)))
    for patch, target, _ in _patches(kz, folder, files, path):
        objects = [_patch_one(o, patch, target, files) for o in objects]
    generated = _generated_env(kz, folder, files, path)
    if generated:
        objects = [_env_from(o, generated, files) for o in objects]
    overrides = [(e, ctx) for e in _items(_get(kz, "images")) if isinstance(e, _MAP)]
    return [_images(o, overrides, files) for o in objects]


def _generated_env(kz: Any, folder: str, files: Files, path: str) -> dict[str, list[Any]]:
    """ConfigMap or Secret name → its generator's ``KEY=value`` scalars: ``literals``, then
    the lines of its ``envs`` files (and the older ``env``), each placed in the file that
    holds it. Kustomize reads an env file as ``KEY=value`` lines; ``#`` lines and blank
    lines are skipped."""
    out: dict[str, list[Any]] = {}
    for field in ("configMapGenerator", "secretGenerator"):
        for gen in _items(_get(kz, field)):
            name = _text(_get(gen, "name"))
            if not name:
                continue
            found = [x for x in _items(_get(gen, "literals"))
                     if isinstance(x, _SCALAR) and "=" in x.value]
            env_files = _items(_get(gen, "envs"))
            single = _get(gen, "env")
            if isinstance(single, _SCALAR):
                env_files.append(single)
            for entry in env_files:
                ref = _text(entry)
                if ref:
                    found.extend(_env_file(os.path.normpath(os.path.join(folder, ref)),
                                           files, (path, entry)))
            if found:
                out.setdefault(name, []).extend(found)
    return out


def _env_file(path: str, files: Files, where: tuple[str, Any]) -> list[Any]:
    """The ``KEY=value`` lines of an env file as plain scalars placed in it."""
    from yaml.error import Mark

    if not os.path.isfile(path):
        raise _error(where, f"{path}: no such env file")
    try:
        with open(path, encoding="utf-8-sig") as fh:
            text = fh.read(MAX_BYTES + 1)
    except (OSError, UnicodeDecodeError) as e:
        raise _error(where, f"cannot read {path}: {getattr(e, 'strerror', None) or e}"
                     ) from None
    ctx = Ctx(path, LineIndex(text))
    nodes: list[Any] = []
    offset = 0
    for n, line in enumerate(text.split("\n")):
        start = offset
        offset += len(line) + 1
        body = line.rstrip("\r")
        lead = len(body) - len(body.lstrip())
        body = body.strip()
        if not body or body.startswith("#") or "=" not in body:
            continue
        a, b = start + lead, start + lead + len(body)
        node = _SCALAR(_STR, body, Mark(path, a, n, lead, None, 0),
                       Mark(path, b, n, lead + len(body), None, 0))
        files.own(node, ctx)
        nodes.append(node)
    return nodes


def _key_value(files: Files, literal: Any) -> tuple[str, Any]:
    """(KEY, a scalar for the value alone, placed after ``KEY=``) of a ``KEY=value`` node."""
    from yaml.error import Mark

    key, _, value = literal.value.partition("=")
    q = 1 if literal.style in ("'", '"') else 0
    sm = literal.start_mark
    if sm.line != literal.end_mark.line:
        return key, literal  # folded over lines: placed on the whole literal
    k = q + len(key) + 1
    node = _SCALAR(_STR, value, Mark(sm.name, sm.index + k, sm.line, sm.column + k, None, 0),
                   literal.end_mark if not q else Mark(
                       sm.name, literal.end_mark.index - 1, sm.line,
                       literal.end_mark.column - 1, None, 0))
    return key, files.adopt(node, literal)


def _env_from(node: Any, generated: dict[str, list[Any]], files: Files) -> Any:
    """Containers with ``envFrom: [{configMapRef: {name}}]`` of a generated ConfigMap get its
    literals as ``KEY=value`` env items, before their own ``env`` (which wins, as in
    Kubernetes) and after literals an inner kustomization added (an overlay's win)."""
    if isinstance(node, _SEQ):
        seq = [_env_from(x, generated, files) for x in node.value]
        if all(a is b for a, b in zip(seq, node.value, strict=True)):
            return node
        return files.adopt(_SEQ(node.tag, seq, node.start_mark, node.end_mark,
                                node.flow_style), node)
    if not isinstance(node, _MAP):
        return node
    literals = [lit for ref in _items(_get(node, "envFrom"))
                for kind in ("configMapRef", "secretRef")
                for lit in generated.get(_text(_get(_get(ref, kind), "name")) or "", [])]
    items = []
    changed = False
    for k, v in node.value:
        if _text(k) == "env" and isinstance(v, _SEQ):
            nv = _value_from(v, generated, files)
            if nv is not v:
                items.append((k, nv))
                changed = True
                continue
        nv = _env_from(v, generated, files) if isinstance(v, (_MAP, _SEQ)) else v
        changed |= nv is not v
        items.append((k, nv))
    if literals:
        env_at = next((i for i, (k, _) in enumerate(items) if _text(k) == "env"), None)
        if env_at is None:
            key = files.adopt(_SCALAR(_STR, "env", node.start_mark, node.start_mark), node)
            files.synthetic.add(id(key))
            items.append((key, files.adopt(_SEQ(_SEQ_TAG, list(literals), node.start_mark,
                                                node.end_mark), node)))
        elif isinstance(items[env_at][1], _SEQ):
            env = items[env_at][1]
            old = _items(env)
            lead = next((i for i, x in enumerate(old) if not isinstance(x, _SCALAR)), len(old))
            new = files.adopt(_SEQ(env.tag, [*old[:lead], *literals, *old[lead:]],
                                   env.start_mark, env.end_mark), env)
            items[env_at] = (items[env_at][0], new)
        changed = True
    if not changed:
        return node
    return files.adopt(_MAP(node.tag, items, node.start_mark, node.end_mark, node.flow_style),
                       node)


def _value_from(env: Any, generated: dict[str, list[Any]], files: Files) -> Any:
    """``env`` items ``valueFrom: {configMapKeyRef|secretKeyRef: {name, key}}`` of a generated
    ConfigMap or Secret become ``{name, value}`` with the generator's value, placed where the
    generator wrote it."""
    out: list[Any] = []
    changed = False
    for item in env.value:
        ref = None
        for kind in ("configMapKeyRef", "secretKeyRef"):
            ref = ref or _get(_get(item, "valueFrom"), kind)
        source = generated.get(_text(_get(ref, "name")) or "") if ref is not None else None
        want = _text(_get(ref, "key")) if ref is not None else None
        hit = None
        for lit in source or ():
            key, value = _key_value(files, lit)
            if key == want:
                hit = value  # the last one wins, as in a map
        name_pair = next(((k, v) for k, v in item.value if _text(k) == "name"), None) if (
            isinstance(item, _MAP)) else None
        if hit is None or name_pair is None:
            out.append(item)
            continue
        value_key = files.adopt(_SCALAR(_STR, "value", item.start_mark, item.start_mark), item)
        files.synthetic.add(id(value_key))
        out.append(files.adopt(_MAP(item.tag, [name_pair, (value_key, hit)], item.start_mark,
                                    item.end_mark), item))
        changed = True
    if not changed:
        return env
    return files.adopt(_SEQ(env.tag, out, env.start_mark, env.end_mark), env)


def _items(node: Any) -> list[Any]:
    return list(node.value) if isinstance(node, _SEQ) else []


def _patches(kz: Any, folder: str, files: Files,
             path: str) -> Iterator[tuple[Any, Any, tuple[str, Any]]]:
    """(patch document, target selector or None, where it was named) in kustomize's order."""
    ctx = files.ctx_of[id(kz)]
    for entry in _items(_get(kz, "patchesStrategicMerge")):
        yield from _patch_docs(entry, None, folder, files, path, ctx)
    for key in ("patches", "patchesJson6902"):
        for entry in _items(_get(kz, key)):
            if isinstance(entry, _MAP):
                target = _get(entry, "target")
                body = _get(entry, "path") or _get(entry, "patch")
                if body is not None:
                    inline = _get(entry, "patch") is body
                    yield from _patch_docs(body, target, folder, files, path, ctx, inline)
            else:
                yield from _patch_docs(entry, None, folder, files, path, ctx)


def _patch_docs(node: Any, target: Any, folder: str, files: Files, path: str, ctx: Ctx,
                inline: bool = False) -> Iterator[tuple[Any, Any, tuple[str, Any]]]:
    ref = _text(node)
    if ref is None:
        return
    if inline or "\n" in ref:  # a patch written in the kustomization itself
        inner = ctx.inner(ctx.locate(node))
        try:
            docs = [d for d in yaml.compose_all(ref, Loader=LOADER) if d is not None]
        except yaml.YAMLError:
            raise _error((path, node), "inline patch does not parse as YAML") from None
        for d in docs:
            files.own(d, inner)
            yield d, target, (path, node)
        return
    file = os.path.normpath(os.path.join(folder, ref))
    for d in files.docs(file, (path, node)):
        yield d, target, (file, d)


def _patch_one(obj: Any, patch: Any, target: Any, files: Files) -> Any:
    kind, name = _identity(obj)
    if target is not None:
        want_kind, want_name = _text(_get(target, "kind")), _text(_get(target, "name"))
        if (want_kind and want_kind != kind) or (want_name and want_name != name):
            return obj
        if isinstance(patch, _SEQ):
            return json6902(obj, patch, files)
    elif isinstance(patch, _SEQ) or _identity(patch) != (kind, name):
        return obj
    return merge(obj, patch, files)


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
        if isinstance(w, _MAP) and isinstance(r, _MAP):
            for (wk, wv), (rk, rv) in zip(w.value, r.value, strict=False):
                stack.append((wk, rk))
                stack.append((wv, rv))
        elif isinstance(w, _SEQ) and isinstance(r, _SEQ):
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
        objects = [o for o in build(path, files) if _identity(o)[0] in WORKLOADS]
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
    """Whether a document the build takes unchanged from ``file`` is read in that file by a
    folder run reaching ``kustomization``: a file in the kustomization's folder or below."""
    if file is None:
        return False  # a patch or an override changed it: only the overlay has it
    folder = os.path.dirname(os.path.abspath(kustomization))
    return os.path.abspath(file).startswith(folder + os.sep)


def _remote_patches(path: str, files: Files) -> list[Deployment]:
    """The launches written in the patches of an overlay whose base is remote: a patch that
    names a workload's containers with their args is read as it is (its base unseen)."""
    from tpcheck.sources.kube import Walker

    (kz, *_) = files.docs(path, (path, None)) or [None]
    if not isinstance(kz, _MAP):
        return []
    found: list[Deployment] = []
    folder = os.path.dirname(path) or "."
    for doc, _, _ in _patches(kz, folder, files, path):
        if _identity(doc)[0] not in WORKLOADS:
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
def _listed_patches(kz: str, mtime_ns: int, size: int) -> frozenset[str]:
    """Absolute paths of the files kustomization ``kz`` names as patches (read through it, not
    alone). Read once per version of the file (its mtime and size in the key), not once per
    YAML file beside it."""
    files = Files()
    try:
        (doc, *_) = files.docs(kz, (kz, None)) or [None]
        found = ([] if not isinstance(doc, _MAP)
                 else list(_patches(doc, os.path.dirname(kz), files, kz)))
    except KustomizeError:
        return frozenset()
    return frozenset(os.path.abspath(w[0]) for _, _, w in found if w[0] != kz)


def is_listed_patch(path: str) -> bool:
    """Whether a kustomization beside ``path`` reads it as a patch."""
    folder = os.path.dirname(os.path.abspath(path))
    for name in NAMES:
        kz = os.path.join(folder, name)
        try:
            st = os.stat(kz)
        except OSError:
            continue
        if not S_ISREG(st.st_mode):  # a folder or a FIFO by that name: nothing to read
            continue
        return os.path.abspath(path) in _listed_patches(kz, st.st_mtime_ns, st.st_size)
    return False


def note_lone_patch(path: str, result: ReadResult) -> ReadResult:
    """A workload whose containers name no image, with a workload of that kind and name in a
    parent folder: the deployments say which file kustomize would merge it into."""
    unresolved = [d for d in result.deployments if d.image is None and (
        d.model is None or "$" in d.model)]
    if not unresolved or not result.text or "image:" in result.text:
        return result
    try:
        docs = [d for d in yaml.compose_all(result.text, Loader=LOADER) if d is not None]
    except yaml.YAMLError:
        return result
    kinds = {_identity(d) for d in docs if _identity(d)[0] in WORKLOADS and _identity(d)[1]}
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
    from tpcheck.sources.files import read_capped

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
                text = read_capped(p, MAX_BYTES).decode("utf-8-sig")
                if not any(w in text for w in names_wanted):
                    continue  # cheaper than composing every file beside the patch
                docs = list(yaml.compose_all(text, Loader=LOADER))
            except (OSError, UnicodeDecodeError, yaml.YAMLError):
                continue
            if any(d is not None and _identity(d) in kinds for d in docs):
                out.append(p)
        if out:
            break
        parent = os.path.dirname(parent)
    return out


# the node helpers the KServe pairing (sources.kserve) shares with the overlay build
get_key, scalar_text, identity, pair_nodes, one_file = _get, _text, _identity, _pair, _one_file

__all__ = ["PATCH_NOTE", "get_key", "identity", "is_kustomization", "is_listed_patch",
           "note_lone_patch", "one_file", "pair_nodes", "read_kustomization", "scalar_text"]
