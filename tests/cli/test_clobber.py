"""Clobber tests for every writer: an input is never replaced, nothing existing without --force, no link written
through, and a writer stopped by SIGINT/SIGTERM/SIGKILL leaves no temporary behind (or one the next run cleans).

Writers: report (-o and --figures), compare -o, export, pack, import, simulate.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jitterscope.cli import main
from jitterscope.io import SimulationSpec, write_simulation

FORMATS = Path(__file__).resolve().parents[1] / "data" / "formats"
CLI = "import sys; from jitterscope.cli import main; sys.exit(main())"


def _run(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, err.getvalue()


def _digest(path: Path) -> str:
    if path.is_dir():
        return hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in sorted(path.iterdir()))).hexdigest()
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("clobber")
    dataset = write_simulation(SimulationSpec(threads=1, samples=300), root / "in.parquet", 1)
    folder = root / "parts"
    folder.mkdir()
    write_simulation(SimulationSpec(threads=1, samples=300), folder / "part-00000.parquet", 1)
    spec = root / "spec.json"
    spec.write_text(json.dumps({"threads": 1, "samples": 200}))
    return {"dataset": dataset, "folder": folder, "spec": spec, "text": FORMATS / "ct-verbose.txt"}


# writer -> (argv with {input} and {out}, the input it reads)
WRITERS = {
    "report": (["report", "{input}", "-o", "{out}", "-q", "--sections", "provenance"], "dataset"),
    "report-figures": (["report", "{input}", "-o", "{tmp}/r.pdf", "-q", "--sections", "provenance",
                        "--figures", "{out}"], "dataset"),
    "compare": (["compare", "{input}", "{input}", "--resamples", "20", "-o", "{out}"], "dataset"),
    "export": (["export", "{input}", "--format", "csv", "-o", "{out}"], "dataset"),
    "pack": (["pack", "{input}", "-o", "{out}"], "dataset"),
    "pack-folder": (["pack", "{input}", "-o", "{out}"], "folder"),
    "import": (["import", "{input}", "-o", "{out}"], "text"),
    "simulate": (["simulate", "--spec", "{input}", "-o", "{out}"], "spec"),
}


def _argv(writer: str, source: Path, out: Path, tmp: Path, force: bool = False) -> list[str]:
    template, _ = WRITERS[writer]
    argv = [a.format(input=source, out=out, tmp=tmp) for a in template]
    return [*argv, "--force"] if force else argv


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("force", [False, True])
def test_the_input_as_output_or_inside_it_is_refused_even_with_force(inputs, tmp_path, writer, force) -> None:
    source = inputs[WRITERS[writer][1]]
    before = _digest(source)
    targets = [source] + ([source / "part-00004.parquet", source / "sub"] if source.is_dir() else [])
    for target in targets:
        code, err = _run(*_argv(writer, source, target, tmp_path, force))
        assert code == 1 and err.count("\n") == 1 and "an input of this command" in err, (writer, target, err)
        assert _digest(source) == before


@pytest.mark.parametrize("writer", WRITERS)
def test_existing_symlink_and_dangling_link(inputs, tmp_path, writer) -> None:
    source = inputs[WRITERS[writer][1]]
    directory = writer == "report-figures"
    existing = tmp_path / "existing"
    (existing.mkdir() and None) if directory else existing.write_text("keep me")
    if directory:
        (existing / "mine.txt").write_text("keep me")
    before = _digest(existing)
    code, err = _run(*_argv(writer, source, existing, tmp_path))
    assert code == 1 and err.count("\n") == 1 and ("--force" in err), err
    assert _digest(existing) == before

    victim = tmp_path / "victim.txt"
    victim.write_text("the link's target")
    link = tmp_path / "link"
    link.symlink_to(victim)
    code, err = _run(*_argv(writer, source, link, tmp_path))
    assert code == 1 and "symbolic link" in err and err.count("\n") == 1, err
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere" / "file")
    code, err = _run(*_argv(writer, source, dangling, tmp_path))
    assert code == 1 and "symbolic link (dangling)" in err, err
    assert not (tmp_path / "nowhere").exists()

    # --force replaces the link itself: its target stays as it was
    code, err = _run(*_argv(writer, source, link, tmp_path, force=True))
    assert code == 0, err
    assert not link.is_symlink() and victim.read_text() == "the link's target"
    if directory:  # --force into an existing folder: same names replaced, the others kept
        code, err = _run(*_argv(writer, source, existing, tmp_path, force=True))
        assert code == 0 and (existing / "mine.txt").read_text() == "keep me", err
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def _temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp")]


def _signalled_writer(out: Path, signum: int) -> tuple[subprocess.Popen, str]:
    """A simulate writing ``out``, sent ``signum`` once its temporary is seen, up to five times: under a
    loaded CI the test can be descheduled between seeing the temporary and the kill, and the writer may
    rename it in between; such a try says nothing about the signal and is made again."""
    # niced, so that under a loaded CI this test sees the temporary while the writer is still writing it
    argv = ["nice", "-n", "15", sys.executable, "-c", CLI, "simulate", "-o", str(out), "--samples", "2e6",
            "--threads", "2"]
    for _ in range(5):
        out.unlink(missing_ok=True)
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while not _temporaries(out.parent) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _temporaries(out.parent), "the writer never started its temporary"
        os.kill(process.pid, signum)
        _, err = process.communicate(timeout=120)
        if process.returncode != 0 and not out.exists():  # stopped before its rename: the case under test
            return process, err
    return process, err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_writer_stopped_by_a_signal_leaves_no_temporary(tmp_path, signum) -> None:
    out = tmp_path / "big.parquet"
    process, err = _signalled_writer(out, signum)
    assert "Traceback" not in err, err
    assert not out.exists()
    if signum != signal.SIGKILL:
        assert process.returncode == (130 if signum == signal.SIGINT else 143), err
        assert err.count("\n") == 1
        assert not _temporaries(tmp_path)
        return
    # SIGKILL cannot be caught: the temporary of the dead process is removed by the next write of the same file
    left = _temporaries(tmp_path)
    assert left
    code, err = _run("simulate", "-o", str(out), "--samples", "100")
    assert code == 0, err
    assert not _temporaries(tmp_path) and out.exists()
