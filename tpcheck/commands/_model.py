"""Turn a model reference on the command line into a ModelShape, via the shared resolver."""

from __future__ import annotations

from tpcheck import CommandError, UsageError
from tpcheck.models.shape import ModelShape

TYPE_CHECKING = False  # typing's constant without importing typing (start-up, issue 8)
if TYPE_CHECKING:
    from typing import Any


def apply_overrides(cfg: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``--set key=value``: top-level fields, and the text model's when the config nests one."""
    if not overrides:
        return cfg
    _check_keys(cfg, overrides)
    out = dict(cfg)
    for sub in ("text_config", "language_config", "llm_config"):
        if isinstance(out.get(sub), dict):
            inner = dict(out[sub])
            for k, v in overrides.items():
                if k in inner or k not in out:
                    inner[k] = v
            out[sub] = inner
    for k, v in overrides.items():
        out[k] = v
    return out


def _check_keys(cfg: dict[str, Any], overrides: dict[str, Any]) -> None:
    """A key the config lacks is a field being added (head_dim, sliding_window), unless it is a
    key it has with one character dropped or added: ``num_attention_head=64`` would otherwise
    change nothing while the table looked overridden. (Not "close" by difflib: bos_token_id /
    eos_token_id and sliding_window / use_sliding_window are both real pairs of fields.)"""
    have = set(cfg)
    for sub in ("text_config", "language_config", "llm_config"):
        if isinstance(cfg.get(sub), dict):
            have |= set(cfg[sub])
    for key in overrides:
        if key in have:
            continue
        near = sorted(k for k in have if isinstance(k, str) and _one_dropped(key, k))
        if near:
            raise UsageError(f"{key!r} is not a field of this config.json (did you mean "
                             f"{near[0]!r}?)", "--set")


def _one_dropped(a: str, b: str) -> bool:
    """True when the longer of ``a`` and ``b`` is the shorter with one character inserted."""
    short, long = sorted((a, b), key=len)
    if len(long) != len(short) + 1:
        return False
    i = next((i for i, (x, y) in enumerate(zip(short, long, strict=False)) if x != y),
             len(short))
    return short[i:] == long[i + 1:]


def load_shape(model: str, *, overrides: dict[str, Any] | None = None, offline: bool = False,
               model_config: str | None = None) -> tuple[ModelShape, str]:
    """(ModelShape, "source: location") or a CommandError naming what was tried.

    The settings file is read as ``check`` reads it, so ``offline = true``, ``hub-timeout`` and
    [tool.tpcheck.models] hold here too (issue 14 item 1: ``plan`` used to reach the hub anyway).
    """
    from pathlib import Path

    from tpcheck.models.config import ConfigError, parse_config
    from tpcheck.models.resolve import ResolveError, Resolver
    from tpcheck.settings import SettingsError, find_settings_file, load_settings

    try:
        settings = load_settings(find_settings_file(Path.cwd()))
    except SettingsError as e:
        raise UsageError(str(e)) from None
    try:
        r = Resolver(model_config=model_config, mappings=settings.models,
                     offline=offline or settings.offline or None, timeout=settings.hub_timeout,
                     base_dir=settings.root).resolve(model)
    except ResolveError as e:
        raise CommandError(str(e)) from None
    cfg = apply_overrides(dict(r.config), overrides or {})
    try:
        shape = parse_config(cfg, name=model, path=r.location, quant_cfg=r.quant_config)
    except ConfigError as e:
        raise _blame_set(str(e), r.location, overrides or {}) from None
    return shape, f"{r.source}: {r.location}"


def _blame_set(message: str, location: str, overrides: dict[str, Any]) -> Exception:
    """A field ``--set`` gave that the model cannot take is the flag's error, not the file's:
    ``--set num_attention_heads=abc`` names --set, not the catalog's config.json."""
    import re

    tail = message.split(": ", 1)[1] if message.startswith(f"{location}: ") else message
    for key in overrides:
        if re.search(rf"\bfield (?:\S+\.)?{re.escape(key)}\b", tail):
            return UsageError(f"{key}: {tail}", "--set")
    return CommandError(message)
