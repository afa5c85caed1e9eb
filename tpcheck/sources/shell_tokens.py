"""The shell tokenizer: a text to commands of words (quotes, expansions, heredocs), run nothing."""

from __future__ import annotations

import re
from collections import ChainMap
from collections.abc import Generator, Iterator

from tpcheck.deferred import lazy_re
from tpcheck.sources.arith import evaluate
from tpcheck.sources.base import Deployment, Span
from tpcheck.sources.positions import Located
from tpcheck.sources.shell_recipes import Builder, Recipe, Source
from tpcheck.sources.shell_vars import Vars
from tpcheck.sources.words import Derived, Word, file_budget

_NAME = lazy_re(r"[A-Za-z_][A-Za-z0-9_]*")
# Runs the tokenizer can copy whole: no quote, expansion, escape, separator or operator.
_PLAIN = lazy_re(r"[^ \t\r\n;&|()<>'\"$`\\]+")
# What cannot start a plain word (a blank, a comment, a quote, an escape, an expansion, a
# redirection), and what ends one.
_NOT_PLAIN_START = frozenset(" \t\r#<>'\"\\$`")
_PLAIN_END = frozenset(" \t\r\n;&|()<>")
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
        self.src = Source(loc)
        self.variables = variables
        self.depth = depth
        self.words: list[Word] = []
        # (delimiter, <<- strips tabs, command name) of the heredocs opened on this line
        self.heredocs: list[tuple[str, bool, str]] = []
        self.redirected = False  # a ``>`` redirection on the line the heredocs were opened on
        self.b = Builder()
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
            elif self.b.started:
                i = self.word_part(i, c)
            elif c not in _NOT_PLAIN_START:
                i = self.plain_word(i)
            elif c == " " or c == "\t":  # between words: blanks() without a word to finish
                m = _BLANKS.match(s, i)
                i = m.end() if m else i + 1
                if len(self.words) >= MAX_COMMAND_WORDS:
                    m = _CMD_END.search(s, i)  # skip the rest of an absurdly long command
                    i = m.start() if m else n
            else:
                i = self.word_part(i, c)
        cmd = self.end_command()
        if cmd:
            yield cmd

    def plain_word(self, i: int) -> int:
        """A plain run at the start of a word: when a blank, separator or the end follows it,
        it is the whole word, made here without a Builder (most words of a launch are such)."""
        s = self.s
        m = _PLAIN.match(s, i)
        j = m.end() if m else i + 1
        if j < self.n and s[j] not in _PLAIN_END:  # quotes, an expansion or an escape follow
            b = self.b
            b.mark(i, j - 1)
            b.pieces += 2
            b.src(s, i, j)
            return j
        if self.skip_next:
            self.skip_next = False  # a redirection's target: dropped
        elif len(self.words) < MAX_COMMAND_WORDS:
            self.total += 1
            self.words.append(Word.placed_later(
                s[i:j], Recipe(self.src, [(i, j)], i, j - 1, True), None, None, None))
        return j

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
                value, Recipe(self.src, b.segs, b.a, b.e, b.after), unresolved,
                b.var_span if b.pieces == 1 else None, None if b.unresolved else b.derived))
        self.b = Builder()

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
        self.heredocs.append((m.group(1), strip, command_name(self.words, self.b)))
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


def command_name(words: list[Word], b: Builder) -> str:
    """The name of the command a heredoc is opened on (``/usr/bin/tee`` → ``tee``)."""
    first = words[0].value if words else "".join(b.chars)
    return first.rsplit("/", 1)[-1]


__all__ = ["MAX_COMMAND_WORDS", "MAX_HEREDOC_DEPTH", "MAX_WORDS", "ShellTooLong", "Vars",
           "command_name", "tokenize"]
