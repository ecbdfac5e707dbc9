"""The ``jitterscope`` command ends without the interpreter's teardown (cli.console_main), and loses nothing by it:
its output reaches the reader, its exit status is the command's, ``atexit`` handlers run, a running thread is
waited for, and a reader that leaves early (a pipe to ``head``) is no error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

JITTERSCOPE = Path(sys.executable).with_name("jitterscope")


def _script(tmp_path: Path, body: str) -> subprocess.CompletedProcess:
    """``console_main`` with ``main`` replaced by ``body`` (a function ``command() -> int``)."""
    code = (f"import sys, threading, time, atexit\nimport jitterscope.cli as cli\n{body}\n"
            "cli.main = command\ncli.console_main()\n")
    buffered = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}  # as usual
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env=buffered)


def test_the_output_the_status_and_the_exit_handlers_are_kept(tmp_path: Path) -> None:
    body = ("def command():\n"
            "    atexit.register(lambda: open('atexit.txt', 'w').write('ran'))\n"
            "    for i in range(5000):  # small writes: the last of them wait in the stream's buffer\n"
            "        sys.stdout.write(f'{i}\\n')\n"
            "    sys.stderr.write('a note')\n"
            "    return 3\n")
    done = _script(tmp_path, body)
    assert done.returncode == 3 and done.stdout == "".join(f"{i}\n" for i in range(5000)) and done.stderr == "a note"
    assert (tmp_path / "atexit.txt").read_text() == "ran"


def test_a_thread_still_working_is_waited_for(tmp_path: Path) -> None:
    body = ("def command():\n"
            "    def late():\n"
            "        time.sleep(0.3)\n"
            "        open('late.txt', 'w').write('written')\n"
            "    threading.Thread(target=late).start()\n"
            "    return 0\n")
    done = _script(tmp_path, body)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "late.txt").read_text() == "written"


@pytest.mark.skipif(not JITTERSCOPE.exists(), reason="the jitterscope command is not installed beside this Python")
@pytest.mark.parametrize("command", [[str(JITTERSCOPE)], [sys.executable, "-m", "jitterscope"]])
def test_the_installed_command_ends_with_its_status_and_a_reader_may_leave_early(tmp_path: Path, command) -> None:
    version = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("jitterscope ") and version.stderr == ""
    missing = subprocess.run([*command, "summary", str(tmp_path / "missing")], capture_output=True, text=True,
                             timeout=60)
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1 and "no such file" in missing.stderr
    # a long output into a pipe whose reader reads one line: no traceback, no "Exception ignored"
    shell = f"{' '.join(command)} simulate --help; {' '.join(command)} --help | head -c 10 >/dev/null"
    piped = subprocess.run(["bash", "-o", "pipefail", "-c", shell], capture_output=True, text=True, timeout=60)
    assert "Traceback" not in piped.stderr and "Exception ignored" not in piped.stderr
