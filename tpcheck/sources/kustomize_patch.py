"""Kustomize's patches (strategic merge, JSON 6902) and images overrides, applied to objects."""

from __future__ import annotations

import os
from collections.abc import Iterator

from tpcheck.sources.kustomize_nodes import (
    MAP,
    SCALAR,
    SEQ,
    STR_TAG,
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
from tpcheck.sources.pyyaml import yaml
from tpcheck.sources.yamlctx import LOADER, Ctx

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

# Kubernetes' patchMergeKey for the lists a launch lives in (core/v1 types.go tags).
MERGE_KEYS = {"containers": "name", "initContainers": "name", "env": "name",
              "volumes": "name", "volumeMounts": "mountPath", "ports": "containerPort",
              "imagePullSecrets": "name"}


# ---- strategic merge -------------------------------------------------------------------------
def merge(base: Any, patch: Any, files: Files, key: str | None = None) -> Any:
    """``patch`` merged into ``base`` as a strategic-merge patch (new nodes, originals kept)."""
    if isinstance(base, MAP) and isinstance(patch, MAP):
        if scalar_text(get_key(patch, "$patch")) == "replace":
            return patch
        out = list(base.value)
        for pk, pv in patch.value:
            name = scalar_text(pk)
            if name is None or name.startswith("$"):
                continue
            at = next((i for i, (k, _) in enumerate(out) if scalar_text(k) == name), None)
            if is_null(pv):
                if at is not None:
                    del out[at]
            elif at is None:
                out.append((pk, pv))
            else:
                out[at] = (out[at][0], merge(out[at][1], pv, files, name))
        return files.adopt(MAP(base.tag, out, base.start_mark, base.end_mark,
                                base.flow_style), base)
    if isinstance(base, SEQ) and isinstance(patch, SEQ) and key in MERGE_KEYS:
        mk = MERGE_KEYS[key]
        items = list(base.value)
        for item in patch.value:
            ident = scalar_text(get_key(item, mk))
            at = next((i for i, b in enumerate(items) if ident is not None
                       and scalar_text(get_key(b, mk)) == ident), None)
            if scalar_text(get_key(item, "$patch")) == "delete":
                if at is not None:
                    del items[at]
            elif at is None:
                items.append(item)
            else:
                items[at] = merge(items[at], item, files)
        return files.adopt(SEQ(base.tag, items, base.start_mark, base.end_mark,
                                base.flow_style), base)
    return patch  # scalars and other lists (args, command): the patch's value replaces


# ---- JSON 6902 -------------------------------------------------------------------------------
def _pointer(path: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]


def json6902(doc: Any, ops: Any, files: Files) -> Any:
    """Apply add/replace/remove operations; the tree is rebuilt along each path."""
    if not isinstance(ops, SEQ):
        raise placed(files, ops, "a JSON 6902 patch is a list of operations")
    for op in ops.value:
        kind, path = scalar_text(get_key(op, "op")), scalar_text(get_key(op, "path"))
        if kind not in ("add", "replace", "remove") or path is None:
            raise placed(files, op, f"JSON patch operation {kind!r} is not read by tpcheck "
                                     "(add, replace and remove are)")
        value = get_key(op, "value")
        if value is None and kind != "remove":
            raise placed(files, op, f"JSON patch {kind} without a value")
        doc = _apply(doc, _pointer(path), kind, value, files, op, path)
    return doc


def _missing(files: Files, where: Any, kind: str, path: str, head: str) -> KustomizeError:
    """kustomize's own refusal ("doc is missing path") of a path through a key or an item
    that is not there (an ``add`` to ``/spec/containers/0/args/-`` without ``args``)."""
    return placed(files, where, f"JSON patch {kind} does not apply: doc is missing path "
                                 f"{path!r} (no {head!r})")


def _apply(node: Any, parts: list[str], kind: str, value: Any, files: Files,
           where: Any, path: str) -> Any:
    head, rest = parts[0], parts[1:]
    if isinstance(node, MAP):
        at = next((i for i, (k, _) in enumerate(node.value) if scalar_text(k) == head), None)
        items = list(node.value)
        if not rest:
            if at is None and kind != "add":
                # RFC 6902 §4.2-4.3: replace and remove need the target; kustomize refuses
                raise _missing(files, where, kind, path, head)
            if at is None:
                key = files.adopt(SCALAR(STR_TAG, head, value.start_mark, value.end_mark), value)
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
        return files.adopt(MAP(node.tag, items, node.start_mark, node.end_mark,
                                node.flow_style), node)
    if isinstance(node, SEQ):
        seq = list(node.value)
        if head == "-":
            i = len(seq)
        elif head.isdigit() and int(head) <= len(seq):
            i = int(head)
        else:
            raise placed(files, where, f"JSON patch index {head!r} is out of range")
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
        return files.adopt(SEQ(node.tag, seq, node.start_mark, node.end_mark,
                                node.flow_style), node)
    raise placed(files, where, "JSON patch path goes through a scalar")


# ---- images ----------------------------------------------------------------------------------
def _image_name(image: str) -> str:
    """``repo/name:tag@digest`` → ``repo/name`` (a registry's :port stays)."""
    ref = image.split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    return ref[: len(ref) - len(last)] + last.split(":", 1)[0]


def images(doc: Any, overrides: list[tuple[Any, Ctx]], files: Files) -> Any:
    """Containers whose image matches an ``images`` entry get its newName/newTag/digest."""
    if not overrides:
        return doc

    def visit(node: Any) -> Any:
        if isinstance(node, MAP):
            items = list(node.value)
            changed = False
            for i, (k, v) in enumerate(items):
                if scalar_text(k) == "image" and isinstance(v, SCALAR):
                    new = _override(v, overrides, files)
                    if new is not v:
                        items[i], changed = (k, new), True
                elif isinstance(v, (MAP, SEQ)):
                    nv = visit(v)
                    if nv is not v:
                        items[i], changed = (k, nv), True
            if changed:
                return files.adopt(MAP(node.tag, items, node.start_mark, node.end_mark,
                                        node.flow_style), node)
        elif isinstance(node, SEQ):
            seq = [visit(x) for x in node.value]
            if any(a is not b for a, b in zip(seq, node.value, strict=True)):
                return files.adopt(SEQ(node.tag, seq, node.start_mark, node.end_mark,
                                        node.flow_style), node)
        return node

    return visit(doc)


def _override(image: Any, overrides: list[tuple[Any, Ctx]], files: Files) -> Any:
    name = _image_name(image.value)
    for entry, ctx in overrides:
        if scalar_text(get_key(entry, "name")) != name:
            continue
        new_name = scalar_text(get_key(entry, "newName")) or name
        tag, digest = scalar_text(get_key(entry, "newTag")), scalar_text(get_key(entry, "digest"))
        old = image.value.split("@", 1)[0]
        old_tag = old[len(name) + 1:] if old[len(name):].startswith(":") else ""
        value = new_name + (f"@{digest}" if digest else f":{tag}" if tag else
                            f":{old_tag}" if old_tag else "")
        # the value is the kustomization's: placed on the entry's tag (else its name)
        at = (get_key(entry, "newTag") or get_key(entry, "digest") or get_key(entry, "newName")
              or entry)
        node = SCALAR(STR_TAG, value, at.start_mark, at.end_mark)
        files.ctx_of[id(node)] = ctx
        files.keep.append(node)
        files.synthetic.add(id(node))
        return node
    return image


def patches(kz: Any, folder: str, files: Files,
             path: str) -> Iterator[tuple[Any, Any, tuple[str, Any]]]:
    """(patch document, target selector or None, where it was named) in kustomize's order."""
    ctx = files.ctx_of[id(kz)]
    for entry in seq_items(get_key(kz, "patchesStrategicMerge")):
        yield from _patch_docs(entry, None, folder, files, path, ctx)
    for key in ("patches", "patchesJson6902"):
        for entry in seq_items(get_key(kz, key)):
            if isinstance(entry, MAP):
                target = get_key(entry, "target")
                body = get_key(entry, "path") or get_key(entry, "patch")
                if body is not None:
                    inline = get_key(entry, "patch") is body
                    yield from _patch_docs(body, target, folder, files, path, ctx, inline)
            else:
                yield from _patch_docs(entry, None, folder, files, path, ctx)


def _patch_docs(node: Any, target: Any, folder: str, files: Files, path: str, ctx: Ctx,
                inline: bool = False) -> Iterator[tuple[Any, Any, tuple[str, Any]]]:
    ref = scalar_text(node)
    if ref is None:
        return
    if inline or "\n" in ref:  # a patch written in the kustomization itself
        inner = ctx.inner(ctx.locate(node))
        try:
            docs = [d for d in yaml.compose_all(ref, Loader=LOADER) if d is not None]
        except yaml.YAMLError:
            raise error_at((path, node), "inline patch does not parse as YAML") from None
        for d in docs:
            files.own(d, inner)
            yield d, target, (path, node)
        return
    file = os.path.normpath(os.path.join(folder, ref))
    for d in files.docs(file, (path, node)):
        yield d, target, (file, d)


def patch_one(obj: Any, patch: Any, target: Any, files: Files) -> Any:
    kind, name = identity(obj)
    if target is not None:
        want_kind = scalar_text(get_key(target, "kind"))
        want_name = scalar_text(get_key(target, "name"))
        if (want_kind and want_kind != kind) or (want_name and want_name != name):
            return obj
        if isinstance(patch, SEQ):
            return json6902(obj, patch, files)
    elif isinstance(patch, SEQ) or identity(patch) != (kind, name):
        return obj
    return merge(obj, patch, files)
