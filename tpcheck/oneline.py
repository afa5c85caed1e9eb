"""Keep a path or value from a user's input from breaking a line of text output.

A file name or a setting may hold a newline, a carriage return, NEL (U+0085, a line break to
``str.splitlines()``), U+2028/U+2029 or an escape sequence (``\\x1b[31m`` recolours or rewrites a
terminal). The bidirectional controls (LRM/RLM U+200E/U+200F, the embeddings and overrides
U+202A-U+202E, the isolates U+2066-U+2069) reorder how the rest of the line is shown, so a path
can display as another one ("Trojan source", CVE-2021-42574). Text output and the error lines on
stderr promise one line per problem, shown as it is, so those characters are written the way
``repr`` writes them. JSON and SARIF keep the true string: their
encoders escape it already. A leaf module (it imports nothing) so the CLI's error printer pays
nothing for it.
"""

from __future__ import annotations

# C0 controls (tab, newline, ESC...), DEL, the C1 controls (NEL U+0085 among them), and the
# line and paragraph separators: every character ``str.splitlines()`` breaks at is here. Then the
# Unicode bidi controls (UAX #9 explicit formatting characters), which ``repr`` writes as \u....
_BIDI = [0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_CONTROLS = [*range(0x00, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, *_BIDI]
_ESCAPES = {c: repr(chr(c))[1:-1] for c in _CONTROLS}  # "\n", "\x1b", "\x85", "\u2028"...


def one_line(text: str) -> str:
    """``text`` with its control characters escaped as ``repr`` does, and nothing else changed
    (a backslash stays one backslash, so a Windows path reads as it did)."""
    return text.translate(_ESCAPES)
