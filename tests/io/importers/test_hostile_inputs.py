"""Inputs that are not files, and files without line ends (issue 26).

Before the fix ``jitterscope import /dev/zero -o x --format cyclictest-verbose`` never ended (RSS 1.4 GB after
45 s and rising), and a FIFO was "file is empty (0 bytes)". Inputs are now regular files, said in one line, and
a line longer than :data:`MAX_LINE_BYTES` is an error naming its number, so memory stays bounded whatever the input.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jitterscope.io.importers._common import MAX_LINE_BYTES

# The child's own peak is VmHWM of its own address space, read at exit: wait4's ru_maxrss would also count the
# pages of the (v)forked pytest worker before exec, hundreds of MB late in a run.
CLI = ("import atexit, os, sys\n"
       "def _peak():\n"
       "    with open('/proc/self/status') as status, open(os.environ['JS_PEAK_FILE'], 'w') as out:\n"
       "        out.write(next(line for line in status if line.startswith('VmHWM:')).split()[1])\n"
       "atexit.register(_peak)\n"
       "from jitterscope.cli import main\n"
       "sys.exit(main())")
FORMATS = [None, "cyclictest-verbose", "cyclictest-histogram", "cyclictest-json", "jitterdebugger-samples",
           "oslat", "rtla-timerlat-hist", "cyclictest-quiet", "periodic-timer"]


def _import(args: list[str], timeout: float = 60) -> tuple[int, str, int]:
    """Run ``jitterscope import`` in a process; return its status, stderr and peak RSS in bytes."""
    err = Path(os.environ.get("TMPDIR", "/tmp")) / f"import-stderr-{os.getpid()}-{time.monotonic_ns()}"
    peak_file = err.with_name(err.name + ".peak")
    with err.open("w+") as stderr:
        process = subprocess.Popen([sys.executable, "-c", CLI, "import", *args], stdout=subprocess.DEVNULL,
                                   stderr=stderr, text=True, env={**os.environ, "JS_PEAK_FILE": str(peak_file)})
        deadline = time.monotonic() + timeout
        while True:
            pid, status, _ = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                process.kill()
                process.wait()
                pytest.fail(f"import {args} did not end within {timeout} s")
            time.sleep(0.05)
        process.returncode = os.waitstatus_to_exitcode(status)
        stderr.seek(0)
        text = stderr.read()
    err.unlink()
    peak_kib = int(peak_file.read_text())
    peak_file.unlink()
    return process.returncode, text, peak_kib * 1024


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)  # nobody writes: opening it for reading would wait forever
    return path


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f or "auto")
@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_inputs_that_are_not_regular_files_are_refused(tmp_path, fmt, kind) -> None:
    source = "/dev/zero" if kind == "device" else str(_fifo(tmp_path))
    args = [source, "-o", str(tmp_path / "x.parquet"), *(["--format", fmt] if fmt else [])]
    code, err, _ = _import(args, timeout=60)
    assert code == 1, err
    what = "a character device" if kind == "device" else "a FIFO (named pipe)"
    assert err == (f"jitterscope import: error: {source}: is {what}, not a regular file; jitterscope imports files "
                   "(save the tool's output to a file first)\n")
    assert not (tmp_path / "x.parquet").exists()


@pytest.mark.parametrize("fmt", [None, "ftrace", "trace-cmd-report"], ids=lambda f: f or "turbostat")
def test_a_fifo_onto_a_dataset_is_refused(tmp_path, fmt) -> None:
    """Traces and turbostat timelines are attached with --onto: the same refusal there."""
    fifo = _fifo(tmp_path)
    dataset = tmp_path / "d.parquet"
    assert subprocess.run([sys.executable, "-c", CLI, "simulate", "--samples", "100", "-o", str(dataset)],
                          capture_output=True).returncode == 0
    code, err, _ = _import([str(fifo), "--onto", str(dataset), "-o", str(tmp_path / "x.parquet"),
                            *(["--format", fmt] if fmt else [])])
    assert code == 1 and "is a FIFO (named pipe), not a regular file" in err and err.count("\n") == 1, err


def test_a_line_longer_than_the_limit_names_its_number(tmp_path) -> None:
    text = tmp_path / "ct.txt"
    with text.open("wb") as handle:
        handle.write(b"       0:       0:      12\n       0:       1:      11\n")
        handle.write(b"9" * (MAX_LINE_BYTES + 10) + b"\n")
        handle.write(b"       0:       2:      13\n")
    code, err, _ = _import([str(text), "-o", str(tmp_path / "x.parquet"), "--format", "cyclictest-verbose"])
    assert code == 1, err
    assert err == (f"jitterscope import: error: {text}: not valid cyclictest-verbose output: line 3: longer than 1 MiB "
                   "(the longest line an import reads); the file is binary or damaged, or not this format\n")


@pytest.mark.parametrize("fmt", ["cyclictest-verbose", "cyclictest-histogram", "oslat", "periodic-timer"])
def test_a_large_file_without_line_ends_stays_small_in_memory(tmp_path, fmt) -> None:
    """/dev/zero's content as a regular file (64 MiB of NUL, no newline): refused at the line limit."""
    zeros = tmp_path / "zeros"
    with zeros.open("wb") as handle:
        handle.truncate(64 << 20)
    started = time.monotonic()
    code, err, peak = _import([str(zeros), "-o", str(tmp_path / "x.parquet"), "--format", fmt])
    assert code == 1 and "line 1: longer than 1 MiB" in err and err.count("\n") == 1, err
    assert time.monotonic() - started < 30
    assert peak < 400 << 20, peak >> 20  # the interpreter and its libraries, not the file (was unbounded)


def test_whole_file_formats_are_bounded(tmp_path, monkeypatch) -> None:
    """JSON documents are read whole: up to MAX_INPUT_BYTES, then one line instead of reading on."""
    from jitterscope.errors import ImportFormatError
    from jitterscope.io.importers import _common
    big = tmp_path / "big.json"
    big.write_bytes(b"[" + b"0," * 600 + b"0]")
    monkeypatch.setattr(_common, "MAX_INPUT_BYTES", 1000)
    with pytest.raises(ImportFormatError, match="more than 0 MiB, too large to read into memory"):
        _common.read_bytes(big, _common.MAX_INPUT_BYTES)


def test_deeply_nested_json_input_is_refused_before_parsing(tmp_path) -> None:
    deep = tmp_path / "ct.json"
    deep.write_text('{"thread": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, err, _ = _import([str(deep), "-o", str(tmp_path / "x.parquet"), "--format", "cyclictest-json"])
    assert code == 1 and err.count("\n") == 1 and "nested more than 64 levels deep" in err, err


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_as_poll_refuses_inputs_that_are_not_regular_files(tmp_path, kind) -> None:
    """``--as poll`` (oslat, rtla osnoise top/hist) sniffs the file first: a device or a FIFO is refused before
    it is opened, in the same line as the other imports."""
    source = "/dev/zero" if kind == "device" else str(_fifo(tmp_path))
    code, err, _ = _import([source, "--as", "poll", "-o", str(tmp_path / "x")], timeout=60)
    what = "a character device" if kind == "device" else "a FIFO (named pipe)"
    assert code == 1 and err == (f"jitterscope import: error: {source}: is {what}, not a regular file; jitterscope "
                                 "imports files (save the tool's output to a file first)\n"), err
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("head", [b"", b"# RTLA osnoise histogram\n", b"Operating System Noise\nCPU Period Runtime "
                                  b"Noise % CPU Aval Max Noise Max Single HW NMI IRQ Softirq Thread\n"],
                         ids=["zeros", "rtla-osnoise-hist", "rtla-osnoise-top"])
def test_as_poll_of_a_large_file_without_line_ends_stays_small(tmp_path, head) -> None:
    """64 MiB of NUL after an rtla header (or none): one line, memory bounded, no dataset."""
    zeros = tmp_path / "zeros"
    with zeros.open("wb") as handle:
        handle.write(head)
        handle.truncate(64 << 20)
    started = time.monotonic()
    code, err, peak = _import([str(zeros), "--as", "poll", "-o", str(tmp_path / "x")])
    assert code == 1 and err.count("\n") == 1, err
    assert ("longer than 1 MiB" in err) if head else ("nor rtla osnoise top/hist text" in err), err
    assert time.monotonic() - started < 30
    assert peak < 400 << 20, peak >> 20
    assert not (tmp_path / "x").exists()
