"""Where a ``# tpcheck: ignore[CODE]`` comment can go without changing what the file means.

A suppression counts on the finding's line or the line above (tpcheck/lint.py). A new comment
line is not always harmless: inside a YAML block scalar it becomes part of the command, after a
shell or Python backslash continuation it ends the command. So each candidate edit is checked:
YAML must load to the same data, Python must parse to the same tree, shell must keep its
continuations and quotes whole; and the file must still yield the same deployments. A candidate
that fails is not offered.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tpcheck.lint_ignores import IGNORE_RE
from tpcheck.record import fields, record
from tpcheck.sources.base import Deployment

_INDENT = re.compile(r"[ \t]*")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


@record
class TextChange:
    """Replace [start, end) with ``new_text``; 0-based lines, code-point columns."""

    line: int
    column: int
    end_line: int
    end_column: int
    new_text: str
    title: str
    path: str | None = None  # another file than the document (a chart's values.yaml)


def ignore_change(text: str, kind: str, line: int, code: str,
                  name: str = "doc") -> TextChange | None:
    """The edit that suppresses ``code`` for a finding on 1-based ``line``, or None if none is safe.

    An existing ``# tpcheck: ignore[...]`` on the line or the line above is extended rather than
    a second comment added, so the codes it already suppresses keep their place.
    """
    lines = text.split("\n")
    i = line - 1
    if not 0 <= i < len(lines):
        return None
    title = f"Add `# tpcheck: ignore[{code}]`"
    for j in (i - 1, i):
        if j < 0:
            continue
        m = IGNORE_RE.search(lines[j])
        if m is None:
            continue
        if m.group(1) is None:  # a bare ignore already covers every code
            return None
        codes = [c.strip() for c in m.group(1).split(",") if c.strip()]
        if code in (c.upper() for c in codes):
            return None
        joined = ", ".join([*codes, code])
        return TextChange(j, m.start(1), j, m.end(1), joined, title)
    eol = "\r\n" if lines[i].endswith("\r") else "\n"
    body = lines[i].rstrip("\r")
    comment = f"# tpcheck: ignore[{code}]"
    indent = _INDENT.match(body)
    above = TextChange(i, 0, i, 0, f"{indent.group(0) if indent else ''}{comment}{eol}", title)
    trailing = TextChange(i, len(body), i, len(body), f"  {comment}", title)
    for change, new_line in ((above, True), (trailing, False)):
        if _safe(text, apply_change(text, change), kind, change.line, new_line, name):
            return change
    return None


def apply_change(text: str, c: TextChange) -> str:
    lines = text.split("\n")
    start = sum(len(x) + 1 for x in lines[:c.line]) + c.column
    end = sum(len(x) + 1 for x in lines[:c.end_line]) + c.end_column
    return text[:start] + c.new_text + text[end:]


def _safe(old: str, new: str, kind: str, line0: int, new_line: bool, name: str) -> bool:
    if kind == "yaml":
        ok = _yaml_same(old, new)
    elif kind == "python":
        ok = _python_same(old, new)
    else:
        ok = _shell_safe(old, line0, new_line)
    return ok and _deployments_same(old, new, name)


def _yaml_same(old: str, new: str) -> bool:
    from tpcheck.sources.pyyaml import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        a = list(yaml.compose_all(old, Loader=loader))
        b = list(yaml.compose_all(new, Loader=loader))
    except yaml.YAMLError:
        return False
    return len(a) == len(b) and all(_nodes_same(x, y) for x, y in zip(a, b, strict=True))


def _nodes_same(a: object, b: object, limit: int = 200_000) -> bool:
    """Compare composed YAML nodes by tag and value, visiting each node pair once: an alias
    bomb shares nodes, so a plain load() and == would expand it exponentially."""
    from tpcheck.sources.pyyaml import yaml

    seen: set[tuple[int, int]] = set()
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if (id(x), id(y)) in seen:
            continue
        seen.add((id(x), id(y)))
        if len(seen) > limit or type(x) is not type(y) or getattr(x, "tag", None) != getattr(
                y, "tag", None):
            return False
        if isinstance(x, yaml.ScalarNode):
            if x.value != y.value:  # type: ignore[attr-defined]
                return False
        elif isinstance(x, yaml.SequenceNode):
            if len(x.value) != len(y.value):  # type: ignore[attr-defined]
                return False
            stack.extend(zip(x.value, y.value, strict=True))  # type: ignore[attr-defined]
        elif isinstance(x, yaml.MappingNode):
            if len(x.value) != len(y.value):  # type: ignore[attr-defined]
                return False
            for (k1, v1), (k2, v2) in zip(x.value, y.value, strict=True):  # type: ignore[attr-defined]
                stack.extend(((k1, k2), (v1, v2)))
    return True


def _python_same(old: str, new: str) -> bool:
    import ast

    try:
        return ast.dump(ast.parse(old)) == ast.dump(ast.parse(new))
    except (SyntaxError, ValueError):
        return False


def _shell_safe(old: str, line0: int, new_line: bool) -> bool:
    """No continuation, open quote or here-document runs into the place the comment goes.

    A new line above ``line0`` needs everything before it complete; a trailing comment needs
    the line itself not to continue onto the next.
    """
    import shlex

    lines = old.split("\n")
    before = lines[:line0] if new_line else lines[:line0 + 1]
    if before and _continues(before[-1]):
        return False
    if _open_heredoc(before):
        return False
    try:
        shlex.split("\n".join(before), comments=True, posix=True)
    except ValueError:  # an unterminated quote or escape: the comment would sit inside it
        return False
    return True


def _continues(line: str) -> bool:
    body = line.rstrip("\r")
    trailing = len(body) - len(body.rstrip("\\"))
    return trailing % 2 == 1


def _open_heredoc(lines: list[str]) -> bool:
    pending: list[str] = []
    for ln in lines:
        body = ln.rstrip("\r")
        if pending:
            if body.strip() == pending[0]:
                pending.pop(0)
            continue
        pending.extend(m.group(2) for m in _HEREDOC.finditer(body.split("#", 1)[0]))
    return bool(pending)


_SKIP = {"span", "spans", "ignores", "notes", "path"}


def _shape(d: Deployment) -> tuple[object, ...]:
    """The deployment's values without positions (a new line shifts every span below it)."""
    out: list[object] = []
    for f in fields(d):
        if f.name in _SKIP:
            continue
        v = getattr(d, f.name)
        if f.name == "options":  # option uses carry a span locator: compare what was written
            v = tuple((o.written, o.value, o.keyword, o.attached) for o in v)
        out.append(tuple(sorted(v.items())) if isinstance(v, Mapping) else v)
    return tuple(out)


def _deployments_same(old: str, new: str, name: str) -> bool:
    from tpcheck.sources import read_path

    a, b = read_path(name, old), read_path(name, new)
    return [_shape(d) for d in a.deployments] == [_shape(d) for d in b.deployments]


__all__ = ["TextChange", "apply_change", "ignore_change"]
