"""``python -m compassess_core``: the ``compassess`` command line, as ``python -m compassess_core.cli``."""

import sys

from .cli import main

sys.exit(main())
