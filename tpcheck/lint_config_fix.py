"""TP000's fix for a config.json that was found but cannot be used: what to change, where."""

from __future__ import annotations

from tpcheck.deferred import lazy_re

_MISSING_FIELD = lazy_re(r"missing field (\S+)")
_JSON_AT = lazy_re(r":(\d+):(\d+): malformed JSON")


def problem_file(message: str) -> str:
    """The file a config read error names first (``PATH: why`` or ``PATH:L:C: why``)."""
    at = _JSON_AT.search(message)
    return message[: at.start()] if at else message.split(": ", 1)[0]


def unusable_config_fix(problem: str, file: str, origin: str, model: str) -> str:
    """What to change in a config.json that was found but is no model config tpcheck reads:
    the file itself when it is the user's, else a mapping to a good copy."""
    missing = _MISSING_FIELD.search(problem)
    at = _JSON_AT.search(problem)
    if "are not modelled" in problem:  # a real config of an architecture tpcheck cannot price
        return ("nothing to correct in the file: the rules that need the model's shape wait "
                "until tpcheck models this architecture")
    if missing:
        what = f"add {missing.group(1)} to {file} (copy it from the model's config.json on the hub)"
    elif at:
        what = f"make {file} valid JSON (the error is at line {at.group(1)}, column {at.group(2)})"
    elif "JSON" in problem or "UTF-8" in problem or "bytes, over" in problem:
        what = f"replace {file} with the model's config.json (a JSON object of its fields)"
    else:
        what = f"correct the field named above in {file}"
    if origin == "path" or origin.startswith("--model-config "):
        return f"{what}; it is the file --model-config names"
    if origin == "mapping" or origin.startswith("mapping "):
        return f"{what}; it is the file [tool.tpcheck.models] maps {model!r} to"
    if origin == "local" or origin.startswith("local folder "):
        return f"{what}; it is the config.json of the model folder the deployment names"
    return (f"{what}, or map {model!r} in [tool.tpcheck.models] to a good copy of its "
            "config.json (a cached download may be truncated: download it again)")



__all__ = ["problem_file", "unusable_config_fix"]
