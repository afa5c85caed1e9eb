"""Same-shape relatives in the bundled catalog, for a hub id tpcheck has no config.json for.

The hub holds a model's tuned variants and dated re-releases under names that differ only in
words that do not change the network's shape: ``Qwen2.5-14B-Instruct`` is ``Qwen2.5-14B``
after instruction tuning, ``DeepSeek-R1-0528`` is ``DeepSeek-R1`` retrained, ``DeepSeek-V3.1``
and its ``-Terminus`` release are published with V3's config. The rule, which the tests state
case by case:

1. Lower-case the name part (after ``org/``), treat ``Meta-Llama-3*`` as ``Llama-3*`` (the
   hub's rename), split it on ``-``.
2. Drop the tuning words (:data:`TUNING`) and date words (``2407``, ``0528``, ``20240229``).
3. Rewrite a known re-release (:data:`RERELEASES`) to the release whose config it kept.
4. What is left is the *stem*. Every other word stays: parameter sizes (``14b``, ``a22b``,
   ``8x7b``), versions (``v0.3``), lines (``coder``, ``vl``, ``distill``) and quantization words.
   A catalog id with the same stem is a relative.
5. A name with a quantization word (:data:`QUANT`) only matches inside its own org: another
   producer's FP8 checkpoint quantizes other layers and the KV cache differently. Relatives in
   several orgs and none in the asker's own are ambiguous and give none.

The caller checks that the relative's config agrees on whether it is quantized at all.

A quantized repack of a bundled model (``neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8``,
``hugging-quants/...-AWQ-INT4``) has a statable shape rule: the producer re-exports the base's
config with a ``quantization_config`` added, so layers, heads and widths are the base's. What
the figures need beyond the shape is that quantization_config (which layers stay in 16 bits,
the AWQ/GPTQ group size TP103 checks, whether the KV cache is FP8), and it is known only from
the producer's own file. :func:`unquantized_base` names the base so TP000 can say exactly what
is missing; no relative is taken.
"""

from __future__ import annotations

from functools import lru_cache

from tpcheck.deferred import lazy_re
from tpcheck.models import catalog

TUNING = frozenset({"instruct", "chat", "it", "base", "hf"})
# the word sets that mark a quantized checkpoint in hub names (FP8, AWQ, GPTQ-Int4, w4a16, …)
QUANT = lazy_re(r"fp8|fp4|nvfp4|mxfp4|awq|gptq|int[348]|w\d+a\d+|\d+bits?|bnb|gguf|exl2"
                   r"|quantized.*|dynamic|block|kv")
_DATE = lazy_re(r"\d{4}|\d{6}|\d{8}")
# re-releases published with the config of an earlier release (stem -> stem). DeepSeek-V3.1 and
# V3.1-Terminus ship V3's DeepseekV3ForCausalLM config (61 layers, hidden 7168, 256 routed
# experts, MLA rank 512); V3.2 adds the sparse-attention indexer and is not in this table.
RERELEASES: dict[str, str] = {
    "deepseek-v3.1": "deepseek-v3",
    "deepseek-v3.1-terminus": "deepseek-v3",
}


def _words(name: str) -> list[str]:
    n = name.strip().lower()
    if n.startswith("meta-llama-3"):
        n = n[len("meta-"):]
    return [w for w in n.split("-") if w]


def stem(model_id: str) -> tuple[str, tuple[str, ...], str | None] | None:
    """(stem, the tuning and date words dropped, the re-release rewritten or None) for the name
    part of ``model_id``; None when nothing is left."""
    name = model_id.rpartition("/")[2]
    kept: list[str] = []
    dropped: list[str] = []
    for w in _words(name):
        (dropped if w in TUNING or _DATE.fullmatch(w) else kept).append(w)
    s = "-".join(kept)
    rerelease = None
    if s in RERELEASES:
        rerelease, s = s, RERELEASES[s]
    return (s, tuple(dropped), rerelease) if s else None


def quantized_name(model_id: str) -> bool:
    """Whether a word of the name marks a quantized checkpoint."""
    return any(QUANT.fullmatch(w) for w in _words(model_id.rpartition("/")[2]))


@lru_cache(maxsize=1)
def _by_stem() -> dict[str, tuple[str, ...]]:
    """Stem -> the catalog's canonical ids with it."""
    out: dict[str, list[str]] = {}
    for model_id in catalog.all_ids():
        s = stem(model_id)
        if s is not None:
            out.setdefault(s[0], []).append(model_id)
    return {k: tuple(sorted(v)) for k, v in out.items()}


def relative(model_id: str) -> tuple[str, str] | None:
    """(catalog id, how its name differs) for ``model_id``, or None: the id itself is never its
    own relative, and an ambiguous or cross-org quantized match gives none."""
    asked = model_id.strip()
    org = asked.rpartition("/")[0].lower()
    s = stem(asked)
    if s is None:
        return None
    found = [i for i in _by_stem().get(s[0], ()) if i.lower() != asked.lower()]
    own = [i for i in found if i.rpartition("/")[0].lower() == org]
    if own:
        found = own
    elif quantized_name(asked) or len({i.rpartition("/")[0].lower() for i in found}) != 1:
        return None
    if not found:
        return None

    def dropped(i: str) -> tuple[str, ...]:
        r = stem(i)
        return r[1] if r is not None else ()

    # the closest name first: Llama-3.2-3B-Instruct's relative is the other org's -Instruct
    rel = min(found, key=lambda i: (len(set(dropped(i)) ^ set(s[1])), i))
    theirs = dropped(rel)
    said = [f"-{w} dropped" for w in s[1] if w not in theirs]
    said += [f"-{w} added" for w in theirs if w not in s[1]]
    if s[2] is not None:
        said.append(f"{s[2]} ships {s[0]}'s config")
    if rel.rpartition("/")[0].lower() != org:
        said.append("another org")
    return rel, ", ".join(said) or "the hub's Meta-Llama-3 -> Llama-3 rename"


def unquantized_base(model_id: str) -> str | None:
    """The one catalog id whose stem is ``model_id``'s with its quantization words dropped (any
    org), for a quantized name; None for an unquantized name, or none or several matches."""
    if not quantized_name(model_id):
        return None
    name = model_id.rpartition("/")[2]
    return base_of([w for w in _words(name) if not QUANT.fullmatch(w)])


def base_of(words: list[str]) -> str | None:
    """The one org's unquantized catalog id whose stem is that of ``words`` (a name split as
    :func:`_words` splits it), the closest tuning words first; None for none or several orgs."""
    base = stem("/" + "-".join(words))
    if base is None:
        return None
    found = [i for i in _by_stem().get(base[0], ()) if not quantized_name(i)]
    if len({i.rpartition("/")[0].lower() for i in found}) != 1:
        return None  # none, or bases in several orgs: which one was repacked is not said

    def distance(i: str) -> int:  # the closest tuning words first: -Instruct for -Instruct
        r = stem(i)
        return len(set(r[1] if r is not None else ()) ^ set(base[1]))

    return min(found, key=lambda i: (distance(i), i))
