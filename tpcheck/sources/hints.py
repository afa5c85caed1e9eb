"""Where engine hints are written in a text, found with ``str.find`` before any YAML node is
walked: what ``kube.Walker`` reacts to, and whether a broken YAML file is worth recovering.

A leaf module (issue 15): ``yamlctx`` needed it from ``kube``, which imports ``yamlctx``.
"""

from __future__ import annotations

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


def _wordy(c: str) -> bool:
    """``[\\w-]`` of one character (``\\w``: ``str.isalnum`` or ``_``)."""
    return c.isalnum() or c == "_" or c == "-"


def _option_offsets(text: str, flags: frozenset[str] | set[str]) -> list[int]:
    """Where ``re.finditer(r"--[A-Za-z][\\w-]*|-(?:dp|pp|tp)(?![\\w-])", text)`` (the short
    options from ``_HINT_FLAGS``) finds one of ``flags``, scanned with ``str.find`` from dash
    to dash, each match consuming its text as finditer's do. Compiling that pattern cost a
    one-file lint ~0.6 million instructions; equal offsets on every file of the corpus and
    the fixtures and on 300,000 random texts."""
    out: list[int] = []
    find = text.find
    n = len(text)
    i = find("-")
    while i != -1:
        if text.startswith("-", i + 1):
            c = text[i + 2:i + 3]
            if c.isascii() and c.isalpha():
                end = i + 3
                while end < n and _wordy(text[end]):
                    end += 1
                if text[i:end] in flags:
                    out.append(i)
                i = find("-", end)
                continue
        nxt = i + 1
        for short in _SHORTS:
            if text.startswith(short, i + 1):
                e = i + 1 + len(short)
                if e >= n or not _wordy(text[e]):
                    if text[i:e] in flags:
                        out.append(i)
                    nxt = e
                    break
        i = find("-", nxt)
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
