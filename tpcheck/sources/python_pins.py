"""The engine release a Python file's launches run: a Modal image's pip_install pin."""

from __future__ import annotations

from tpcheck.deferred import lazy_re
from tpcheck.sources.base import Deployment

_PIP_CALL = lazy_re(r"\b(?:uv_)?pip_install\(")


def python_pins(found: list[Deployment], text: str, path: str) -> tuple[Deployment, ...]:
    """A Modal image's ``.pip_install("vllm==0.7.2")`` (or a ``pip install`` string the file
    runs) names the release its launches run."""
    from tpcheck.sources.dockerfile import PIN, with_pins

    out = tuple(found)
    if not out or "install" not in text:
        return out
    for m in _PIP_CALL.finditer(text):
        depth, k = 1, m.end()
        while k < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[k], 0)
            k += 1
        pins = list(PIN.finditer(text, m.end(), k))
        if pins:
            pin = pins[-1]
            line = text.count("\n", 0, pin.start()) + 1
            said = f"from `{pin.group(1)}=={pin.group(2)}` pinned in pip_install at {path}:{line}"
            from tpcheck.record import replace

            return tuple(d if d.engine != pin.group(1) or d.engine_version is not None else
                         replace(d, engine_version=pin.group(2), engine_version_from=said)
                         for d in out)
    return with_pins(out, text, path)


__all__ = ["python_pins"]
