"""Test-wide settings.

CI (``CI`` set, as ``bash .ci/run`` is run) replays a fixed sequence of hypothesis examples, so a
submission never fails on an example drawn for the first time that day; developers keep random
exploration, which is where new bugs are found.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
