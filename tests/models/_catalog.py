"""The bundled catalog read as a lint run reads it, for tests that pin an entry to its card."""

from __future__ import annotations

from tpcheck.models import catalog
from tpcheck.models.config import load_shape
from tpcheck.models.params import ParamCounts, param_counts
from tpcheck.models.shape import ModelShape


def counts(model_id: str) -> tuple[ModelShape, ParamCounts]:
    """The entry's parsed shape and its parameter counts."""
    entry = catalog.find(model_id)
    assert entry is not None, model_id
    s = load_shape(entry.config_path, name=model_id)
    return s, param_counts(s)
