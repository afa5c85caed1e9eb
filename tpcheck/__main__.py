"""``python -m tpcheck``: the same as the ``tpcheck`` command."""

from __future__ import annotations

import sys

from tpcheck.cli import main

sys.exit(main())
