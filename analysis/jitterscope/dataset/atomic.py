"""Safe writes: check an output against the inputs first, then write it whole or not at all.

Every writer (report, compare, export, pack, import, simulate, ``--figures DIR``) goes through
:func:`check_output` and :func:`write_atomically` (or :func:`write_directory_atomically`):

* the output is never an input, inside an input directory, or an input inside it (refused even with
  ``--force``: the command would destroy what it reads);
* an existing output, or a symbolic link (live or dangling), is replaced only with ``--force``, and then the
  link itself is replaced, never written through;
* the data goes into a temporary beside the output (``.NAME.PID.tmp``), renamed over it at the end; on an error,
  Ctrl-C or SIGTERM the temporary is removed, and one left by a killed run (SIGKILL, a crash) is removed by the
  next write of the same output once its process is gone.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import DatasetError, JitterscopeError, raise_if_signalled


def check_output(
    output: str | os.PathLike[str], *, inputs: Iterable[str | os.PathLike[str]] = (), overwrite: bool = False,
    directory: bool = False, error: type[JitterscopeError] = DatasetError,
) -> Path:
    """Refuse an output that would destroy an input or, without ``overwrite``, anything that exists.

    Parameters
    ----------
    output
        The file (or, with ``directory``, the folder) to write.
    inputs
        Every file or directory the command reads.
    overwrite
        ``--force``: replace an existing output, or a symbolic link (the link, not its target).
    directory
        The output is a folder (``--figures DIR``): an existing empty folder is fine.
    error
        The exception raised, with one line.

    Returns
    -------
    Path
        ``output`` as a Path.
    """
    out = Path(output)
    # where the output's name will be: the link itself if it is one (we replace links, never write through)
    where = Path(os.path.realpath(out.parent)) / out.name
    for source in inputs:
        real = Path(os.path.realpath(source))
        clash = where == real or real in where.parents or where in real.parents
        if clash or (out.exists() and Path(source).exists() and os.path.samefile(out, source)):
            raise error(f"{out}: is {'inside ' if real in where.parents else ''}an input of this command "
                        f"({source}); writing there would destroy what is read: choose another output name")
    if out.is_symlink() and not overwrite:
        raise error(f"{out}: is a symbolic link{' (dangling)' if not out.exists() else ''}; jitterscope does not "
                    "write through links: choose another name, or pass --force to replace the link itself")
    if directory:
        if out.is_symlink():
            return out  # --force (checked above): the link itself is replaced by the folder
        if out.exists() and not out.is_dir():
            raise error(f"{out}: exists and is not a directory; choose another folder")
        if out.is_dir() and not out.is_symlink() and any(out.iterdir()) and not overwrite:
            raise error(f"{out}: folder is not empty; choose a new or empty folder, or pass --force to replace "
                        "the files of the same name in it")
        return out
    if out.is_dir() and not out.is_symlink():
        raise error(f"{out}: is a directory; give a file name")
    if out.exists() and not out.is_symlink() and not overwrite:
        raise error(f"{out}: already exists; choose another name or pass --force")
    if not out.parent.is_dir():
        raise error(f"{out.parent}: no such directory; create it or choose another output path")
    return out


def temporary_path(out: Path) -> Path:
    """The temporary ``out`` is written as: hidden, beside it (same filesystem: the rename is atomic), per process."""
    return out.with_name(f".{out.name}.{os.getpid()}.tmp")


def remove_stale_temporaries(out: Path) -> list[Path]:
    """Remove the temporaries of ``out`` left by runs that were killed (their process is gone); return them."""
    removed = []
    try:
        candidates = list(out.parent.glob(f".{_glob_escape(out.name)}.*.tmp"))
    except OSError:
        return removed
    for path in candidates:
        pid = path.name[len(out.name) + 2: -len(".tmp")]
        if not pid.isdigit() or int(pid) == os.getpid() or _alive(int(pid)):
            continue
        try:
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
            removed.append(path)
        except OSError:
            pass
    return removed


@contextmanager
def write_atomically(out: Path, *, what: str = "", error: type[JitterscopeError] = DatasetError) -> Iterator[Path]:
    """Yield the temporary path to write; on leaving, rename it to `out`.

    Parameters
    ----------
    out : Path
        The file to write (check it with :func:`check_output` first).
    what : str
        What is written, for the message (``"the report"``: "cannot write the report (...)").
    error : type of JitterscopeError
        Raised, with one line, when writing or renaming fails with an ``OSError``.

    Yields
    ------
    Path
        The temporary (:func:`temporary_path`); removed if writing fails or is interrupted.
    """
    out = Path(out)
    remove_stale_temporaries(out)
    tmp = temporary_path(out)
    doing = f"cannot write {what}" if what else "cannot write"
    try:
        yield tmp
        raise_if_signalled()  # a signal whose exception CPython lost must not leave an output as if all went well
        os.replace(tmp, out)  # replaces a symbolic link itself, never its target
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise error(f"{out}: {doing} ({_reason(exc, tmp, out)})") from None
    except BaseException:  # an error, Ctrl-C, SIGTERM (the CLI turns it into an exception): no temporary left
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def write_directory_atomically(
    out: Path, *, what: str = "", error: type[JitterscopeError] = DatasetError,
) -> Iterator[Path]:
    """Yield a temporary folder to fill; on leaving, its files become ``out`` (renamed, or moved into it).

    A run that fails or is interrupted leaves ``out`` as it was: no half-written folder.
    """
    out = Path(out)
    remove_stale_temporaries(out)
    tmp = temporary_path(out)
    try:
        tmp.mkdir()
        yield tmp
        raise_if_signalled()  # as in write_atomically
        if not out.exists() and not out.is_symlink():
            os.replace(tmp, out)
            return
        if out.is_symlink():
            out.unlink()  # --force: the link itself is replaced
            os.replace(tmp, out)
            return
        for item in sorted(tmp.iterdir()):  # --force into an existing folder: same names replaced, others kept
            os.replace(item, out / item.name)
        tmp.rmdir()
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise error(f"{out}: cannot write {what or 'the folder'} ({_reason(exc, tmp, out)})") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _reason(exc: OSError, tmp: Path, out: Path) -> str:
    """Why a write failed, naming the path the user gave, never the temporary (pyarrow's messages name the file
    it opened: "Failed to open local file 'ro/.x.csv.22887.tmp'")."""
    text = exc.strerror or str(exc)
    for name, shown in ((str(tmp.absolute()), str(out.absolute())), (str(tmp), str(out)), (tmp.name, out.name)):
        text = text.replace(name, shown)
    return text


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _glob_escape(name: str) -> str:
    return "".join(f"[{c}]" if c in "*?[]" else c for c in name)
