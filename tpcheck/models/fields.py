"""Typed field access on a config.json dict, so every reader's error names its field and file."""

from __future__ import annotations

import math
from collections.abc import Mapping

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_DIM", "TEXT_KEYS", "ConfigError", "Reader", "as_str", "is_list"]


class ConfigError(ValueError):
    """A config.json that cannot describe a model; the message is one line."""


TEXT_KEYS = ("text_config", "language_config", "llm_config")


class Reader:
    """Typed field access on one config dict, with errors naming field and file."""

    def __init__(self, cfg: Mapping[str, Any], where: str, prefix: str = "") -> None:
        self.cfg = cfg
        self.where = where
        self.prefix = prefix

    def has(self, key: str) -> bool:
        return self.cfg.get(key) is not None

    def _bad(self, key: str, value: Any, want: str) -> ConfigError:
        shown = repr(value)
        if len(shown) > 40:
            shown = shown[:37] + "..."
        return ConfigError(f"{self.where}: field {self.prefix}{key} must be {want}, got {shown}")

    def int_or_none(self, key: str, *, minimum: int = 1) -> int | None:
        value = self.cfg.get(key)
        if value is None:
            return None
        if isinstance(value, bool):
            raise self._bad(key, value, _want(minimum))
        if isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer():
                raise self._bad(key, value, _want(minimum))
            value = int(value)
        if not isinstance(value, int):
            raise self._bad(key, value, _want(minimum))
        if value < minimum or value > MAX_DIM:
            raise self._bad(key, value, _want(minimum) + f" up to {MAX_DIM:,}")
        return value

    def first_int(self, *keys: str, minimum: int = 1) -> int | None:
        for key in keys:
            if self.has(key):
                return self.int_or_none(key, minimum=minimum)
        return None

    def need(self, *keys: str, minimum: int = 1) -> int:
        value = self.first_int(*keys, minimum=minimum)
        if value is None:
            alts = f" (or {', '.join(keys[1:])})" if len(keys) > 1 else ""
            raise ConfigError(f"{self.where}: missing field {self.prefix}{keys[0]}{alts}")
        return value

    def int_default(self, key: str, default: int, *, minimum: int = 1) -> int:
        value = self.int_or_none(key, minimum=minimum)
        return default if value is None else value

    def flag(self, key: str, default: bool = False) -> bool:
        value = self.cfg.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self._bad(key, value, "true or false")
        return value

    def int_list(self, key: str) -> list[int]:
        value = self.cfg.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise self._bad(key, value, "a list of integers")
        return list(value)

    def int_list_01(self, key: str) -> list[int]:
        """A per-layer list of 0/1 flags (booleans accepted)."""
        value = self.cfg.get(key)
        if not isinstance(value, list) or not all(
            isinstance(v, (int, bool)) and v in (0, 1) for v in value
        ):
            raise self._bad(key, value, "a list of 0/1 flags")
        return [int(v) for v in value]

    def str_list(self, key: str) -> list[str] | None:
        value = self.cfg.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._bad(key, value, "a list of strings")
        return list(value)


# No real width, count or length comes near 2^40 (a trillion); past it the byte arithmetic
# leaves exact integers and floats, so such a config is refused as malformed.
MAX_DIM = 1 << 40


def _want(minimum: int) -> str:
    return "a positive integer" if minimum == 1 else f"an integer >= {minimum}"


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def is_list(cfg: Mapping[str, Any], key: str) -> bool:
    return isinstance(cfg.get(key), list)
