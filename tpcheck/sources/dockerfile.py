"""Dockerfiles, Makefiles and PowerShell scripts, read as the shell they hold.

Both are turned into a shell script of the same length with the same line breaks, so every
character keeps its line and column and the shell reader places findings on the Dockerfile's
own text:

- Dockerfile: ``ARG NAME=default`` and ``ENV NAME=value`` become assignments (the legacy
  ``ENV NAME value`` too, when the value is one word); ``RUN``, ``ENTRYPOINT`` and ``CMD`` keep
  their shell form, and their exec form (a JSON array) becomes single-quoted words, which the
  shell does not expand, as Docker does not. The final stage's exec-form ``ENTRYPOINT`` is
  joined to the ``CMD`` after it, as Docker runs them; a ``CMD`` of bare flags on an engine
  image (``FROM vllm/vllm-openai``) is the engine's arguments. Comment lines inside a
  continuation are dropped, as Docker drops them; other instructions are blanked.
- Makefile: recipe lines (tab-indented) are shell; ``NAME ?= value`` / ``:=`` / ``=`` become
  assignments and ``$(NAME)`` references ``${NAME}``; everything else is blanked.
- PowerShell: a backtick ending a line continues it as a backslash does, ``$env:NAME`` reads
  as ``${NAME:-}`` and ``$env:NAME = "value"`` / ``$NAME = "value"`` become assignments.

``pip install vllm==0.6.3`` (``uv pip install "sglang[all]==0.4.2.post4"``) in a ``RUN`` or a
recipe names the engine release the launch runs (``pin_release``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable

from tpcheck.deferred import lazy_re
from tpcheck.record import replace
from tpcheck.sources.base import Deployment, ReadResult

_INSTRUCTION = lazy_re(r"[ \t]*([A-Za-z]+)([ \t]+|$)")
_ASSIGN_NAME = lazy_re(r"[A-Za-z_][A-Za-z0-9_]*")
_KEEP = frozenset({"RUN", "ENTRYPOINT", "CMD"})
_ARG_DEFAULT = lazy_re(r"([A-Za-z_][A-Za-z0-9_]*)=(\S+)")
# $NAME, ${NAME}, ${NAME:-default} in a FROM line
_REF = lazy_re(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")
# pip/uv pins of an engine: vllm==0.6.3, "sglang[all]==0.4.2.post4", vllm===0.8.5
PIN = lazy_re(r"""(?<![\w.-])(vllm|sglang)(?:\[[^\]]*\])?===?([0-9][0-9A-Za-z.+\-]*)""")
_PIP = lazy_re(r"\bpip3?\s+install\b|\buv\s+pip\s+install\b|\buv\s+add\b")


class _Stage:
    def __init__(self, image: str | None) -> None:
        self.image = image
        self.entrypoint: tuple[int, int, bool] | None = None  # (start, end, exec form)
        self.cmd: tuple[int, int, bool] | None = None


def _exec_words(out: list[str], start: int, end: int) -> bool:
    """Rewrite the JSON array at out[start:end] as single-quoted shell words in place; False
    (left as written) when it is no array of plain strings."""
    raw = "".join(out[start:end])
    try:
        items = json.loads(raw.replace("\\\n", "  "))
    except ValueError:
        return False
    if not isinstance(items, list) or not all(isinstance(i, str) and "'" not in i
                                              and "\\" not in i for i in items):
        return False
    in_str = False
    for k in range(start, end):
        c = out[k]
        if in_str:
            if c == '"':
                out[k], in_str = "'", False
        elif c == '"':
            out[k], in_str = "'", True
        elif c in "[],":
            out[k] = " "
    return True


def dockerfile_to_shell(text: str) -> tuple[str, str | None, tuple[int, int] | None]:
    """(the shell text, the final stage's image, the final stage's bare-args CMD as offsets or
    None); see the module docstring."""
    out = list(text)
    n = len(text)
    stage = _Stage(None)
    global_args: dict[str, str] = {}
    seen_from = False
    froms = [m.start() for m in re.finditer(r"(?im)^[ \t]*FROM[ \t]", text)]
    last_from = froms[-1] if froms else 0
    i = 0
    while i < n:
        eol = text.find("\n", i)
        eol = n if eol == -1 else eol
        stripped = text[i:eol].lstrip()
        if not stripped or stripped.startswith("#"):
            _blank(out, i, eol)
            i = eol + 1
            continue
        end = _extent(text, out, i, eol)
        m = _INSTRUCTION.match(text, i, end)
        word = m.group(1).upper() if m else ""
        rest = m.end() if m else i
        if word == "FROM":
            stage = _Stage(_from_image(text[rest:end], global_args))
            seen_from = True
            _blank(out, i, end)
        elif word in ("ARG", "ENV"):
            if not seen_from and word == "ARG":  # ARG before FROM: what FROM may name
                arg = _ARG_DEFAULT.match(text, rest, end)
                if arg:
                    global_args[arg.group(1)] = arg.group(2).strip("\"'")
            _blank(out, i, rest)
            if i < last_from and seen_from:
                _blank(out, rest, end)  # an earlier stage's ARG/ENV: not in the final image
            else:
                _assignments(text, out, rest, end, legacy=word == "ENV")
        elif word in _KEEP:
            _keep(text, out, stage, word, (i, rest, end))
        else:
            _blank(out, i, end)
        i = end + 1
    bare = _final_command(out, stage)  # edits out: before the join
    return "".join(out), stage.image, bare


def _extent(text: str, out: list[str], i: int, eol: int) -> int:
    """Where the instruction starting at ``i`` ends: continuation lines end in a backslash;
    comment lines inside it are dropped (they keep a backslash so the shell keeps joining)."""
    n = len(text)
    end = eol
    cont = _continued(text, i, end)
    while end < n and cont:
        nxt = text.find("\n", end + 1)
        nxt = n if nxt == -1 else nxt
        body = text[end + 1:nxt]
        if body.lstrip().startswith("#"):
            _blank(out, end + 1, nxt)
            if nxt > end + 1:
                out[nxt - 1] = "\\"
        else:
            cont = _continued(text, end + 1, nxt)
        end = nxt
    return end


def _from_image(body: str, global_args: dict[str, str]) -> str | None:
    """The image a ``FROM`` names, with the ARGs declared before it substituted; None when it
    names none or a reference stays unresolved."""
    args = [a for a in body.split() if not a.startswith("--")]
    if not args:
        return None
    image = _REF.sub(lambda r: global_args.get(
        r.group(1) or r.group(3), r.group(0) if r.group(2) is None else r.group(2)), args[0])
    return None if "$" in image else image


def _keep(text: str, out: list[str], stage: _Stage, word: str,
          at: tuple[int, int, int]) -> None:
    """A RUN, ENTRYPOINT or CMD: the keyword blanked, an exec form turned into quoted words,
    and the stage's ENTRYPOINT/CMD remembered for joining."""
    i, rest, end = at
    _blank(out, i, rest)
    body = text[rest:end].strip()
    exec_form = body.startswith("[") and _exec_words(out, rest, end)
    if word == "ENTRYPOINT":
        stage.entrypoint = (rest, end, exec_form)
    elif word == "CMD":
        stage.cmd = (rest, end, exec_form)


def _final_command(out: list[str], stage: _Stage) -> tuple[int, int] | None:
    """Join the final stage's exec-form ENTRYPOINT to its CMD as Docker runs them; the CMD's
    offsets when it stands alone (bare arguments to the image's own entrypoint)."""
    ep, cmd = stage.entrypoint, stage.cmd
    if ep is not None and cmd is not None and ep[2] and cmd[2] and ep[1] < cmd[0]:
        # ENTRYPOINT [...] then CMD [...]: one command, joined by continuations over the
        # lines between (each already blank, or a comment, in a final stage)
        _join(out, ep[1], cmd[0])
    elif ep is None and cmd is not None:
        return (cmd[0], cmd[1])
    return None


def _continued(text: str, start: int, eol: int) -> bool:
    """Whether the line ending at ``eol`` ends in a backslash (blanks after it allowed)."""
    k = eol - 1
    while k >= start and text[k] in " \t\r":
        k -= 1
    return k >= start and text[k] == "\\"


def _join(out: list[str], a: int, b: int) -> bool:
    """End every line between offsets ``a`` and ``b`` with a backslash, when each of them is
    blank here and has room for one."""
    lines: list[int] = []  # offsets of the newlines between
    for k in range(a, b):
        if out[k] == "\n":
            lines.append(k)
        elif out[k] not in " \t":
            return False
    for k in lines:
        if k == 0 or out[k - 1] == "\n":
            return False  # an empty line: no room for the backslash
        out[k - 1] = "\\"
    return True


def _blank(out: list[str], a: int, b: int) -> None:
    for k in range(a, min(b, len(out))):
        if out[k] != "\n":
            out[k] = " "


def _assignments(text: str, out: list[str], a: int, b: int, *, legacy: bool) -> None:
    """``NAME=value ...`` stays; ``ARG NAME`` (no default) is blanked; legacy ``ENV NAME value``
    becomes ``NAME=value`` when the value is one word, else it is blanked."""
    body = text[a:b]
    first = _ASSIGN_NAME.match(body)
    if first is None:
        _blank(out, a, b)
        return
    after = body[first.end():]
    if after.startswith("="):
        return  # NAME=value [NAME2=value2 ...]: shell assignments as written
    words = after.split()
    if legacy and len(words) == 1 and "\\" not in after:
        out[a + first.end()] = "="
        k = a + first.end() + 1
        while k < b and text[k] in " \t":
            out[k] = ""  # the separating blanks go; the value keeps its place after them
            k += 1
        # keep the length: put the removed blanks before the name instead
        removed = k - (a + first.end() + 1)
        out[a] = " " * removed + out[a]
        return
    _blank(out, a, b)


_MAKE_ASSIGN = lazy_re(r"([A-Za-z_][A-Za-z0-9_]*)[ \t]*(\?=|:=|::=|\+=|=)[ \t]*")
_MAKE_REF = lazy_re(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def makefile_to_shell(text: str) -> str:
    """Recipes as shell, variable definitions as assignments, the rest blanked (same length)."""
    out: list[str] = []
    in_recipe = False
    for line in text.split("\n"):
        cont = in_recipe
        in_recipe = False
        if line.startswith("\t") or cont:
            body = line
            stripped = body.lstrip("\t ")
            lead = len(body) - len(stripped)
            k = 0
            while k < len(stripped) and stripped[k] in "@-+" and not cont:
                k += 1
            new = " " * (lead + k) + stripped[k:]
            in_recipe = new.rstrip().endswith("\\")
            out.append(_MAKE_REF.sub(lambda m: "${" + m.group(1) + "}", new))
            continue
        m = _MAKE_ASSIGN.match(line)
        value = line[m.end():] if m else ""
        if m and "\\" not in value and "$(shell" not in value:
            # NAME ?= value -> "   NAME=value": the value keeps its column
            name = m.group(1)
            pad = m.end() - len(name) - 1
            out.append(" " * pad + name + "=" + _MAKE_REF.sub(
                lambda r: "${" + r.group(1) + "}", value))
            continue
        out.append(" " * len(line))
    return "\n".join(out)


_PS_ASSIGN = lazy_re(r"([ \t]*)\$(?:env:)?([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*")
_PS_ENV = lazy_re(r"\$env:([A-Za-z_][A-Za-z0-9_]*)", re.IGNORECASE)


def powershell_to_shell(text: str) -> str:
    """A PowerShell script as shell of the same length (see the module docstring)."""
    out: list[str] = []
    for line in text.split("\n"):
        m = _PS_ASSIGN.match(line)
        if m and not line[m.end():].startswith("="):
            name = m.group(2)
            pad = m.end() - len(name) - 1
            line = " " * pad + name + "=" + line[m.end():]
        line = _PS_ENV.sub(lambda r: "${" + r.group(1) + ":-}", line)
        body = line.rstrip(" \t\r")
        if body.endswith("`"):
            line = body[:-1] + "\\" + line[len(body):]
        out.append(line)
    return "\n".join(out)


def read_powershell(path: str, text: str) -> ReadResult:
    return _read_as_shell(path, text, powershell_to_shell)


def _read_as_shell(path: str, text: str, to_shell: Callable[[str], str]) -> ReadResult:
    """Read a file rewritten as shell of the same length, so positions stay the file's own."""
    from tpcheck.sources.positions import LineIndex, from_file
    from tpcheck.sources.shell import read_shell_text

    if "vllm" not in text and "sglang" not in text:
        return ReadResult(path, (), (), text)
    found = read_shell_text(from_file(LineIndex(to_shell(text)), path), path)
    return ReadResult(path, with_pins(found, text, path), (), text)


def pin_release(text: str) -> tuple[str, str, int] | None:
    """(engine, version, offset) of the last ``pip install`` / ``uv pip install`` pin of vLLM
    or SGLang in ``text``, or None."""
    found: tuple[str, str, int] | None = None
    for cmd in re.finditer(r"(?:\\\n|[^\n;&|])+", text):
        seg = cmd.group(0)
        if not _PIP.search(seg):
            continue
        for m in PIN.finditer(seg):
            found = (m.group(1), m.group(2).rstrip(".-"), cmd.start() + m.start())
    return found


def with_pins(found: Iterable[Deployment], text: str, shown: str) -> tuple[Deployment, ...]:
    """The launches with their engine release from a pip pin in the same file, where the image
    tag pins none; the pin's line says where. The file is searched once, and only when it
    installs something."""
    out = tuple(found)
    pin = pin_release(text) if out and "install" in text else None
    if pin is None:
        return out
    line = text.count("\n", 0, pin[2]) + 1
    said = f"from `{pin[0]}=={pin[1]}` pinned at {shown}:{line}"
    return tuple(d if d.engine != pin[0] or d.engine_version is not None
                 else replace(d, engine_version=pin[1], engine_version_from=said) for d in out)


def read_dockerfile(path: str, text: str) -> ReadResult:
    from tpcheck.sources.argv import Launch, deployment_from_words, infer_engine
    from tpcheck.sources.positions import LineIndex, from_file
    from tpcheck.sources.shell import Vars, read_commands, read_shell_text, tokenize
    from tpcheck.sources.yamlnodes import engine_version

    if "vllm" not in text and "sglang" not in text:
        return ReadResult(path, (), (), text)
    shell, image, bare = dockerfile_to_shell(text)
    index = LineIndex(shell)
    variables = Vars()
    found = read_shell_text(from_file(index, path), path, variables)
    if not found and bare is not None and image:
        vars2 = Vars()
        for _ in read_commands(from_file(index, path, 0, bare[0]), vars2, {}):
            pass
        for words in tokenize(from_file(index, path, bare[0], bare[1]), vars2):
            values = [w.value for w in words]
            eng = infer_engine(values, image)
            if eng is None or not any(v.startswith("--") for v in values):
                continue
            positional = eng == "vllm" and bool(words) and not values[0].startswith("-")
            found.append(deployment_from_words(
                path, words, Launch(eng, 0, 0, positional, inferred=True)))
    out: list[Deployment] = []
    for d in found:
        if d.model is None and "model" not in d.unresolved and not d.options:
            continue  # an ENTRYPOINT the run command gives every argument to
        if image and d.image is None:
            d = replace(d, image=image, engine_version=d.engine_version
                        or engine_version(image, d.engine))
        out.append(d)
    return ReadResult(path, with_pins(out, text, path), (), text)


def read_makefile(path: str, text: str) -> ReadResult:
    return _read_as_shell(path, text, makefile_to_shell)
