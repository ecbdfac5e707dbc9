"""A small report's two longest shared analyses run side by side (report/build.py, issue 25): the spectra in a
forked child while the report's own process fits the tails, each once; a child that fails leaves the spectra to
the report's process; one drawing process, or a large dataset, computes them one after the other as before."""

from __future__ import annotations

import os
import shutil
import subprocess

import jitterscope.spectrum as spectrum
import pytest
from jitterscope.io import BaseLatency, PeriodicDisturbance, SimulationSpec, write_simulation
from jitterscope.report import build
from jitterscope.report.build import write_report
from jitterscope.report.sections import spectrum as spectrum_section

SECTIONS = ("spectrum", "tails")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    spec = SimulationSpec(threads=1, samples=5_000, base=BaseLatency(median_ns=3_000, spread=0.3),
                          effects=(PeriodicDisturbance(frequency_hz=20.0, amplitude_ns=20_000, width_ns=1_000_000),))
    return write_simulation(spec, tmp_path_factory.mktemp("prefetch") / "s.parquet", 2)


def _spectra_by_pid(monkeypatch, log, *, fail_in_child: bool = False) -> None:
    """Each spectral analysis appends the pid of the process that ran it to ``log``; with ``fail_in_child`` a
    child ends at once, as a killed one would."""
    original, parent = spectrum.analyze_spectra, os.getpid()

    def recorded(*args, **kwargs):
        if fail_in_child and os.getpid() != parent:
            os._exit(3)
        with open(log, "a") as handle:
            handle.write(f"{os.getpid()}\n")
        return original(*args, **kwargs)

    monkeypatch.setattr(spectrum, "analyze_spectra", recorded)
    monkeypatch.setattr(spectrum_section, "analyze_spectra", recorded)  # the section's own name for it


def _pids(log) -> list[int]:
    return [int(line) for line in log.read_text().split()] if log.exists() else []


def _children() -> set[int]:
    """This process's child processes (zombies included), by their parent pid in /proc/PID/stat: not
    ``waitpid(-1)``, which would reap (and see) the children of other tests in the same worker."""
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    stat = handle.read()
            except OSError:  # ended meanwhile
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():  # field 4, after "(comm)" and the state
                found.add(int(entry))
    return found


@pytest.fixture
def no_children_left():
    """Checks, after the test, that the report left no child of its own behind (running or unreaped)."""
    before = _children()
    yield
    assert _children() <= before


def test_the_spectra_run_in_a_child_once_and_the_report_is_the_same(dataset, tmp_path, monkeypatch,
                                                                     no_children_left) -> None:
    log = tmp_path / "pids"
    _spectra_by_pid(monkeypatch, log)
    side = write_report(dataset, tmp_path / "side.pdf", sections=SECTIONS, workers=2)
    assert len(_pids(log)) == 1 and _pids(log)[0] != os.getpid()  # once, in the child
    log.unlink()
    alone = write_report(dataset, tmp_path / "alone.pdf", sections=SECTIONS, workers=1)
    assert _pids(log) == [os.getpid()]  # one drawing process: here, as before
    assert (side.pages, side.sections) == (alone.pages, alone.sections) and side.pages >= 3


def test_a_failed_child_leaves_the_spectra_to_the_report(dataset, tmp_path, monkeypatch, no_children_left) -> None:
    log = tmp_path / "pids"
    _spectra_by_pid(monkeypatch, log, fail_in_child=True)
    info = write_report(dataset, tmp_path / "r.pdf", sections=SECTIONS, workers=2)
    assert _pids(log) == [os.getpid()]
    assert "spectrum" in info.sections


def test_one_drawing_process_or_a_large_dataset_computes_one_analysis_after_the_other(dataset, tmp_path,
                                                                                     monkeypatch) -> None:
    from jitterscope.dataset import open_dataset

    ctx = build.build_context(open_dataset(dataset))
    ctx.sections = SECTIONS
    build._start_shared_work(ctx, tmp_path, workers=1)
    monkeypatch.setattr(build, "PREFETCH_MAX_WAKEUPS", 1_000)  # 10,000 wake-ups count as large
    build._start_shared_work(ctx, tmp_path, workers=2)
    assert ctx._prefetched == {} and ctx._shared == {}  # nothing started: the sections compute each in turn


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs pdftotext (poppler-utils)")
def test_sections_that_wait_for_the_child_are_built_last_and_the_pages_keep_their_order(
        dataset, tmp_path, monkeypatch, no_children_left) -> None:
    """While the child computes the spectra, the report's process builds the sections that do not use them;
    page 1 and the spectra come after, and the report reads the same as built in order by one process."""
    sections = ("findings", "provenance", "distributions", "spectrum", "tails", "appendix")
    built: list[str] = []
    original = build.build_order

    def recorded(chosen, ctx):
        order = original(chosen, ctx)
        built.append([section.name for section in order])
        return order

    monkeypatch.setattr(build, "build_order", recorded)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764460800")
    texts = {}
    for workers in (2, 1):
        folder = tmp_path / f"w{workers}"
        folder.mkdir()
        monkeypatch.chdir(folder)  # the same -o path: the reproducibility page quotes it
        info = write_report(dataset, "r.pdf", sections=sections, workers=workers)
        assert info.sections == sections  # contributed in report order
        texts[workers] = subprocess.run(["pdftotext", "-layout", "r.pdf", "-"], check=True, capture_output=True,
                                        text=True).stdout.split("\f")
    assert built == [["provenance", "distributions", "tails", "appendix", "findings", "spectrum"], list(sections)]
    assert len(texts[2]) > 6 and texts[2] == texts[1]


def test_the_build_order_moves_only_the_sections_whose_analysis_is_pending() -> None:
    from jitterscope.report.build import RegisteredSection, build_order

    def section(name: str, *uses: str) -> RegisteredSection:
        return RegisteredSection(name=name, order=0, function=lambda ctx: None, uses=uses)

    class Context:
        def __init__(self, pending: set[str]) -> None:
            self.pending = pending.__contains__

    chosen = [section("a", "spectrum"), section("b"), section("c", "tails"), section("d", "spectrum", "tails")]
    assert [s.name for s in build_order(chosen, Context({"spectrum"}))] == ["b", "c", "a", "d"]
    assert [s.name for s in build_order(chosen, Context(set()))] == ["a", "b", "c", "d"]
