"""Where engine hints are written in a text, found with ``str.find`` before any YAML node is
walked: what ``kube.Walker`` reacts to, and whether a broken YAML file is worth recovering.

A leaf module (issue 15): ``yamlctx`` needed it from ``kube``, which imports ``yamlctx``.
"""

from __future__ import annotations

from tpcheck.deferred import lazy_re
from tpcheck.engines.flags import ENGINE_ONLY_FLAGS

# What a subtree's raw text must contain for the walk to find anything in it: an engine name
# (launchers, images, LAUNCH_HINT), the keys of the CRDs and values files ``kube.Walker``
# reads, or an option string that ``infer_engine`` counts. Checked on the source text before
# walking, so the Services, ConfigMaps and probes around a launch are never visited. str.find
# and one simple pattern: a case-insensitive alternation costs five times more on a 1,000-file
# run.
# ("vllmconfig" is found as the "vllm" it starts with: the same offset, one scan less.)
_HINT_WORDS = (
    "vllm", "sglang", "modelspec", "tensorparallelsize", "engine_kwargs",
    "resourceprofile", "tensor_parallel_size", "tpsize", "leaderworkerset",
)
_HINT_FLAGS = (
    ENGINE_ONLY_FLAGS["vllm"] | ENGINE_ONLY_FLAGS["sglang"]
    | {"--tensor-parallel-size", "--pipeline-parallel-size"}
)
# Long options, and the few one-dash ones by name: a generic ``-x`` would match inside every
# hyphenated word (vllm-openai, llama-3) and triple the candidates checked in Python.
_SHORTS = tuple(sorted(f[1:] for f in _HINT_FLAGS if not f.startswith("--")))


# [\w-] among ASCII characters: a word's run is stripped in C (str.lstrip), and only a
# non-ASCII character where it stops is asked in Python (``\w`` there: str.isalnum).
_ASCII_WORDY = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"


def _wordy(c: str) -> bool:
    r"""``[\w-]`` of one character (``\w``: ``str.isalnum`` or ``_``)."""
    return c.isalnum() or c == "_" or c == "-"


def _word_end(text: str, j: int) -> int:
    r"""Where ``[\w-]*`` from ``j`` ends."""
    n = len(text)
    while j < n:
        chunk = text[j:j + 64]
        j += len(chunk) - len(chunk.lstrip(_ASCII_WORDY))
        if j >= n:
            return n
        c = text[j]
        if c in _ASCII_WORDY:
            continue  # the 64 characters were all wordy: the next chunk
        if c.isascii() or not c.isalnum():
            return j
        j += 1  # a non-ASCII letter or digit: \w
    return n


_OPTION = lazy_re(r"--[A-Za-z][\w-]*|-(?:" + "|".join(_SHORTS) + r")(?![\w-])")
# The first texts of a process are scanned with str methods (_option_scan): compiling _OPTION
# costs ~0.6 million instructions, what a one-file lint's scans cost together; past them the
# compiled pattern finds the same offsets ~0.1 million instructions a file faster.
_SCANNED_FIRST = 4
_scans = [0]


def _option_offsets(text: str, flags: frozenset[str] | set[str]) -> list[int]:
    """Where ``_OPTION`` finds one of ``flags`` in ``text``."""
    if _scans[0] < _SCANNED_FIRST:
        _scans[0] += 1
        return _option_scan(text, flags)
    return [m.start() for m in _OPTION.finditer(text) if m[0] in flags]


def _option_scan(text: str, flags: frozenset[str] | set[str]) -> list[int]:
    r"""``_option_offsets`` without the pattern: where ``re.finditer`` of
    ``--[A-Za-z][\w-]*|-(?:dp|pp|tp)(?![\w-])`` finds one of ``flags``, each match consuming
    its text as finditer's do. Found with ``str.find`` and ``str.lstrip``, so a Python step is
    taken per option written, not per dash (a YAML file is mostly list dashes)."""
    n = len(text)
    find = text.find
    starts: list[tuple[int, int]] = []  # (where a match would start, where it would end)
    i = find("--")
    while i != -1:
        j = i + 2
        if text.startswith("-", j):  # a run of dashes: only its last two can start one
            rest = text[j:j + 64]
            j += len(rest) - len(rest.lstrip("-"))
            while j < n and text[j] == "-":
                j += 1
            i = j - 2
        c = text[j:j + 1]
        if c.isascii() and c.isalpha():
            starts.append((i, _word_end(text, j + 1)))
        i = find("--", j)
    for short in _SHORTS:
        word = "-" + short
        k = len(word)
        i = find(word)
        while i != -1:
            e = i + k
            if e >= n or not _wordy(text[e]):
                starts.append((i, e))
            i = find(word, i + 1)
    if not starts:
        return []
    starts.sort()
    out: list[int] = []
    consumed = 0
    for i, e in starts:
        if i >= consumed:
            if text[i:e] in flags:
                out.append(i)
            consumed = e
    return out


def hint_offsets(text: str) -> list[int]:
    """Sorted offsets in ``text`` where something the walker reacts to is written."""
    low = text.lower()
    if len(low) != len(text):  # a character whose lower case is longer: offsets would shift
        low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    out: list[int] = []
    find = low.find
    for word in _HINT_WORDS:
        i = find(word)
        while i != -1:
            out.append(i)
            i = find(word, i + 1)
    out.extend(_option_offsets(text, _HINT_FLAGS))
    out.sort()
    return out
