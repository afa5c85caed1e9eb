"""Test-wide settings.

CI (``CI`` set, as ``bash .ci/run`` is run) replays a fixed sequence of hypothesis examples, so a
submission never fails on an example drawn for the first time that day; developers keep random
exploration, which is where new bugs are found.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


# The integrations that start real external processes for every case: pre-commit and git, the
# action's bash scripts, a Language Server over stdio, the rule docs' CLI runs, a local HTTP hub.
# They stay in the full run (`python -m pytest`); `python -m pytest -m "not slow"` is the quick one.
SLOW_MODULES = frozenset({
    "tests/test_precommit.py", "tests/test_action.py", "tests/test_rule_docs.py",
    "tests/lsp/test_protocol.py", "tests/lsp/test_server.py", "tests/lsp/test_hostile_docs.py",
    "tests/lsp/test_fixes.py", "tests/lsp/test_settings_reload.py", "tests/models/test_pull.py",
    "tests/models/test_resolve.py", "tests/test_hostile.py",
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath
    for item in items:
        if item.path.relative_to(root).as_posix() in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def empty_hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Offline, with an empty HF cache, and hints' per-name memo cleared before and after: only
    the bundled catalog and local folders answer a lookup."""
    from tpcheck.models import hints

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hints._by_name.cache_clear()
    yield
    hints._by_name.cache_clear()
