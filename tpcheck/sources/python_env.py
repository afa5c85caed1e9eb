"""Environment reads and argparse options with a literal default, which stand in for a value."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tpcheck.sources.python_literals import literal

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

_ENV_READERS = frozenset({"getenv", "get"})  # os.getenv / getenv / os.environ.get / environ.get
_CASTS = frozenset({"int", "float", "str"})


def env_default(node: Any, flags: Mapping[str, tuple[str, Any]] | None = None
                 ) -> tuple[str, Any] | None:
    """(what is read, default literal node) for ``os.getenv("V", lit)``,
    ``os.environ.get("V", lit)`` (also ``default=lit``) and ``args.dest`` of an argparse option
    in ``flags``, optionally inside ``int()``, ``float()`` or ``str()``."""
    import libcst as cst

    if (flags and isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name)
            and node.attr.value in flags):
        return flags[node.attr.value]
    if not isinstance(node, cst.Call):
        return None
    fn = node.func
    if isinstance(fn, cst.Name) and fn.value in _CASTS and len(node.args) == 1:
        return env_default(node.args[0].value, flags)
    if not _reads_environment(fn):
        return None
    args = node.args
    if not args or args[0].keyword is not None or not isinstance(args[0].value, cst.SimpleString):
        return None
    var = literal(args[0].value)
    default = None
    if len(args) >= 2 and args[1].keyword is None:
        default = args[1].value
    for a in args[1:]:
        if a.keyword is not None and a.keyword.value == "default":
            default = a.value
    if not isinstance(var, str) or default is None or literal(default) is None:
        return None
    return f'os.getenv("{var}")', default


def _reads_environment(fn: Any) -> bool:
    """``getenv``, ``os.getenv``, ``environ.get`` or ``os.environ.get`` (not any ``.get``)."""
    import libcst as cst

    if isinstance(fn, cst.Name):
        return fn.value == "getenv"
    if not isinstance(fn, cst.Attribute) or fn.attr.value not in _ENV_READERS:
        return False
    owner = fn.value
    if fn.attr.value == "getenv":
        return isinstance(owner, cst.Name) and owner.value == "os"
    return ((isinstance(owner, cst.Name) and owner.value == "environ")
            or (isinstance(owner, cst.Attribute) and owner.attr.value == "environ"
                and isinstance(owner.value, cst.Name) and owner.value.value == "os"))


def argparse_defaults(calls: Iterable[Any]) -> dict[str, tuple[str, Any]]:
    """argparse dest → (its option, default literal node) for every ``add_argument("--x", ...,
    default=lit)`` in ``calls`` (the file's ``add_argument`` calls); a dest declared twice could
    hold either default and is left out."""
    found: dict[str, tuple[str, Any]] = {}
    seen: dict[str, int] = {}
    for node in calls:
        names = [literal(a.value) for a in node.args if a.keyword is None]
        opts = [n for n in names if isinstance(n, str) and n.startswith("-")]
        kw = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        if not opts or "default" not in kw or literal(kw["default"]) is None:
            continue
        opt = next((o for o in opts if o.startswith("--")), opts[0])
        dest = literal(kw["dest"]) if "dest" in kw else opt.lstrip("-").replace("-", "_")
        if isinstance(dest, str) and dest:
            seen[dest] = seen.get(dest, 0) + 1
            found[dest] = (opt, kw["default"])
    return {d: v for d, v in found.items() if seen[d] == 1}


def env_names(binds: Iterable[tuple[str, Any, Any]], consts: dict[str, Any],
               flags: Mapping[str, tuple[str, Any]] | None = None) -> dict[str, Any]:
    """Names bound exactly once in the file (at any depth) to an environment read with a literal
    default: ``model = os.getenv("MODEL_ID", "org/name")`` inside ``main()`` is common. A name
    bound twice could hold either value, so it is left alone. ``binds``: (name, value, _) for
    every assignment to a plain name, in the file's order."""
    counts: dict[str, int] = {}
    values: dict[str, Any] = {}
    for name, value, _ in binds:
        counts[name] = counts.get(name, 0) + 1
        values[name] = value
    return {n: v for n, v in values.items()
            if counts[n] == 1 and n not in consts and v is not None
            and env_default(v, flags) is not None}


__all__ = ["argparse_defaults", "env_default", "env_names"]
