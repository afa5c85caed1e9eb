"""The shell word model shared by every reader: a word after quote removal and expansion, with
where each character came from; and the kubelet's ``$(VAR)`` expansion of one argv element.

A leaf module (issue 15): the argv, shell, Kubernetes, Helm-values, Python and vLLM-config
readers all hand words around, and none of them needs another reader to do so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from tpcheck.record import record
from tpcheck.sources.base import Span
from tpcheck.sources.positions import Located

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Protocol

    class Placement(Protocol):
        """How the tokenizer places a word on first use (``shell._Recipe``)."""

        def raw_span(self) -> Span: ...

        def located(self, value: str, raw: Span) -> Located: ...


@record
class Derived:
    """A value tpcheck worked out (shell arithmetic): what it says in ``tpcheck inspect`` and
    the expression it was worked out from, where findings about the value point."""

    text: str  # "16 = $((LWS_GROUP_SIZE * DP_SIZE_LOCAL)) (l.117) with LWS_GROUP_SIZE 2 (...)"
    span: Span


class Word:
    """One shell word after quote removal and expansion.

    ``text`` keeps where each character came from and ``raw_span`` where the word is written.
    The tokenizer hands both over as offsets and they are worked out on first use: most words
    of a script are never underlined, and placing every character of every word up front was
    about 8% of the instructions spent reading a manifest.
    """

    __slots__ = ("_raw", "_recipe", "_text", "derived", "unresolved", "value", "var_span")

    def __init__(self, text: Located, raw_span: Span, unresolved: str | None = None,
                 var_span: Span | None = None, derived: Derived | None = None) -> None:
        self.value: str = text.value
        self._text: Located | None = text
        self._raw: Span | None = raw_span
        self._recipe: Placement | None = None
        self.unresolved = unresolved  # the word as written, when an expansion could not be done
        self.var_span = var_span  # where the value was assigned, when the word is one $VAR
        self.derived = derived  # the word holds a value worked out from an expression

    @classmethod
    def placed_later(cls, value: str, recipe: Placement, unresolved: str | None,
                     var_span: Span | None, derived: Derived | None = None) -> Word:
        """A word whose text and span ``recipe`` works out on first use (the tokenizer's)."""
        w = cls.__new__(cls)
        w.value, w._text, w._raw, w._recipe = value, None, None, recipe
        w.unresolved, w.var_span, w.derived = unresolved, var_span, derived
        return w

    @property
    def text(self) -> Located:
        if self._text is None:
            assert self._recipe is not None
            self._text = self._recipe.located(self.value, self.raw_span)
        return self._text

    @property
    def raw_span(self) -> Span:
        if self._raw is None:
            assert self._recipe is not None
            self._raw = self._recipe.raw_span()
        return self._raw

    def value_span(self, start: int = 0, end: int | None = None) -> Span:
        if self.var_span is not None and start == 0 and end is None:
            return self.var_span
        return self.text.span(start, end)

    def __repr__(self) -> str:
        return f"Word({self.value!r})"


def k8s_word(loc: Located, env: Mapping[str, Located]) -> Word:
    """One argv element; ``$(VAR)`` is replaced from the container env as the kubelet does."""
    value = loc.value
    if "$(" not in value:
        return Word(loc, loc.fallback)
    chars: list[str] = []
    pos: list[tuple[int, int]] = []
    unresolved = False
    single_var: Span | None = None
    whole = _K8S_VAR.fullmatch(value) is not None
    i = 0
    for m in _K8S_VAR.finditer(value):
        if m.group(1) not in env:
            unresolved = True
            continue  # kept as written, with the text around it
        chars.append(value[i : m.start()])
        pos.extend(_ps(loc, i, m.start()))
        rep = env[m.group(1)]
        chars.append(rep.value)
        if rep.positions and rep.path != loc.path and loc.positions and rep.value:
            # the value was written in another file (a kustomize base or patch): one Located
            # has one path, so the characters are placed on the reference $(VAR) itself
            ref = loc.positions[m.start() : m.end()]
            pos.extend([ref[0]] * (len(rep.value) - 1) + [ref[-1]])
        else:
            pos.extend(rep.positions if rep.positions
                       else [_p(loc, m.start())] * len(rep.value))
        if whole:
            single_var = rep.span()
        i = m.end()
    chars.append(value[i:])
    pos.extend(_ps(loc, i, len(value)))
    text = Located("".join(chars), pos if loc.positions else (), loc.fallback, loc.path)
    return Word(text, loc.fallback, value if unresolved else None, single_var)


_K8S_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def _ps(loc: Located, i: int, j: int) -> Sequence[tuple[int, int]]:
    if loc.positions:
        return loc.positions[i:j]
    return [(loc.fallback.line, loc.fallback.column)] * (j - i)


def _p(loc: Located, i: int) -> tuple[int, int]:
    if loc.positions:
        return loc.positions[i]
    return (loc.fallback.line, loc.fallback.column)
