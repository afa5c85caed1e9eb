"""Shell commands without a shell: words with positions, variables, continuations, ``sh -c``.

Scripts, ``sh -c`` strings in manifests and compose ``command:`` strings are split the way a
POSIX shell would split them (quotes, ``\\`` continuations, ``&&``/``;``/``|`` chains, comments,
heredoc bodies read as scripts of their own) and ``$VAR``/``${VAR:-default}`` expanded from
assignments seen earlier.
Nothing is ever executed: a command substitution is kept as written and marked unresolved.
"""

from __future__ import annotations

import re
from collections import ChainMap
from collections.abc import Generator, Iterator, Mapping, MutableMapping, Sequence

from tpcheck.deferred import lazy_re
from tpcheck.record import field, record
from tpcheck.sources.arith import evaluate
from tpcheck.sources.base import Deployment, Span
from tpcheck.sources.positions import LineIndex, Located, Pos, from_file
from tpcheck.sources.words import MAX_EXPANDED_CHARS as MAX_EXPANDED_CHARS  # the shared limits
from tpcheck.sources.words import MAX_WORD_CHARS as MAX_WORD_CHARS
from tpcheck.sources.words import Derived, Word, file_budget

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from tpcheck.sources.argv import Launch

_NAME = lazy_re(r"[A-Za-z_][A-Za-z0-9_]*")
# Runs the tokenizer can copy whole: no quote, expansion, escape, separator or operator.
_PLAIN = lazy_re(r"[^ \t\r\n;&|()<>'\"$`\\]+")
_DQ_PLAIN = lazy_re(r'[^"\\$`]+')
_CMD_END = lazy_re(r"[\n;&|]")
_BLANKS = lazy_re(r"[ \t\r]+")
# Work limits, so a hostile script (a 2-MB line, a million commands) is read in well under a
# second and bounded memory. A real launch has a few dozen words; past MAX_COMMAND_WORDS the
# rest of that command is skipped to its end; past MAX_WORDS the rest of the text is not read,
# and the reader says so (ShellTooLong: one line, exit 2), never a silent "0 deployments".
MAX_COMMAND_WORDS = 4096
MAX_WORDS = 50_000
# Expansion is bounded by words.MAX_WORD_CHARS and MAX_EXPANDED_CHARS, one Budget a text (the
# kubelet's $(VAR) in a manifest counts against the same limits).
MAX_HEREDOC_DEPTH = 2  # a script that writes a script that writes one: deeper is not read
_INTERPRETERS = ("python", "perl", "ruby", "node", "psql", "mysql", "sqlite")
_SCRIPT_TAKERS = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh", "tee"})
_INTEGER = lazy_re(r"-?[0-9]+")
_ASSIGN = lazy_re(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_WRAPPERS = frozenset({"exec", "nohup", "time", "env", "sudo", "command", "stdbuf", "setsid"})
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh"})


@record(frozen=False)
class Vars:
    """Variables known while reading: name → value with positions (k8s ``$(VAR)`` separate).

    ``origins`` says where an orchestrator-injected value comes from (``LWS_GROUP_SIZE`` →
    ``leaderWorkerTemplate.size``), for ``tpcheck inspect``; ``per_pod`` names are injected
    with a value that differs between pods (``LWS_WORKER_INDEX``): set, so a ``:-`` default
    never applies, and unknown; ``derived`` holds how a variable assigned from ``$(( … ))``
    got its value."""

    shell: MutableMapping[str, Located] = field(default_factory=dict)
    k8s: MutableMapping[str, Located] = field(default_factory=dict)
    origins: MutableMapping[str, str] = field(default_factory=dict)
    per_pod: frozenset[str] = frozenset()
    derived: MutableMapping[str, Derived] = field(default_factory=dict)
    arithmetic: bool = True  # False: no shell reads the text (a flags-only ``args`` string)


class _Source:
    """The text being tokenized; ``pos(i)`` is where its character ``i`` sits in the file."""

    __slots__ = ("fb", "loc", "n", "positions")

    def __init__(self, loc: Located) -> None:
        self.loc = loc
        self.n = len(loc.value)
        self.positions = loc.positions  # one per character, or none: all on the fallback span
        self.fb = loc.fallback

    def pos(self, i: int) -> Pos:
        ps = self.positions
        if ps and i < self.n:
            return ps[i]
        if ps and self.n:
            last = ps[self.n - 1]
            return (last[0], last[1] + 1)
        return (self.fb.line, self.fb.column)


# A piece of a word: (start, end) offsets in the source, or (expanded value, offset of the
# expansion) for a variable's value.
_Seg = tuple["int | Located", int]


class _Recipe:
    """How to place a word: pieces of the source (offset ranges) and expanded values, and the
    offsets of its first and last written characters."""

    __slots__ = ("a", "after", "e", "segs", "src")

    def __init__(self, src: _Source, segs: list[_Seg], a: int, e: int, after: bool) -> None:
        self.src, self.segs, self.a, self.e, self.after = src, segs, a, e, after

    def raw_span(self) -> Span:
        p, q = self.src.pos(self.a), self.src.pos(self.e)
        end_col = q[1] + 1 if self.after else q[1]
        return Span(self.src.loc.path, p[0], p[1], q[0], end_col)

    def located(self, value: str, raw: Span) -> Located:
        src = self.src
        ps = src.positions
        if not ps:
            return Located(value, (), raw, src.loc.path)
        segs = self.segs
        positions: Sequence[Pos]
        if len(segs) == 1 and isinstance(segs[0][0], int):
            positions = ps[segs[0][0] : segs[0][1]]  # most words: one piece of the source
        else:  # several pieces, or none (an empty "" word)
            out: list[Pos] = []
            for x, y in segs:
                if isinstance(x, int):
                    out.extend(ps[x:y])
                else:  # an expanded value: where it was assigned, else at the expansion
                    out.extend(x.positions or [src.pos(y)] * len(x.value))
            positions = out
        if len(positions) != len(value):
            positions = ()
        return Located(value, positions, raw, src.loc.path)


class _Builder:
    """The word being read: its text so far and how to place it (see ``_Recipe``)."""

    __slots__ = ("a", "after", "chars", "derived", "e", "expanded", "n_derived", "pieces",
                 "segs", "started", "unresolved", "var_span")

    def __init__(self) -> None:
        self.chars: list[str] = []
        self.segs: list[_Seg] = []
        self.unresolved = False
        self.started = False
        self.a = 0  # offset of the first written character
        self.e = 0  # offset of the last one (``after``: the span ends past it)
        self.after = True
        self.pieces = 0
        self.var_span: Span | None = None
        self.expanded = 0  # characters added by expansion (MAX_WORD_CHARS)
        self.derived: Derived | None = None  # the one worked-out value in the word, if any
        self.n_derived = 0

    def src(self, s: str, i: int, j: int) -> None:
        """Characters ``s[i:j]`` of the source, at their own places."""
        self.chars.append(s[i:j])
        segs = self.segs
        if segs and isinstance(segs[-1][0], int) and segs[-1][1] == i:
            segs[-1] = (segs[-1][0], j)  # continues the last piece
        else:
            segs.append((i, j))

    def expansion(self, val: Located, at: int, derived: Derived | None = None) -> None:
        """An expanded value, placed where it was assigned (else at the expansion, ``at``);
        ``derived`` when it was worked out (two in one word: neither is said)."""
        if derived is not None:
            self.derived = derived if self.n_derived == 0 else None
            self.n_derived += 1
        self.chars.append(val.value)
        self.segs.append((val, at))

    def mark(self, a: int, e: int, after: bool = True) -> None:
        if not self.started:
            self.a = a
            self.started = True
        self.e, self.after = e, after


class ShellTooLong(ValueError):
    """Past MAX_WORDS: said out loud (one line, exit 2), never a silent "0 deployments"."""

    def __init__(self, line: int, column: int) -> None:
        super().__init__(f"the script is longer than tpcheck reads ({MAX_WORDS:,} words); "
                         f"nothing from line {line} on is checked")
        self.line, self.column = line, column
        self.found: list[Deployment] = []  # the launches before the limit


def tokenize(loc: Located, variables: Vars, _depth: int = 0) -> Iterator[list[Word]]:
    """Yield commands (lists of words); expansion reads ``variables`` as it is when reached,
    so assignments made by the consumer between commands are seen by later commands.

    A heredoc body written to a file (``cat <<EOF > run.sh``, ``tee run.sh <<EOF``) or fed to
    a shell (``bash <<EOF``) is a script: its commands follow the line that writes it, read
    with a copy of the variables (its own assignments stay inside it). A body printed
    (``cat <<DOC``, a usage text) or fed to an interpreter (``python3 <<EOF``) is not a
    launch and is skipped, as are heredocs nested deeper than ``MAX_HEREDOC_DEPTH``.

    Words carry offsets into ``loc``, not positions: a word is placed only when asked."""
    yield from _Tokenizer(loc, variables, _depth).commands()


class _Tokenizer:
    """One pass over a text; one method per construct (blanks, operators, redirections and
    heredocs, quotes, escapes, expansions, plain runs), each taking the offset it starts at and
    returning the offset after it. State shared between constructs lives on the instance."""

    __slots__ = ("b", "budget", "depth", "heredocs", "loc", "n", "redirected", "s",
                 "skip_next", "src", "total", "variables", "words")

    def __init__(self, loc: Located, variables: Vars, depth: int) -> None:
        self.loc = loc
        self.s = loc.value
        self.n = len(self.s)
        self.src = _Source(loc)
        self.variables = variables
        self.depth = depth
        self.words: list[Word] = []
        # (delimiter, <<- strips tabs, command name) of the heredocs opened on this line
        self.heredocs: list[tuple[str, bool, str]] = []
        self.redirected = False  # a ``>`` redirection on the line the heredocs were opened on
        self.b = _Builder()
        self.skip_next = False  # the next word is a redirection's target
        self.total = 0  # words made so far (MAX_WORDS)
        self.budget = file_budget()  # expansion so far (words.MAX_EXPANDED_CHARS)

    def commands(self) -> Iterator[list[Word]]:
        s, n = self.s, self.n
        i = 0
        while i < n:
            if self.total > MAX_WORDS:
                raise ShellTooLong(*self.src.pos(i))
            c = s[i]
            if c == "\n":
                cmd = self.end_command()
                if cmd:
                    yield cmd
                i = yield from self.heredoc_bodies(i + 1)
            elif c in ";&|()":
                cmd = self.end_command()
                if cmd:
                    yield cmd
                i += 2 if s[i : i + 2] in ("&&", "||", ";;") else 1
            else:
                i = self.word_part(i, c)
        cmd = self.end_command()
        if cmd:
            yield cmd

    def word_part(self, i: int, c: str) -> int:
        """Read the construct at s[i] == c (neither a newline nor a command separator)."""
        s, n = self.s, self.n
        if c == "\\" and s.startswith("\n", i + 1):
            return i + 2  # a line continuation
        if c == "\\" and s.startswith("\r\n", i + 1):
            return i + 3
        if c in " \t\r":
            return self.blanks(i)
        if c == "#" and not self.b.started:
            e = s.find("\n", i)  # a comment, up to its newline
            return n if e == -1 else e
        if c in "<>":
            return self.redirection(i, c)
        if c == "'":
            return self.single_quoted(i)
        if c == '"':
            return self.double_quoted(i)
        if c == "\\" and i + 1 < n:
            return self.escaped(i)
        if c == "$":
            return self.dollar(i)
        if c == "`":
            return self.backquoted(i)
        return self.plain(i)

    def finish(self) -> None:
        """End the word being read (a redirection's target, or past the limit, is dropped)."""
        b = self.b
        if not b.started:
            return  # nothing was added: the builder is still fresh, keep it
        if self.skip_next:
            self.skip_next = False
        elif len(self.words) >= MAX_COMMAND_WORDS:
            pass  # past the per-command limit: the word is dropped
        else:
            self.total += 1
            value = "".join(b.chars)
            unresolved = (self.s[b.a : b.e + 1 if b.after else b.e] or value  # as written
                          if b.unresolved else None)
            self.words.append(Word.placed_later(
                value, _Recipe(self.src, b.segs, b.a, b.e, b.after), unresolved,
                b.var_span if b.pieces == 1 else None, None if b.unresolved else b.derived))
        self.b = _Builder()

    def end_command(self) -> list[Word] | None:
        self.finish()
        if self.words:
            out = self.words
            self.words = []
            return out
        return None

    def blanks(self, i: int) -> int:
        self.finish()
        m = _BLANKS.match(self.s, i)  # a run of blanks (indentation) in one step
        i = m.end() if m else i + 1
        if len(self.words) >= MAX_COMMAND_WORDS:
            m = _CMD_END.search(self.s, i)  # skip the rest of an absurdly long command
            i = m.start() if m else self.n
        return i

    def heredoc_bodies(self, i: int) -> Generator[list[Word], None, int]:
        """After a newline at i - 1: skip the bodies of the heredocs opened on the line ending
        there, yielding the commands of those that are scripts; return the offset after them."""
        bodies: list[tuple[int, int]] = []
        for delim, strip, name in self.heredocs:
            read = self.depth < MAX_HEREDOC_DEPTH and (
                name in _SCRIPT_TAKERS
                or (self.redirected and not name.startswith(_INTERPRETERS)))
            start = i
            end, i = self.heredoc_end(i, delim, strip)
            if read and end > start:
                bodies.append((start, end))
        self.heredocs = []
        self.redirected = False
        for a, e in bodies:
            v = self.variables
            # the body's assignments stay in it: over the script's, not a copy of them
            inner = Vars(shell=ChainMap({}, v.shell), k8s=v.k8s, origins=v.origins,
                         per_pod=v.per_pod, derived=ChainMap({}, v.derived),
                         arithmetic=v.arithmetic)
            yield from tokenize(self.loc.sub(a, e), inner, self.depth + 1)
        return i

    def heredoc_end(self, i: int, delim: str, strip: bool) -> tuple[int, int]:
        """(end of the body starting at i, offset after its delimiter line)."""
        s, n = self.s, self.n
        end = i
        while i < n:
            e = s.find("\n", i)
            e = n if e == -1 else e
            line = s[i:e]
            end = i
            i = e + 1
            if (line.lstrip("\t") if strip else line).rstrip("\r") == delim:
                break
            end = min(i, n)
        return end, i

    def redirection(self, i: int, c: str) -> int:
        """``<``/``>`` and friends: the target word is dropped; ``<<`` opens a heredoc."""
        s, n = self.s, self.n
        self.finish()
        if s.startswith("<<", i) and not s.startswith("<<<", i):
            j = self.heredoc_opening(i)
            if j is not None:
                return j
        if c == ">" and not s.startswith(">&", i):
            self.redirected = True
        while i < n and s[i] in "<>&":
            i += 1
        if i < n and s[i].isdigit():
            return i
        self.skip_next = True
        return i

    def heredoc_opening(self, i: int) -> int | None:
        """Note the heredoc opened at s[i:] == "<<..."; None when no delimiter follows."""
        s, n = self.s, self.n
        j = i + 2
        strip = j < n and s[j] == "-"
        j += 1 if strip else 0
        while j < n and s[j] in " \t":
            j += 1
        m = re.match(r"""['"]?([A-Za-z0-9_.-]+)['"]?""", s[j:])
        if not m:
            return None
        self.heredocs.append((m.group(1), strip, _command_name(self.words, self.b)))
        return j + m.end()

    def single_quoted(self, i: int) -> int:
        s, n, b = self.s, self.n, self.b
        j = s.find("'", i + 1)
        j = n if j == -1 else j
        b.mark(i, min(j, n - 1))
        b.pieces += 2 if j > i + 1 else 0
        b.src(s, i + 1, j)
        return j + 1

    def double_quoted(self, i: int) -> int:
        s, n, b = self.s, self.n, self.b
        b.mark(i, i, after=False)
        j = i + 1
        while j < n and s[j] != '"':
            if s[j] == "\\" and j + 1 < n and s[j + 1] in '"\\$`\n':
                if s[j + 1] != "\n":
                    b.pieces += 2
                    b.src(s, j + 1, j + 2)
                j += 2
                continue
            if s[j] == "$":
                j = self.dollar(j)
                continue
            if s[j] == "`":
                b.unresolved = True
            m = _DQ_PLAIN.match(s, j)
            k = m.end() if m else j + 1
            b.pieces += 2
            b.src(s, j, k)
            j = k
        b.mark(i, min(j, n - 1))
        return j + 1

    def escaped(self, i: int) -> int:
        b = self.b
        b.mark(i, i + 1)
        b.pieces += 2
        b.src(self.s, i + 1, i + 2)
        return i + 2

    def backquoted(self, i: int) -> int:
        """A command substitution: kept as written, unresolved (nothing is run)."""
        s, b = self.s, self.b
        j = s.find("`", i + 1)
        j = self.n - 1 if j == -1 else j
        b.mark(i, j)
        b.unresolved = True
        b.src(s, i, j + 1)
        return j + 1

    def plain(self, i: int) -> int:
        b = self.b
        m = _PLAIN.match(self.s, i)
        j = m.end() if m else i + 1
        b.mark(i, j - 1)
        b.pieces += 2
        b.src(self.s, i, j)
        return j

    def affordable(self, val: Located, at: int) -> bool:
        """Whether ``val`` fits the expansion limits; if so, it is counted against them."""
        b = self.b
        size = len(val.value)
        if not self.budget.affordable(b.expanded, size):
            self.budget.refused_at(self.loc.path, self.src.pos(at))
            return False
        b.expanded += size
        return True

    def expand(self, name: str, default: str | None, start: int, end: int, op: str = ":-") -> None:
        s, b = self.s, self.b
        val = self.variables.shell.get(name)
        b.mark(start, end - 1)
        b.pieces += 1
        if val is not None and not self.affordable(val, start):
            b.unresolved = True  # left as written, like an expansion tpcheck cannot know
            b.src(s, start, end)
            return
        if op in (":+", "+"):
            # ${NAME:+word}: the word when NAME is set (and, with ':', not empty), else nothing
            if name in self.variables.per_pod or (
                    val is not None and not self.affordable(val, start)):
                b.unresolved = True
                b.src(s, start, end)
            elif val is not None and not (op == ":+" and val.value == "") and default:
                dstart = end - 1 - len(default)
                b.src(s, dstart, dstart + len(default))
            # unset: nothing, as ${NAME:-default} takes its default for a name never assigned
            return
        if val is not None and not (op.startswith(":") and val.value == "" and default is not None):
            b.expansion(val, start, self.variables.derived.get(name))
            b.var_span = val.span()
            return
        if val is None and name in self.variables.per_pod:
            default = None  # set on every pod, to a different value: the default never applies
        if default is not None and op in (":-", "-", ":=", "="):
            # the default's own characters, at their own place
            dstart = end - 1 - len(default)
            b.src(s, dstart, dstart + len(default))
            b.var_span = None
            if op in (":=", "="):
                self.variables.shell[name] = self.loc.sub(dstart, dstart + len(default))
            return
        b.unresolved = True
        b.src(s, start, end)

    def dollar(self, i: int) -> int:
        """Expand at s[i] == '$'; return the index after the expansion."""
        s, n, b = self.s, self.n, self.b
        if i + 1 >= n:
            b.mark(i, i)
            b.src(s, i, i + 1)
            return i + 1
        c = s[i + 1]
        if c == "{":
            return self.braced(i)
        if c == "(":
            return self.substitution(i)
        m = _NAME.match(s, i + 1)
        if m:
            self.expand(m.group(0), None, i, m.end())
            return m.end()
        if c in "@*#?$!0123456789-":
            b.mark(i, i + 1)
            b.unresolved = True
            b.src(s, i, i + 2)
            return i + 2
        b.mark(i, i)
        b.src(s, i, i + 1)
        return i + 1

    def braced(self, i: int) -> int:
        """``${NAME}``, ``${NAME:-default}`` (and ``-``, ``:=``, ``=``, ``:+``, ``+``); others
        stay as written."""
        s, b = self.s, self.b
        j = s.find("}", i + 2)
        if j == -1:
            j = self.n - 1
        inner = s[i + 2 : j]
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:-|-|:=|=|:\+|\+)(.*))?$", inner, re.S)
        if m and (m.group(2) is None or "$" not in (m.group(3) or "")):
            self.expand(m.group(1), m.group(3), i, j + 1, m.group(2) or ":-")
        else:
            b.mark(i, j)
            b.unresolved = True
            b.src(s, i, j + 1)
        return j + 1

    def substitution(self, i: int) -> int:
        """``$(...)``: unresolved, except ``$(NAME)``, Kubernetes' own variable reference."""
        s, n, b = self.s, self.n, self.b
        depth = 0
        j = i + 1
        while j < n:
            if s[j] == "(":
                depth += 1
            elif s[j] == ")":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        inner = s[i + 2 : j]
        kv = self.variables.k8s.get(inner) if _NAME.fullmatch(inner) else None
        b.mark(i, min(j, n - 1))
        b.pieces += 1
        if (j < n and len(inner) > 1 and inner[0] == "(" and inner[-1] == ")"
                and self.variables.arithmetic):
            val = self.arithmetic(i, j, inner[1:-1])
            if val is not None and self.affordable(val[0], i):
                b.expansion(val[0], i, val[1])
                b.var_span = val[1].span
                return j + 1
        if kv is not None and self.affordable(kv, i):
            b.expansion(kv, i)
            b.var_span = kv.span()
        else:
            b.unresolved = True
            b.src(s, i, min(j + 1, n))
        return j + 1


    def arithmetic(self, i: int, j: int, text: str) -> tuple[Located, Derived] | None:
        """``$(( text ))`` written at s[i:j + 1], when every variable in it is known: its
        value, placed on the whole expression, and how it was worked out."""
        shell = self.variables.shell

        def lookup(name: str) -> str | None:
            val = shell.get(name)
            return None if val is None else val.value

        res = evaluate(text, lookup, self.variables.per_pod)
        if res is None:
            return None
        p, q = self.src.pos(i), self.src.pos(j)
        span = Span(self.loc.path, p[0], p[1], q[0], q[1] + 1)
        written = " ".join(self.s[i : j + 1].replace("\\\n", " ").split())
        parts = [f"{name} {shell[name].value} ({self._origin(name)})" for name in res.names]
        said = f"{res.value} = {written} (l.{p[0]})" + (
            " with " + ", ".join(parts) if parts else "")
        derived = Derived(said, span)
        return Located(str(res.value), (), span, self.loc.path), derived

    def _origin(self, name: str) -> str:
        """Where a variable's value was written, for the derivation: "env, l.152"."""
        val = self.variables.shell[name]
        vs = val.span()
        where = f"l.{vs.line}" if val.path == self.loc.path else f"{val.path}:{vs.line}"
        k8s = self.variables.k8s.get(name) if name in self.variables.k8s else None
        kind = self.variables.origins.get(name) or (
            "env" if k8s is not None and k8s.value == val.value and k8s.span() == vs else "set")
        return f"{kind}, {where}"


def _command_name(words: list[Word], b: _Builder) -> str:
    """The name of the command a heredoc is opened on (``/usr/bin/tee`` → ``tee``)."""
    first = words[0].value if words else "".join(b.chars)
    return first.rsplit("/", 1)[-1]


def read_commands(
    loc: Located, variables: Vars, env: MutableMapping[str, str], depth: int = 0
) -> Iterator[tuple[list[Word], Mapping[str, str]]]:
    """Commands in ``loc`` with their own environment; ``sh -c STRING`` is read inside.

    Assignments update ``variables`` (so later commands see them); words before the command
    name are its environment; wrappers such as ``exec`` and ``nohup`` are dropped. A command's
    environment is its own assignments over ``env``, a view valid until the next command is
    read (copy it to keep it): a copy of the environment per command made 24,000 assignments
    and 25,000 commands quadratic (65-150 s, issue 28).
    """
    for words in tokenize(loc, variables):
        k = 0
        own: dict[str, str] = {}
        cmd_env = ChainMap(own, env)
        while k < len(words):
            w = words[k]
            if w.value in ("export", "local", "declare", "readonly", "typeset") and k + 1 < len(
                words
            ):
                k += 1
                continue
            m = _ASSIGN.match(w.value)
            if not m or (w.unresolved and "=" not in _prefix_before_expansion(w)):
                break
            name = m.group(1)
            start = len(name) + 1
            variables.derived.pop(name, None)
            if w.unresolved:  # X=$(hostname): X's value is unknown, so a later $X is unresolved
                variables.shell.pop(name, None)
            elif w.derived is not None and _INTEGER.fullmatch(m.group(2)):
                # N=$((A * B)): N's value stands on the whole expression, as written
                variables.shell[name] = Located(m.group(2), (), w.derived.span, w.text.path)
                variables.derived[name] = w.derived
            else:
                variables.shell[name] = w.text.sub(start, len(w.value))
            cmd_env[name] = m.group(2)
            k += 1
        rest = words[k:]
        while rest and rest[0].value in _WRAPPERS:
            rest = rest[1:]
            while rest and rest[0].value.startswith("-"):
                rest = rest[1:]
            while rest and _ASSIGN.match(rest[0].value):
                m2 = _ASSIGN.match(rest[0].value)
                assert m2 is not None
                cmd_env[m2.group(1)] = m2.group(2)
                rest = rest[1:]
        if not rest:
            env.update(own)
            continue
        if depth < 4:
            inner = shell_c_string(rest)
            if inner is not None:
                yield from read_commands(inner.text, variables, cmd_env, depth + 1)
                continue
        yield rest, cmd_env


def _prefix_before_expansion(w: Word) -> str:
    return w.value.split("$", 1)[0]


def shell_c_string(words: list[Word]) -> Word | None:
    """The command string of ``sh -c STRING`` (``bash -lc``, ``sh -c -- ...``), else None."""
    name = words[0].value.rsplit("/", 1)[-1]
    if name not in SHELLS:
        return None
    for k in range(1, len(words)):
        v = words[k].value
        if v.startswith("-") and "c" in v[1:] and not v.startswith("--"):
            j = k + 1
            if j < len(words) and words[j].value == "--":
                j += 1
            return words[j] if j < len(words) else None
        if not v.startswith("-"):
            return None
    return None


def read_shell_text(loc: Located, path: str, variables: Vars | None = None,
                    base_env: dict[str, str] | None = None) -> list[Deployment]:
    """Every engine launch in a shell script or command string."""
    from tpcheck.sources.argv import deployment_from_words, find_launch

    variables = variables if variables is not None else Vars()
    out: list[Deployment] = []
    try:
        for words, env in read_commands(loc, variables, dict(base_env or {})):
            docker = container_run(words)
            launch = find_launch([w.value for w in words])
            if docker is not None:
                image, at, extra, spans = docker
                own_entrypoint = bool(extra.pop("_entrypoint", False))
                if launch is not None and launch.index < at:
                    launch = None  # engine words among docker's own options
                if launch is None and not own_entrypoint:
                    launch = _image_launch(words, at, image)
                if launch is None:
                    continue
                from tpcheck.record import replace
                from tpcheck.sources.yamlnodes import engine_version

                d = deployment_from_words(path, words, launch, env=env)
                kw = {k: v for k, v in extra.items() if getattr(d, k) is None}
                if d.image is None:
                    kw.update(image=image, engine_version=engine_version(image, d.engine))
                out.append(replace(d, **kw, spans={**spans, **d.spans}))
                continue
            if launch is None:
                continue
            out.append(deployment_from_words(path, words, launch, env=env))
    except ShellTooLong as e:
        e.found = out
        raise
    return out


def read_shell(path: str, text: str) -> list[Deployment]:
    if "vllm" not in text and "sglang" not in text:
        return []  # every launcher find_launch knows names one of the two engines
    index = LineIndex(text)
    return read_shell_text(from_file(index, path), path)


# `docker run` / `podman run` options that take no value (the others take the next word
# unless written --opt=value)
_RUN_FLAGS = frozenset({"--rm", "-d", "--detach", "-i", "--interactive", "-t", "--tty", "-it",
                        "-ti", "-itd", "-dit", "--privileged", "--init", "-P", "--publish-all",
                        "--read-only", "--sig-proxy", "--no-healthcheck", "-q", "--quiet"})
_DEVICES = lazy_re(r"""["']*device=([0-9,]+)["']*$""")


def container_run(words: list[Word]
                  ) -> tuple[str, int, dict[str, object], dict[str, Span]] | None:
    """(image, index of the first word after it, GPU fields, their spans) of a
    ``docker run`` / ``podman run`` command; None for any other command. ``--gpus N`` and
    ``--gpus '"device=0,1"'`` give the GPU count; ``--gpus all`` gives none."""
    if len(words) < 3 or words[0].value.rsplit("/", 1)[-1] not in ("docker", "podman") or (
            words[1].value != "run"):
        return None
    extra: dict[str, object] = {}
    spans: dict[str, Span] = {}
    k = 2
    while k < len(words):
        v = words[k].value
        if not v.startswith("-") or v == "-":
            return v, k + 1, extra, spans
        opt, eq, val = v.partition("=")
        value_word = words[k] if eq else (words[k + 1] if k + 1 < len(words) else None)
        if not eq and opt not in _RUN_FLAGS:
            k += 1
            val = value_word.value if value_word is not None else ""
        if opt == "--gpus" and value_word is not None:
            n: int | None = int(val) if val.isdigit() else None
            dev = _DEVICES.match(val)
            if dev is not None:
                n = len([i for i in dev.group(1).split(",") if i])
            if n:
                extra["gpus_requested"] = n
                spans["gpus_requested"] = value_word.raw_span
        if opt == "--entrypoint":
            extra["_entrypoint"] = True
        k += 1
    return None


def _image_launch(words: list[Word], at: int, image: str) -> Launch | None:
    """The engine the image's own entrypoint runs with the words after it as arguments
    (``vllm/vllm-openai`` runs ``vllm serve``), when they are engine flags."""
    from tpcheck.sources.argv import Launch, infer_engine

    rest = [w.value for w in words[at:]]
    eng = infer_engine(rest, image)
    if eng is None or not any(v.startswith("--") for v in rest):
        return None
    positional = eng == "vllm" and bool(rest) and not rest[0].startswith("-")
    return Launch(eng, at, at, positional, inferred=True)
