"""The shell word model shared by every reader: a word after quote removal and expansion, with
where each character came from; and the kubelet's ``$(VAR)`` expansion of one argv element.

A leaf module (issue 15): the argv, shell, Kubernetes, Helm-values, Python and vLLM-config
readers all hand words around, and none of them needs another reader to do so.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from tpcheck.deferred import lazy_re
from tpcheck.record import record
from tpcheck.sources.base import Span
from tpcheck.sources.positions import Located

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Protocol

    class Placement(Protocol):
        """How the tokenizer places a word on first use (``shell_recipes.Recipe``)."""

        def raw_span(self) -> Span: ...

        def located(self, value: str, raw: Span) -> Located: ...


# Expansion limits (issue 14 item 5, issue 28 item 3), one mechanism for the shell's ``$VAR``
# and the kubelet's ``$(VAR)``: 28 lines of A="$A$A" doubled a 10-byte value to 2.7 GB, and 27
# doubling container env entries took 13 s and 1.9 GB (31 ended in MemoryError). A word grows
# to at most MAX_WORD_CHARS by expansion, and one text expands at most MAX_EXPANDED_CHARS in
# all (a 64-KiB value used on 50,000 lines would be 3 GB; a 20,000-entry chain $(V{i-1})x is
# 200 M characters); an expansion past either is left as written and the word is unresolved.
# Real values — a model path, a JSON --compilation-config — are far under both.
MAX_WORD_CHARS = 64 * 1024
MAX_EXPANDED_CHARS = 4 * 1024 * 1024


class Budget:
    """What expansion may still add to the file being read: ``affordable`` counts an expansion
    against MAX_WORD_CHARS (with what the word already got) and MAX_EXPANDED_CHARS; ``first``
    is where the first one that did not fit was written (the file's one line about it)."""

    __slots__ = ("expanded", "first", "refused")

    def __init__(self) -> None:
        self.expanded = 0  # characters added by expansion so far
        self.refused = 0
        self.first: tuple[str, int, int] | None = None  # (path, line, column)

    def affordable(self, word_expanded: int, size: int) -> bool:
        if word_expanded + size > MAX_WORD_CHARS or self.expanded + size > MAX_EXPANDED_CHARS:
            self.refused += 1
            return False
        self.expanded += size
        return True

    def refused_at(self, path: str, at: tuple[int, int]) -> None:
        if self.first is None:
            self.first = (path, at[0], at[1])

    def message(self) -> str:
        return (f"variable expansion past tpcheck's limits ({MAX_WORD_CHARS // 1024} KiB a word, "
                f"{MAX_EXPANDED_CHARS // 2**20} MiB a file); what it builds is unresolved")


# The budget of the file being read: ``sources.read_path`` sets one for each file, so every
# reader it calls (shell, Kubernetes, Helm, compose) expands against the same limits.
_FILE_BUDGET: ContextVar[Budget | None] = ContextVar("tpcheck_expansion_budget", default=None)


def file_budget() -> Budget:
    """The budget of the file being read, else (a reader called on its own) a fresh one."""
    b = _FILE_BUDGET.get()
    return b if b is not None else Budget()


@contextmanager
def reading_file() -> Iterator[Budget]:
    """One budget for everything read until the block ends (one file)."""
    b = Budget()
    token = _FILE_BUDGET.set(b)
    try:
        yield b
    finally:
        _FILE_BUDGET.reset(token)


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


def k8s_word(loc: Located, env: Mapping[str, Located], budget: Budget | None = None) -> Word:
    """One argv element; ``$(VAR)`` is replaced from the container env as the kubelet does,
    within ``budget`` (the text's; a fresh one bounds the word alone): a reference past it is
    kept as written and the word is unresolved."""
    value = loc.value
    if "$(" not in value:
        return Word(loc, loc.fallback)
    budget = budget if budget is not None else file_budget()
    added = 0
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
        rep = env[m.group(1)]
        if not budget.affordable(added, len(rep.value)):
            budget.refused_at(loc.path, _p(loc, m.start()))
            unresolved = True
            continue
        added += len(rep.value)
        chars.append(value[i : m.start()])
        pos.extend(_ps(loc, i, m.start()))
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


_K8S_VAR = lazy_re(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")  # for a word holding "$("


def _ps(loc: Located, i: int, j: int) -> Sequence[tuple[int, int]]:
    if loc.positions:
        return loc.positions[i:j]
    return [(loc.fallback.line, loc.fallback.column)] * (j - i)


def _p(loc: Located, i: int) -> tuple[int, int]:
    if loc.positions:
        return loc.positions[i]
    return (loc.fallback.line, loc.fallback.column)
