"""Where engine hints are written in a text, found with ``str.find`` before any YAML node is
walked: what ``kube.Walker`` reacts to, and whether a broken YAML file is worth recovering.

A leaf module (issue 15): ``yamlctx`` needed it from ``kube``, which imports ``yamlctx``.
"""

from __future__ import annotations

import re

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
_SHORT = "|".join(sorted(re.escape(f[1:]) for f in _HINT_FLAGS if not f.startswith("--")))
_OPTION = lazy_re(rf"--[A-Za-z][\w-]*|-(?:{_SHORT})(?![\w-])")


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
    flags = _HINT_FLAGS
    out.extend([m.start() for m in _OPTION.finditer(text) if m[0] in flags])
    out.sort()
    return out
