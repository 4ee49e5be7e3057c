"""``python -m cubejit``: the ``cubejit`` command."""

from __future__ import annotations

import sys

from cubejit.cli import main

sys.exit(main())
