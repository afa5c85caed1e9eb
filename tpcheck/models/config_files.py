"""A model's config.json and hf_quant_config.json on disk: names, size cap, safe parsing."""

from __future__ import annotations

from pathlib import Path

from tpcheck.jsonlib import json
from tpcheck.models.resolve_error import ResolveError

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any


CONFIG_NAME = "config.json"
# Published config.json files are kilobytes (the largest in the catalog is under 100 KB).
MAX_CONFIG_BYTES = 8 * 1024 * 1024
QUANT_NAME = "hf_quant_config.json"


def load_json(path: Path) -> dict[str, Any]:
    """Parse a JSON object; malformed input becomes one line naming file, line and column."""
    from tpcheck.sources.files import NotRegular, TooBig, decode_utf8_sig, read_capped

    try:
        text = decode_utf8_sig(read_capped(str(path), MAX_CONFIG_BYTES))
    except TooBig as e:
        raise ResolveError("bad-json", f"{path}: {e.size:,} bytes, over the "
                           f"{MAX_CONFIG_BYTES:,}-byte limit for a model config") from None
    except NotRegular as e:
        raise ResolveError("bad-json", f"{path}: {e}, not a model config") from None
    except UnicodeDecodeError as e:
        raise ResolveError("bad-json", f"{path}: not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise ResolveError("not-found", f"{path}: cannot read ({e.strerror or e})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ResolveError(
            "bad-json", f"{path}:{e.lineno}:{e.colno}: malformed JSON: {e.msg}"
        ) from None
    except RecursionError:
        raise ResolveError("bad-json", f"{path}: JSON nested too deeply to be a model config"
                           ) from None
    except ValueError as e:  # an integer past Python's 4,300-digit conversion limit
        raise ResolveError("bad-json", f"{path}: not a model config ({e})") from None
    if not isinstance(data, dict):
        raise ResolveError("bad-json", f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def quant_beside(config_path: Path) -> dict[str, Any] | None:
    quant = config_path.with_name(QUANT_NAME)
    return load_json(quant) if quant.is_file() else None


def not_a_file(path: Path) -> str:
    """Why ``path`` is no config file: missing, or there but a FIFO or device (/dev/zero said
    "no such file", issue 28 item 13)."""
    import stat as stat_mod

    from tpcheck.sources.files import file_type

    try:
        mode = path.stat().st_mode
    except OSError:
        return "no such file"
    return "no such file" if stat_mod.S_ISREG(mode) else f"not a regular file ({file_type(mode)})"


def config_in(path: Path) -> Path | None:
    """The config.json that ``path`` names: the file itself or one inside the folder."""
    if path.is_dir():
        inner = path / CONFIG_NAME
        return inner if inner.is_file() else None
    return path if path.is_file() else None
