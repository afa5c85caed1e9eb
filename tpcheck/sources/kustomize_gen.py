"""configMapGenerator and secretGenerator: their literals and env files fed to envFrom/valueFrom."""

from __future__ import annotations

import os

from tpcheck.sources.base import MAX_BYTES
from tpcheck.sources.kustomize_nodes import (
    MAP,
    SCALAR,
    SEQ,
    SEQ_TAG,
    STR_TAG,
    Files,
    error_at,
    get_key,
    scalar_text,
    seq_items,
)
from tpcheck.sources.positions import LineIndex
from tpcheck.sources.yamlctx import Ctx

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any


def generated_env(kz: Any, folder: str, files: Files, path: str) -> dict[str, list[Any]]:
    """ConfigMap or Secret name → its generator's ``KEY=value`` scalars: ``literals``, then
    the lines of its ``envs`` files (and the older ``env``), each placed in the file that
    holds it. Kustomize reads an env file as ``KEY=value`` lines; ``#`` lines and blank
    lines are skipped."""
    out: dict[str, list[Any]] = {}
    for field in ("configMapGenerator", "secretGenerator"):
        for gen in seq_items(get_key(kz, field)):
            name = scalar_text(get_key(gen, "name"))
            if not name:
                continue
            found = [x for x in seq_items(get_key(gen, "literals"))
                     if isinstance(x, SCALAR) and "=" in x.value]
            env_files = seq_items(get_key(gen, "envs"))
            single = get_key(gen, "env")
            if isinstance(single, SCALAR):
                env_files.append(single)
            for entry in env_files:
                ref = scalar_text(entry)
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
        raise error_at(where, f"{path}: no such env file")
    try:
        with open(path, encoding="utf-8-sig") as fh:
            text = fh.read(MAX_BYTES + 1)
    except (OSError, UnicodeDecodeError) as e:
        raise error_at(where, f"cannot read {path}: {getattr(e, 'strerror', None) or e}"
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
        node = SCALAR(STR_TAG, body, Mark(path, a, n, lead, None, 0),
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
    node = SCALAR(STR_TAG, value, Mark(sm.name, sm.index + k, sm.line, sm.column + k, None, 0),
                   literal.end_mark if not q else Mark(
                       sm.name, literal.end_mark.index - 1, sm.line,
                       literal.end_mark.column - 1, None, 0))
    return key, files.adopt(node, literal)


def env_from(node: Any, generated: dict[str, list[Any]], files: Files) -> Any:
    """Containers with ``envFrom: [{configMapRef: {name}}]`` of a generated ConfigMap get its
    literals as ``KEY=value`` env items, before their own ``env`` (which wins, as in
    Kubernetes) and after literals an inner kustomization added (an overlay's win)."""
    if isinstance(node, SEQ):
        seq = [env_from(x, generated, files) for x in node.value]
        if all(a is b for a, b in zip(seq, node.value, strict=True)):
            return node
        return files.adopt(SEQ(node.tag, seq, node.start_mark, node.end_mark,
                                node.flow_style), node)
    if not isinstance(node, MAP):
        return node
    literals = [lit for ref in seq_items(get_key(node, "envFrom"))
                for kind in ("configMapRef", "secretRef")
                for lit in generated.get(
                    scalar_text(get_key(get_key(ref, kind), "name")) or "", [])]
    items = []
    changed = False
    for k, v in node.value:
        if scalar_text(k) == "env" and isinstance(v, SEQ):
            nv = _value_from(v, generated, files)
            if nv is not v:
                items.append((k, nv))
                changed = True
                continue
        nv = env_from(v, generated, files) if isinstance(v, (MAP, SEQ)) else v
        changed |= nv is not v
        items.append((k, nv))
    if literals:
        env_at = next((i for i, (k, _) in enumerate(items) if scalar_text(k) == "env"), None)
        if env_at is None:
            key = files.adopt(SCALAR(STR_TAG, "env", node.start_mark, node.start_mark), node)
            files.synthetic.add(id(key))
            items.append((key, files.adopt(SEQ(SEQ_TAG, list(literals), node.start_mark,
                                                node.end_mark), node)))
        elif isinstance(items[env_at][1], SEQ):
            env = items[env_at][1]
            old = seq_items(env)
            lead = next((i for i, x in enumerate(old) if not isinstance(x, SCALAR)), len(old))
            new = files.adopt(SEQ(env.tag, [*old[:lead], *literals, *old[lead:]],
                                   env.start_mark, env.end_mark), env)
            items[env_at] = (items[env_at][0], new)
        changed = True
    if not changed:
        return node
    return files.adopt(MAP(node.tag, items, node.start_mark, node.end_mark, node.flow_style),
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
            ref = ref or get_key(get_key(item, "valueFrom"), kind)
        source = generated.get(scalar_text(get_key(ref, "name")) or "") if ref is not None else None
        want = scalar_text(get_key(ref, "key")) if ref is not None else None
        hit = None
        for lit in source or ():
            key, value = _key_value(files, lit)
            if key == want:
                hit = value  # the last one wins, as in a map
        name_pair = next(((k, v) for k, v in item.value if scalar_text(k) == "name"), None) if (
            isinstance(item, MAP)) else None
        if hit is None or name_pair is None:
            out.append(item)
            continue
        value_key = files.adopt(SCALAR(STR_TAG, "value", item.start_mark, item.start_mark), item)
        files.synthetic.add(id(value_key))
        out.append(files.adopt(MAP(item.tag, [name_pair, (value_key, hit)], item.start_mark,
                                    item.end_mark), item))
        changed = True
    if not changed:
        return env
    return files.adopt(SEQ(env.tag, out, env.start_mark, env.end_mark), env)
