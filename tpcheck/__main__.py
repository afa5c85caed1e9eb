"""``python -m tpcheck``: the same as the ``tpcheck`` command."""

import sys

from tpcheck.cli import main

sys.exit(main())
