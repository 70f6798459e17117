"""`python -m nmmo` is the `nmmo` command.

``python -m`` puts the working directory first on ``sys.path``; the ``nmmo`` script does not. It is
taken off again here, before any other import, so that a folder in the directory a command is run
from (a ``scripted/`` or ``baselines/`` of someone else's) can never stand in for this project's
packages: the two ways of running a command import the same code.
"""

import os
import sys

if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from nmmo.cli import main  # noqa: E402 - after the working directory left sys.path

sys.exit(main())
