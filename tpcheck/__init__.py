"""tpcheck: what vLLM and SGLang do with a tensor-parallel layout, before anyone books a GPU."""

from __future__ import annotations

__version__ = "0.1.0"
