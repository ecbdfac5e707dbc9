"""``python -m jitterscope``: the ``jitterscope`` command, for Python users who expect a package to run as one."""

from .cli import console_main

console_main()
