"""SIGHUP (the terminal closed) and SIGQUIT (Ctrl-\\) end a command like SIGINT/SIGTERM (issue 26).

Before the fix a SIGHUP left ``report``'s ``.big.pdf.PID.tmp`` and a ``.figs.PID.tmp/`` directory of figures, and
``import`` a ``.X.parquet.PID.tmp`` of 14.7 MB: Python's default action for SIGHUP ends the process without
unwinding. Now both unwind as SIGTERM does: temporaries removed, one line, exit status 128 + the signal.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CLI = "import sys; from jitterscope.cli import main; sys.exit(main())"
SIGNALS = [signal.SIGHUP, signal.SIGQUIT]


def _temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if ".tmp" in p.name]


def _stop_while_writing(argv: list[str], folder: Path, signum: int, timeout: float = 240) -> tuple[int, str]:
    process = subprocess.Popen([sys.executable, "-c", CLI, *argv], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, cwd=folder)
    deadline = time.monotonic() + timeout
    while not _temporaries(folder) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _temporaries(folder), f"{argv[0]} never started its temporary"
    os.kill(process.pid, signum)
    _, err = process.communicate(timeout=120)
    return process.returncode, err


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_simulate(tmp_path, signum) -> None:
    out = tmp_path / "big.parquet"
    code, err = _stop_while_writing(["simulate", "-o", str(out), "--samples", "2e6", "--threads", "2"], tmp_path,
                                    signum)
    assert code == 128 + signum, err
    assert err == f"jitterscope: terminated ({signal.Signals(signum).name})\n"
    assert not out.exists() and not _temporaries(tmp_path)


def test_import(tmp_path) -> None:
    text = tmp_path / "ct.txt"
    with text.open("w") as handle:
        handle.write("Thread 0 Interval: 1500\nThread 1 Interval: 2000\n")
        for block in range(40):
            handle.write("".join(f"       {t}:{i:8d}:      {10 + i % 7}\n"
                                 for i in range(block * 20_000, (block + 1) * 20_000) for t in (0, 1)))
    out = tmp_path / "x.parquet"
    code, err = _stop_while_writing(["import", str(text), "-o", str(out), "--format", "cyclictest-verbose"],
                                    tmp_path, signal.SIGHUP)
    assert code == 128 + signal.SIGHUP and "Traceback" not in err, err
    assert not out.exists() and not _temporaries(tmp_path)


def test_sample_lines_without_a_header(tmp_path) -> None:
    """A log cut at its start (found by the sweep): IndexError in resolve_intervals before."""
    text = tmp_path / "ct.txt"
    text.write_text("".join(f"       0:{i:8d}:      12\n" for i in range(100)))
    done = subprocess.run([sys.executable, "-c", CLI, "import", str(text), "-o", str(tmp_path / "x.parquet"),
                           "--format", "cyclictest-verbose"], capture_output=True, text=True)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "preamble: no 'Thread N Interval:' header" in done.stderr


def test_report_with_figures(tmp_path) -> None:
    dataset = tmp_path / "d.parquet"
    subprocess.run([sys.executable, "-c", CLI, "simulate", "-o", str(dataset), "--samples", "3000"], check=True,
                   capture_output=True)
    argv = ["report", str(dataset), "-o", str(tmp_path / "big.pdf"), "--figures", str(tmp_path / "figs")]
    code, err = _stop_while_writing(argv, tmp_path, signal.SIGHUP)
    assert code == 128 + signal.SIGHUP and "Traceback" not in err, err
    assert not _temporaries(tmp_path), _temporaries(tmp_path)
    assert not (tmp_path / "big.pdf").exists() and not (tmp_path / "figs").exists()
