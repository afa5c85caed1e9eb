"""``kube_pod.CONTEXT_KEYS`` filters the ancestor keys that ``PodFacts.context``'s readers see:
a key a reader asks about but the set leaves out would be dropped silently (no finding
changes, only missing GPU counts, group sizes or ignores). Every key a reader looks up in
``ks`` must be in the set."""

from __future__ import annotations

import inspect
import re

from tpcheck.sources.kube_pod import CONTEXT_KEYS, PodFacts

# ``"key" in ks``, ``"key" not in ks``, ``ks["key"]``, ``ks.get("key"``
_ASKED = re.compile(r'"(\w+)"\s+(?:not\s+)?in\s+ks\b|\bks\["(\w+)"\]|\bks\.get\("(\w+)"')


def _readers() -> list[str]:
    """The reader methods ``context`` calls with each ancestor's key dict, as it lists them."""
    src = inspect.getsource(PodFacts.context)
    listed = re.search(r"readers = \((.*?)\)\n", src, re.S)
    assert listed is not None, "PodFacts.context no longer lists its readers as a tuple"
    return re.findall(r"self\.(\w+)", listed.group(1))


def test_every_key_a_reader_asks_is_kept() -> None:
    readers = _readers()
    assert len(readers) >= 8  # dynamo, node product, ray, ignores, groups, pd role, networks
    asked: dict[str, set[str]] = {}
    for name in readers:
        src = inspect.getsource(getattr(PodFacts, name))
        asked[name] = {next(g for g in m.groups() if g) for m in _ASKED.finditer(src)}
    assert all(asked.values()), {n: k for n, k in asked.items() if not k}  # each asks something
    missing = {n: sorted(k - CONTEXT_KEYS) for n, k in asked.items() if k - CONTEXT_KEYS}
    assert not missing, missing
    # and the set holds nothing no reader asks about (a stale key costs a dict entry per node)
    assert set().union(*asked.values()) == CONTEXT_KEYS
