"""Keep a path or value from a user's input from breaking a line of text output.

A file name or a setting may hold a newline, a carriage return, NEL (U+0085, a line break to
``str.splitlines()``), U+2028/U+2029 or an escape sequence (``\\x1b[31m`` recolours or rewrites a
terminal). The bidirectional controls (all of UAX #9's explicit formatting characters: LRM/RLM
U+200E/U+200F, the embeddings and overrides U+202A-U+202E, the isolates U+2066-U+2069, the
Arabic letter mark U+061C) reorder how the rest of the line is shown, so a path can display as
another one ("Trojan source", CVE-2021-42574). The zero-width characters that join nothing
(U+200B, U+2060-U+2064, U+FEFF, U+180E) make two names look the same; ZWNJ and ZWJ (U+200C,
U+200D) stay, as emoji sequences and Persian or Indic words need them. Text output, plan's
table and the error lines on stderr promise one line per problem, shown as it is, so those
characters are written the way ``repr`` writes them; GitHub's workflow commands get GitHub's
own escaping on top (``github_data``, ``github_property``). JSON and SARIF keep the true
string: their encoders escape it already. A leaf module (it imports nothing) so the CLI's error
printer pays nothing for it.
"""

from __future__ import annotations

# C0 controls (tab, newline, ESC...), DEL, the C1 controls (NEL U+0085 among them), and the
# line and paragraph separators: every character ``str.splitlines()`` breaks at is here. Then the
# Unicode bidi controls (UAX #9 explicit formatting characters) and the zero-width characters,
# written as \u.... (``repr`` leaves some of them, e.g. U+200B, as they are).
_BIDI = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_ZERO_WIDTH = [0x180E, 0x200B, *range(0x2060, 0x2065), 0xFEFF]
_CONTROLS = [*range(0x00, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, *_BIDI, *_ZERO_WIDTH]
_ESCAPES = {c: repr(chr(c))[1:-1] if not chr(c).isprintable() else f"\\u{c:04x}"
            for c in _CONTROLS}  # "\n", "\x1b", "\x85", "\u2028", "\u200b"...
# GitHub's workflow commands carry CR and LF themselves (%0D, %0A): the rest is escaped as above.
_GITHUB = {c: e for c, e in _ESCAPES.items() if c not in (0x0A, 0x0D)}


def one_line(text: str) -> str:
    """``text`` with its control characters escaped as ``repr`` does, and nothing else changed
    (a backslash stays one backslash, so a Windows path reads as it did)."""
    return text.translate(_ESCAPES)


def github_data(text: str) -> str:
    """A workflow command's message: GitHub's own escapes for ``%``, CR and LF (which the
    runner turns back into the true characters) and every other control escaped as above, since
    a runner's log is a terminal too."""
    return (text.translate(_GITHUB).replace("%", "%25").replace("\r", "%0D")
            .replace("\n", "%0A"))


def github_property(text: str) -> str:
    """A workflow command's property (``file=``, ``title=``): the data escapes plus ``:`` and
    ``,``, which would end the property."""
    return github_data(text).replace(":", "%3A").replace(",", "%2C")
