"""``python -m jitterscope``: the ``jitterscope`` command, for Python users who expect a package to run as one."""

import sys

from .cli import main

sys.exit(main())
