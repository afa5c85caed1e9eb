"""Terraform ``templatefile`` launches (``.tftpl``): the template read as the shell it renders
to, with ``${name}`` filled where the ``.tf`` files of the same folder fix its value.

Terraform renders ``templatefile(path, vars)`` with only the keys of ``vars``; a module usually
passes ``{ model = var.model }`` and declares ``variable "model" { default = "..." }``. The
rule, in order: a ``templatefile`` call in the folder that names this template gives each key
its literal or the ``default`` of the ``var.X`` it passes; a template name no call maps takes
the ``default`` of the variable of the same name. Only literal defaults count (a string without
``${``, a number, a bool): an expression or a ``-var`` at apply time is not known here, and the
name stays unresolved. ``$${`` is Terraform's escape for a literal ``${`` (a shell variable).
"""

from __future__ import annotations

import os
import re

from tpcheck.sources.base import ReadResult
from tpcheck.sources.positions import LineIndex, Located, from_file

MAX_TF_FILES = 50
MAX_TF_BYTES = 1024 * 1024
MAX_BLOCK = 64 * 1024  # characters scanned for one block's closing brace
_VARIABLE = re.compile(r'^[ \t]*variable[ \t]+"([A-Za-z_][\w-]*)"[ \t]*\{', re.M)
_DEFAULT = re.compile(r'^[ \t]*default[ \t]*=[ \t]*(?:"((?:[^"\\\n]|\\.)*)"|'
                      r"(-?\d+(?:\.\d+)?|true|false))[ \t]*(?:#.*|//.*)?$", re.M)
_CALL = re.compile(r'templatefile\(\s*"([^"\n]*)"\s*,\s*\{')
_ENTRY = re.compile(r'^[ \t,]*([A-Za-z_][\w-]*)[ \t]*=[ \t]*(?:var\.([A-Za-z_][\w-]*)|'
                    r'"((?:[^"\\\n$]|\\.)*)"|(-?\d+(?:\.\d+)?|true|false))[ \t]*,?[ \t]*'
                    r"(?:#.*|//.*)?$", re.M)


def _block(text: str, brace: int, stop: int | None = None) -> int:
    """The offset of the ``}`` closing the block whose ``{`` is at ``brace`` (strings skipped),
    looked for up to ``stop`` (the next top-level block: blocks of one kind do not nest) and
    at most MAX_BLOCK characters on, so unclosed braces cost a bounded scan each."""
    depth, i = 0, brace
    n = min(len(text) if stop is None else stop, brace + MAX_BLOCK)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return n


def _literal(loc: Located, m: re.Match[str], string: int, other: int) -> Located:
    g = string if m.group(string) is not None else other
    return loc.sub(m.start(g), m.end(g))


def _tf_files(folder: str) -> list[tuple[str, str]]:
    from tpcheck.sources.files import decode_utf8_sig, read_capped

    try:
        names = sorted(n for n in os.listdir(folder or ".") if n.endswith(".tf"))
    except OSError:
        return []
    out: list[tuple[str, str]] = []
    for n in names[:MAX_TF_FILES]:
        p = os.path.join(folder, n)
        try:
            out.append((p, decode_utf8_sig(read_capped(p, MAX_TF_BYTES))))
        except (OSError, UnicodeDecodeError):
            continue
    return out


def template_values(template: str) -> dict[str, tuple[Located, str]]:
    """Template variable → (its value placed in the .tf file, where it was read)."""
    defaults: dict[str, tuple[Located, str]] = {}
    calls: list[tuple[str, str, int, int]] = []  # (tf file, its text, map start, map end)
    for path, text in _tf_files(os.path.dirname(template)):
        loc = from_file(LineIndex(text), path)
        starts = [m for m in _VARIABLE.finditer(text)]
        for k, m in enumerate(starts):
            end = _block(text, m.end() - 1, starts[k + 1].start() if k + 1 < len(starts) else None)
            body = _DEFAULT.search(text, m.end(), end)
            if body is not None and (body.group(1) is None or "${" not in body.group(1)):
                value = _literal(loc, body, 1, 2)
                line = text.count("\n", 0, body.start()) + 1
                defaults[m.group(1)] = (value, f'variable "{m.group(1)}" default at '
                                               f"{os.path.basename(path)}:{line}")
        for c in _CALL.finditer(text):
            if os.path.basename(c.group(1)) == os.path.basename(template) and not calls:
                calls.append((path, text, c.end(), _block(text, c.end() - 1)))
    if not calls:
        return defaults
    out: dict[str, tuple[Located, str]] = {}
    for path, text, start, end in calls:  # several calls may pass different values: the first
        loc = from_file(LineIndex(text), path)
        for e in _ENTRY.finditer(text, start, end):
            line = text.count("\n", 0, e.start()) + 1
            if e.group(2) is not None:
                hit = defaults.get(e.group(2))
                if hit is not None:
                    out[e.group(1)] = (hit[0], f"var.{e.group(2)} passed at "
                                               f"{os.path.basename(path)}:{line}, {hit[1]}")
            else:
                where = f"{os.path.basename(path)}:{line}"
                out[e.group(1)] = (_literal(loc, e, 3, 4),
                                   f"the literal passed to templatefile at {where}")
    return out


def read_tftpl(path: str, text: str) -> ReadResult:
    """A ``.tftpl`` read as shell, its Terraform variables filled from the folder's .tf files."""
    from tpcheck.sources.dockerfile import with_pins
    from tpcheck.sources.schedulers import with_slurm
    from tpcheck.sources.shell import Vars, read_shell_text

    if "vllm" not in text and "sglang" not in text:
        return ReadResult(path, (), (), text)
    values = template_values(path) if "${" in text else {}
    shell = text.replace("$${", " ${")  # same length: positions stay the file's own
    variables = Vars(shell={k: v for k, (v, _) in values.items()},
                     origins={k: why for k, (_, why) in values.items()})
    found = read_shell_text(from_file(LineIndex(shell), path), path, variables)
    used = [f"${{{k}}} from {why}" for k, (_, why) in values.items() if f"${{{k}}}" in text]
    if used:
        from tpcheck.record import replace

        note = "Terraform values: " + "; ".join(used)
        found = [replace(d, notes=(*d.notes, note)) for d in found]
    return ReadResult(path, with_pins(with_slurm(found, path, text), text, path), (), text)
