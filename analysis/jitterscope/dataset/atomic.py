"""Write a file whole or not at all: into ``NAME.tmp`` beside it, then renamed over it.

Every writer of a dataset, pack, simulation or PDF does this, so a reader never sees half a file and a failed
write leaves the old one in place.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import DatasetError, JitterscopeError


@contextmanager
def write_atomically(out: Path, *, what: str = "", error: type[JitterscopeError] = DatasetError) -> Iterator[Path]:
    """Yield the temporary path to write; on leaving, rename it to `out`.

    Parameters
    ----------
    out : Path
        The file to write.
    what : str
        What is written, for the message (``"the report"``: "cannot write the report (...)").
    error : type of JitterscopeError
        Raised, with one line, when writing or renaming fails with an ``OSError``.

    Yields
    ------
    Path
        ``out`` with ``.tmp`` added to its name; removed if writing fails.
    """
    tmp = out.with_name(out.name + ".tmp")
    try:
        yield tmp
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        doing = f"cannot write {what}" if what else "cannot write"
        raise error(f"{out}: {doing} ({exc.strerror or exc})") from None
