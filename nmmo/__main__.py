"""`python -m nmmo` is the `nmmo` command."""

import sys

from nmmo.cli import main

sys.exit(main())
