"""Where a template's ``{{ }}`` actions are and their words, found in one pass, never run."""

from __future__ import annotations

from tpcheck.deferred import lazy_re

_PLAIN_RUN = lazy_re(r"[^`\"}/]+")  # characters inside an action that need no care


_TOKEN = lazy_re(r"`[^`]*`|\"(?:\\.|[^\"\\])*\"|[^\s|()]+|\||\(|\)")


def scan_actions(text: str) -> list[tuple[int, int, str]] | int:
    """Every action as (start, end, body), or the offset of the first one never closed.

    One pass: a comment ends at ``*/``, a raw or quoted string may hold ``}}``; an action
    that is never closed stops the scan there (no quadratic retry from every ``{{``)."""
    out: list[tuple[int, int, str]] = []
    n = len(text)
    i = text.find("{{")
    while i != -1:
        j = i + 2
        if text.startswith("-", j) and j + 1 < n and text[j + 1].isspace():
            j += 1
        k = j
        while k < n and text[k] in " \t\r\n":
            k += 1
        if text.startswith("/*", k):
            c = text.find("*/", k + 2)
            if c == -1:
                return i
            e = text.find("}}", c + 2)
            if e == -1 or text[c + 2 : e].strip() not in ("", "-"):
                return i
            out.append((i, e + 2, "/*"))
            i = text.find("{{", e + 2)
            continue
        while True:
            if k >= n:
                return i
            ch = text[k]
            if ch == "`":
                c = text.find("`", k + 1)
                if c == -1:
                    return i
                k = c + 1
            elif ch == '"':
                k += 1
                while k < n and text[k] not in '"\n':
                    k += 2 if text[k] == "\\" else 1
                if k >= n or text[k] == "\n":
                    return i
                k += 1
            elif text.startswith("}}", k):
                break
            else:
                m = _PLAIN_RUN.match(text, k)
                k = m.end() if m else k + 1
        body = text[j:k]
        if body.endswith("-") and body[:-1][-1:].isspace():
            body = body[:-1]
        out.append((i, k + 2, body))
        i = text.find("{{", k + 2)
    return out


def block_ends(actions: list[tuple[int, int, str]]) -> dict[int, int]:
    """Index of each ``range`` action -> index of its ``end`` (blocks nest)."""
    out: dict[int, int] = {}
    stack: list[tuple[int, str]] = []
    for k, (_, _, body) in enumerate(actions):
        head = body.split(None, 1)[0] if body.strip() else ""
        if head in ("if", "range", "with", "define", "block"):
            stack.append((k, head))
        elif head == "end" and stack:
            start, kind = stack.pop()
            if kind == "range":
                out[start] = k
    return out


def only_actions(text: str, actions: list[tuple[int, int, str]], k: int, line_end: int) -> bool:
    """Whether nothing but blanks and further actions follows action ``k`` on its line."""
    at = actions[k][1]
    for i in range(k + 1, len(actions)):
        a, b, _ = actions[i]
        if a >= line_end:
            break
        if text[at:a].strip():
            return False
        at = b
    return not text[at:line_end].strip()


def tokens(body: str) -> list[str]:
    return _TOKEN.findall(body)
