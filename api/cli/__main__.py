"""``python -m api.cli``: the ``tristate`` command line."""

import sys

from api.cli import main

sys.exit(main.main())
