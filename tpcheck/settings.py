"""Settings from ``[tool.tpcheck]`` (nearest pyproject.toml) or ``.tpcheck.toml``; flags win.

Unknown keys are an error naming the key, as ruff and yamllint do: a typo in a linter's config
must not silently turn a rule off.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from tpcheck.deferred import lazy_re
from tpcheck.record import field, record, replace

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

SEVERITIES = ("info", "warning", "error")
# The hub client's timeout: 0, negative, nan or inf break the HTTP client (inf overflows, nan can
# leave a hub thread starting at shutdown, issue 14 item 7); ten minutes is already far too long.
MAX_HUB_TIMEOUT = 600.0
# A settings file is a few hundred bytes; 1 MiB is past any real one and bounds what is read.
MAX_SETTINGS_BYTES = 1024 * 1024
# α beyond a second is no interconnect: 1e306 made the step infinite and tokens/s 0.
MAX_ALPHA = 1.0


class SettingsError(ValueError):
    """A bad settings file or value: one line naming the file and the key."""


@record
class Settings:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    gpu: str | None = None
    context: int | None = None
    fail_on: str = "warning"
    models: Mapping[str, str] = field(default_factory=dict)
    per_file_ignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    offline: bool = False
    topology: str | None = None
    engine_version: str | None = None
    engine_version_from: str | None = None  # where engine_version was set (said in findings)
    model_config: str | None = None
    hub_timeout: float = 5.0
    alpha: float | None = None  # fixed all-reduce cost in seconds, overriding the link class
    network: str | None = None  # the NICs between nodes, "8x400G-ib" (physics.collective)
    max_file_size: int = 5 * 1024 * 1024
    # [tool.tpcheck.rules.CODE] tables: option → value, checked against each rule's CONF by
    # ``tpcheck.checks.rule_options`` when a linter is built (the rules are not imported here)
    rules: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    source: str | None = None  # the file they were read from
    root: str | None = None  # its folder; per-file-ignores and model paths are relative to it

    def with_flags(self, **flags: Any) -> Settings:
        """Command-line values override the file; None means 'not given'."""
        given = {k: v for k, v in flags.items() if v is not None and v != ()}
        if "engine_version" in given:
            given["engine_version_from"] = "--engine-version"
        return replace(self, **given)


_KEYS: dict[str, type | tuple[type, ...]] = {
    "select": list, "ignore": list, "gpu": str, "context": int, "fail-on": str, "models": dict,
    "per-file-ignores": dict, "offline": bool, "topology": str, "engine-version": str,
    "model-config": str, "hub-timeout": (int, float), "max-file-size": int,
    "alpha": (int, float), "rules": dict, "network": str,
}


# [tool.tpcheck], tool.tpcheck.x = ..., or a bare [tool] table that might hold tpcheck: only then
# is a pyproject.toml parsed (tomllib and the datetime it imports cost ~9 ms of start-up). The
# test as a pattern; mentions_tool_tpcheck asks it with str.find (the tests hold the two equal):
# compiling and searching it were ~1.6 million instructions of a lint beside a pyproject.toml.
MENTIONS_TOOL_TPCHECK = r"""tool\s*\.\s*["']?tpcheck|^\s*\[\s*tool\s*\]"""  # re.M


def mentions_tool_tpcheck(text: str) -> bool:
    """Whether MENTIONS_TOOL_TPCHECK (re.M) matches in ``text``, found with ``str.find``:
    ``tool`` ``.`` ``tpcheck`` (a quote allowed before ``tpcheck``), or ``[tool]`` first on a
    line, whitespace allowed between the parts. Linear in ``text`` (each whitespace run is
    walked at most once per side)."""
    i = text.find("tpcheck")
    while i >= 0:
        j = i - 1 if i and text[i - 1] in "\"'" else i
        j = _space_before(text, j)
        if j and text[j - 1] == "." and text.endswith("tool", 0, _space_before(text, j - 1)):
            return True
        i = text.find("tpcheck", i + 1)
    i = text.find("tool")
    while i >= 0:
        k = _space_before(text, i)  # the "[" ends at k
        if k and text[k - 1] == "[" and text.startswith("]", _space_after(text, i + 4)):
            start = _space_before(text, k - 1)
            if start == 0 or text.find("\n", start, k - 1) >= 0:  # ^ under re.M
                return True
        i = text.find("tool", i + 1)
    return False


def _space_before(text: str, end: int) -> int:
    """Where the whitespace (``\\s``: ``str.isspace``) ending at ``end`` starts."""
    while end and text[end - 1].isspace():
        end -= 1
    return end


def _space_after(text: str, start: int) -> int:
    n = len(text)
    while start < n and text[start].isspace():
        start += 1
    return start


def find_settings_file(start: Path) -> Path | None:
    """The nearest ``.tpcheck.toml``, or ``pyproject.toml`` with a [tool.tpcheck] table."""
    import os.path

    d = start if _probe(start.is_dir) else start.parent
    for folder in (d, *d.parents):
        # probed by name (os.path: False where Path.is_file said False or raised OSError, as
        # _probe has it), a Path made only for the answer: pathlib's joins were ~1.5 million
        # instructions of a one-file lint's two searches
        base = str(folder)
        if os.path.isfile(os.path.join(base, ".tpcheck.toml")):
            return folder / ".tpcheck.toml"
        name = os.path.join(base, "pyproject.toml")
        if os.path.isfile(name):
            from tpcheck.sources.files import TooBig, read_capped

            py = folder / "pyproject.toml"
            try:
                head = read_capped(name, MAX_SETTINGS_BYTES).decode("utf-8", "replace")
            except TooBig:
                return py  # load_settings says so in one line (a sparse 1 GB file took a minute)
            except OSError:
                continue  # unreadable, or no regular file after all: not a settings file
            if not mentions_tool_tpcheck(head):
                continue  # cheap test first: most pyproject.toml files are not ours
            try:
                if _table(_load(py), "tool", "tpcheck") is not None:
                    return py
            except SettingsError:
                return py
    return None


def _probe(test: Callable[[], bool]) -> bool:
    """``Path.is_file``/``is_dir`` that say False where they raise: a name past NAME_MAX
    (``--stdin-filename`` of 5,000 characters) raised ENAMETOOLONG as an internal error."""
    try:
        return test()
    except OSError:
        return False


def _load(path: Path, text: str | None = None) -> dict[str, Any]:
    # Imported here: most runs have no settings file, and the parser costs ~10 ms of start-up.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]
    from tpcheck.sources.files import decode_utf8_sig, read_capped

    try:
        # `--config` names any path: /dev/zero would never end; a pipe (`--config <(...)`) is
        # read (discovery takes regular files only). A BOM (Windows editors write one) is
        # dropped: tomllib calls it an invalid statement at 1:1.
        if text is None:
            text = decode_utf8_sig(read_capped(str(path), MAX_SETTINGS_BYTES, pipe_ok=True))
        elif len(text) > MAX_SETTINGS_BYTES:
            raise SettingsError(f"{path}: over the {MAX_SETTINGS_BYTES:,}-byte limit")
        data: dict[str, Any] = tomllib.loads(text.removeprefix("\ufeff"))
        return data
    except OSError as e:
        raise SettingsError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise SettingsError(f"{path}: not UTF-8 text (byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise SettingsError(f"{path}: invalid TOML: {e}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise SettingsError(f"{path}: invalid TOML: arrays or tables nested too deeply"
                            ) from None


def _table(data: Any, *keys: str) -> Any:
    """``data[k1][k2]...``, or None where a level is missing or is no table."""
    for k in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(k)
    return data


def load_settings(path: Path | None, text: str | None = None) -> Settings:
    """``path``'s settings; ``text`` stands for its content when given (the buffer an editor
    holds, not yet saved)."""
    if path is None:
        return Settings()
    data = _load(path, text)
    table = _table(data, "tool", "tpcheck")
    if table is None:  # pyproject.toml without the table; a .tpcheck.toml's top level is it
        table = {} if path.name == "pyproject.toml" else data
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: [tool.tpcheck] must be a table")
    return settings_from_table(table, str(path))


def settings_from_table(table: Mapping[str, Any], where: str) -> Settings:
    kw: dict[str, Any] = {"source": where, "root": str(Path(where).parent)}
    _given_once(table, where)
    for raw_key in table:
        key = raw_key.replace("_", "-")
        _check_type(key, raw_key, table[raw_key], where)
        attr = key.replace("-", "_")
        value: Any = table[raw_key]  # untyped: isinstance(value, want) would narrow it to object
        if key in _STRUCTURED:
            kw[attr] = _structured(key, raw_key, value, where)
        else:
            _check_range(key, raw_key, value, where)
            kw[attr] = float(value) if key in ("hub-timeout", "alpha") else value
    if "engine_version" in kw:
        kw["engine_version_from"] = f"[tool.tpcheck] engine-version in {Path(where).name}"
    return Settings(**kw)


def _check_type(key: str, raw_key: str, value: object, where: str) -> None:
    """A known key with a value of its type (a boolean is no number here)."""
    if key not in _KEYS:
        raise SettingsError(f"{where}: unknown key {raw_key!r} in [tool.tpcheck] "
                            f"(known: {', '.join(sorted(_KEYS))})")
    want = _KEYS[key]
    if isinstance(value, bool) and want is not bool:
        raise SettingsError(f"{where}: {raw_key} must be {_tname(want)}, got a boolean")
    if not isinstance(value, want):
        raise SettingsError(f"{where}: {raw_key} must be {_tname(want)}, "
                            f"got {type(value).__name__}")


_STRUCTURED = frozenset({"select", "ignore", "fail-on", "models", "rules", "per-file-ignores"})


def _structured(key: str, raw_key: str, value: Any, where: str) -> Any:
    """The value of a key that holds codes, a severity or tables, as Settings keeps it."""
    if key in ("select", "ignore"):
        return tuple(_codes(value, where, raw_key))
    if key == "fail-on":
        if value not in SEVERITIES:
            raise SettingsError(f"{where}: fail-on must be one of {', '.join(SEVERITIES)}")
        return value
    if key == "models":
        return _models(value, where)
    if key == "rules":
        for code, options in value.items():
            if not isinstance(options, dict):
                raise SettingsError(f"{where}: rules.{code} must be a table of the rule's "
                                    "options ([tool.tpcheck.rules.CODE] in pyproject.toml, "
                                    "[rules.CODE] in .tpcheck.toml)")
        return {str(k): dict(v) for k, v in value.items()}
    return {str(k): tuple(_codes(v, where, f"per-file-ignores.{k}")) for k, v in value.items()}


def _check_range(key: str, raw_key: str, value: Any, where: str) -> None:
    """A scalar outside what its key allows is an error naming the file and the key."""
    if key == "context" and value < 1:
        raise SettingsError(f"{where}: context must be a positive number of tokens")
    if key == "hub-timeout" and not 0 < value <= MAX_HUB_TIMEOUT:  # False for nan too
        raise SettingsError(f"{where}: {raw_key} must be a number of seconds above 0 and at "
                            f"most {MAX_HUB_TIMEOUT:g}, got {value}")
    if key == "max-file-size" and value < 1:  # 0 would skip every file as too big
        raise SettingsError(f"{where}: {raw_key} must be a positive number of bytes, "
                            f"got {value}")
    if key == "engine-version" and not has_release_number(value):
        raise SettingsError(f"{where}: {raw_key} must be a release number such as 0.8.5 or "
                            f"v0.8.5, got {value!r}")
    if key == "alpha" and not 0 <= value < MAX_ALPHA:  # False for nan too
        raise SettingsError(f"{where}: {raw_key} must be a number of seconds from 0 to "
                            f"under {MAX_ALPHA:g} (a collective's fixed cost is µs), "
                            f"got {value}")
    if key == "network" and _bad_network(value):
        raise SettingsError(f"{where}: {raw_key} must name the NICs per node, e.g. "
                            f"\"8x400G-ib\" (kinds: ib, roce, efa, tcpxo, tcp), got {value!r}")


def _bad_network(value: str) -> bool:
    from tpcheck.hardware.network import parse_network

    return parse_network(value) is None


def _models(value: dict[str, Any], where: str) -> dict[str, str]:
    if not all(isinstance(v, str) for v in value.values()):
        raise SettingsError(f"{where}: [tool.tpcheck.models] values must be strings")
    empty = next((k for k, v in value.items() if not v.strip()), None)
    if empty is not None:  # "" would resolve to the settings file's own folder
        raise SettingsError(f"{where}: [tool.tpcheck.models] maps {empty!r} to an empty path")
    return dict(value)


def _given_once(table: Mapping[str, Any], where: str) -> None:
    """fail_on and fail-on are two keys to TOML and one setting here: one value would be lost."""
    spelled: dict[str, str] = {}
    for raw_key in table:
        key = raw_key.replace("_", "-")
        if key in spelled:
            raise SettingsError(f"{where}: {spelled[key]} and {raw_key} are the same key; "
                                "give it once")
        spelled[key] = raw_key


def has_release_number(text: str) -> bool:
    """``0.8.5``, ``v0.10.1.1``, ``0.9.1.dev705``: what the engine defaults can be looked up by
    (``tpcheck.engines.defaults.parse_version`` reads MAJOR.MINOR[.PATCH] the same way)."""
    return _RELEASE.search(text) is not None


_RELEASE = lazy_re(r"\d+\.\d+")


def _codes(value: Any, where: str, key: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise SettingsError(f"{where}: {key} must be a list of rule codes")
    if not all(x.strip() for x in value):  # "" would be a prefix of every code
        raise SettingsError(f"{where}: {key} holds an empty rule code")
    return [x.strip().upper() for x in value]


def _tname(t: type | tuple[type, ...]) -> str:
    names = {list: "a list", dict: "a table", str: "a string", int: "an integer",
             bool: "true or false", float: "a number"}
    if isinstance(t, tuple):
        return "a number"
    return names.get(t, t.__name__)
