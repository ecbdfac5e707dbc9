"""The PDF report: pages rendered and not blank, Type 42 fonts, reproducible bytes, --figures outputs, registry."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from jitterscope.dataset import Metadata, ThreadInfo, open_dataset, write_dataset
from jitterscope.errors import JitterscopeError
from jitterscope.io import PeriodicDisturbance, SMIs, spec_from_options, write_simulation
from jitterscope.render import Page, Table, new_page
from jitterscope.report import build as report
from jitterscope.report import register_section, write_report
from jitterscope.summary import summarize
from matplotlib import image as mpimg
from pypdf import PdfReader

pytestmark = pytest.mark.skipif(not shutil.which("pdftoppm") or not shutil.which("pdffonts"),
                                reason="poppler-utils (pdftoppm, pdffonts) not installed")

EPOCH = "1764460800"
INK_THRESHOLD = 0.008  # non-white pixel fraction: report pages have >= 2.8 %, a footer-only page 0.23 %
# the sections this file tests; later sections test their own pages
MINE = ("findings", "planted", "provenance", "distributions", "timeline", "period", "events", "appendix")
FIGURE_PAGES = ("latency-histogram", "latency-percentiles", "latency-ccdf", "latency-over-time", "period-error")


def render(pdf: Path, out: Path) -> list[Path]:
    """Every page of ``pdf`` as a 50 dpi PNG, in page order."""
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(["pdftoppm", "-png", "-r", "50", str(pdf), str(out / "page")], check=True)
    return sorted(out.glob("page-*.png"), key=lambda p: int(p.stem.split("-")[-1]))


def ink(png: Path) -> float:
    pixels = mpimg.imread(png)[..., :3]
    return float((pixels.min(axis=2) < 0.9).mean())


def page_count(pdf: Path) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], check=True, capture_output=True, text=True).stdout
    return int(next(line.split()[-1] for line in info.splitlines() if line.startswith("Pages:")))


def pdf_text(pdf: Path) -> str:
    return subprocess.run(["pdftotext", "-layout", str(pdf), "-"], check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def simulated(tmp_path_factory) -> Path:
    spec = spec_from_options(threads=2, samples=20_000, effects=[
        PeriodicDisturbance(frequency_hz=10.0, amplitude_ns=20_000.0), SMIs(rate_hz=0.2, duration_ns=150_000)])
    return write_simulation(spec, tmp_path_factory.mktemp("sim") / "sim.parquet", seed=11)


@pytest.fixture(scope="module")
def rendered(simulated, tmp_path_factory):
    work = tmp_path_factory.mktemp("report")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SOURCE_DATE_EPOCH", EPOCH)
        info = write_report(simulated, work / "report.pdf", sections=MINE)
    return info, work


@pytest.fixture(scope="module")
def histogram_dataset(tmp_path_factory) -> Path:
    # cyclictest -h style: 1 µs bins per thread, extremes from the source
    rng = np.random.default_rng(2)
    rows = {"thread": [], "cpu": [], "bin_start_ns": [], "bin_width_ns": [], "count": []}
    threads = []
    for thread in range(2):
        counts = np.bincount(rng.poisson(4, 50_000), minlength=40)
        counts[35] = 2
        bins = np.flatnonzero(counts)
        rows["thread"] += [thread] * bins.size
        rows["cpu"] += [thread] * bins.size
        rows["bin_start_ns"] += (bins * 1000).tolist()
        rows["bin_width_ns"] += [1000] * bins.size
        rows["count"] += counts[bins].tolist()
        threads.append(ThreadInfo(thread=thread, cpu=thread, interval_ns=1_000_000, samples=int(counts.sum()),
                                  extra={"min_ns": 0, "max_ns": 35_400, "avg_ns": 4000.0, "overflows": 0}))
    table = pa.table({k: np.asarray(v) for k, v in rows.items()})
    meta = Metadata(kind="histogram", threads=tuple(threads),
                    source={"format": "cyclictest-histogram", "files": ["h.txt"], "reconstructed": {}, "notes": []})
    return write_dataset(table, meta, tmp_path_factory.mktemp("hist") / "hist.parquet")


def test_every_page_renders_and_none_is_blank(rendered, tmp_path):
    info, work = rendered
    pdf = work / "report.pdf"
    pages = render(pdf, tmp_path / "png")
    assert len(pages) == info.pages == page_count(pdf)
    texts = pdf_text(pdf).split("\f")
    provenance_pages = sum(1 for page in texts if page.strip().startswith("jitterscope report: sim.parquet"))
    assert provenance_pages >= 1
    assert info.sections == MINE
    text_pages = {heading: sum(1 for page in texts if page.strip().startswith(heading))
                  for heading in ("Findings: sim.parquet", "Planted versus recovered", "Events", "Reproducibility")}
    assert all(text_pages.values()), text_pages
    # findings, planted versus recovered, provenance, 4 distributions (histogram, log density, percentiles, CCDF),
    # latency over time (2 threads: 1 page), period error,
    # the event raster and the event tables, the appendix
    assert info.pages == sum(text_pages.values()) + provenance_pages + 4 + 1 + 1 + 1
    for png in pages:
        assert ink(png) > INK_THRESHOLD, png.name


def test_the_blank_check_can_fail(tmp_path):
    # a page carrying only what every page has (the footer) must count as blank
    fig, ax = new_page()
    ax.set_axis_off()
    fig.text(0.01, 0.005, "jitterscope 0.1.0 · x.parquet · sha256 0123456789ab · 2025-11-30", fontsize=8)
    fig.text(0.99, 0.005, "page 1", fontsize=8, ha="right")
    fig.savefig(tmp_path / "blank.pdf")
    (png,) = render(tmp_path / "blank.pdf", tmp_path / "png")
    assert ink(png) < INK_THRESHOLD / 2


def test_fonts_are_type42_truetype(rendered):
    _, work = rendered
    fonts = subprocess.run(["pdffonts", str(work / "report.pdf")], check=True, capture_output=True, text=True).stdout
    kinds = [line for line in fonts.splitlines()[2:] if line.strip()]
    assert kinds and all("TrueType" in line for line in kinds), fonts
    assert "Type 3" not in fonts


def test_source_date_epoch_gives_identical_bytes(rendered, simulated, tmp_path, monkeypatch):
    _, work = rendered
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    first = (work / "report.pdf").read_bytes()
    # the same command: the same -o path (the reproducibility page records it), written again
    write_report(simulated, work / "report.pdf", sections=MINE, overwrite=True)
    assert (work / "report.pdf").read_bytes() == first
    # CreationDate is the epoch's (read as a PDF reader does: joined pages write it with escapes, D\07220251130...)
    assert PdfReader(work / "report.pdf").metadata["/CreationDate"].startswith("D:20251130000000")


def test_figure_and_table_files_are_reproducible(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    table = Table(name="t", title="T", columns=("a [µs]",), rows=((1.5,),))
    for run in ("one", "two"):
        (tmp_path / run).mkdir()
        with matplotlib.rc_context(report.REPORT_RC):
            fig, ax = new_page()
            ax.plot([0, 1, 2], [3, 1, 2], label="x")
            ax.legend()
            report._export_figure(Page("fig", fig), tmp_path / run)
        report._export_table(table, tmp_path / run)
    for name in ("fig.pdf", "fig.svg", "fig.png", "t.csv", "t.json", "t.tex"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name


def test_page_one_has_findings_then_provenance_and_says_simulated(rendered, simulated):
    _, work = rendered
    text = pdf_text(work / "report.pdf")
    pages = text.split("\f")
    first = pages[0]
    assert first.strip().startswith("Findings: sim.parquet")
    assert "SIMULATED DATA" in first and "What happened" in first and "other CPUs' worst" in first
    assert "event rates" in first and "above 1 ms" in first  # the rates, with their intervals
    # a run of seconds: its rates per hour say they are extrapolated, and their intervals are not called exact
    assert "extrapolated" in first and "cluster-aware" in first and "exact Poisson" not in first
    file_hash = hashlib.sha256(simulated.read_bytes()).hexdigest()
    assert file_hash not in first  # hashes are in the appendix
    assert any(file_hash in page for page in pages if page.strip().startswith("Reproducibility"))
    provenance = next(page for page in pages if page.strip().startswith("jitterscope report: sim.parquet"))
    assert "SIMULATION" in provenance
    assert "40,000" in provenance  # rows
    assert "Latency summary" in provenance and "p99.99" in provenance
    assert "2025-11-30 00:00:00 UTC (SOURCE_DATE_EPOCH)" in provenance
    assert "Capture settings" in text and "Counters available" in text and "Environment" in text
    assert "Simulation: seed and spec" in text and "Planted versus recovered" in text
    assert all("SIMULATED DATA" in page for page in text.split("\f") if page.strip())  # every page's footer


def test_figures_dir_has_every_figure_and_table_in_every_format(simulated, tmp_path):
    figures = tmp_path / "figures"
    info = write_report(simulated, tmp_path / "r.pdf", figures_dir=figures, sections=MINE)
    assert len(list(figures.glob("*.pdf"))) == info.pages  # every page is also a figure file
    for name in FIGURE_PAGES:
        for ext in ("pdf", "svg", "png"):
            assert (figures / f"{name}.{ext}").stat().st_size > 1000, f"{name}.{ext}"
    assert mpimg.imread(figures / "latency-histogram.png").shape[0] > 500
    summary = summarize(open_dataset(simulated), top_k=20)
    for name in ("dataset", "summary", "settings", "counters", "environment", "events", "event-rates",
                 "findings-summary", "findings-worst", "findings-causes", "findings-red-flags", "reproducibility"):
        frame = pd.read_csv(figures / f"{name}.csv")
        assert len(frame) > 0, name
        obj = json.loads((figures / f"{name}.json").read_text())
        assert obj["name"] == name and len(obj["rows"]) == len(frame)
        tex = (figures / f"{name}.tex").read_text()
        assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex
    frame = pd.read_csv(figures / "summary.csv")
    assert frame["n"].tolist() == [t.n for t in summary.threads] + [summary.overall.n]
    assert frame["max [µs]"].tolist() == pytest.approx([t.max_ns / 1000 for t in summary.threads]
                                                        + [summary.overall.max_ns / 1000])
    events = pd.read_csv(figures / "events.csv")
    assert len(events) == 20  # --top: the catalogue lists events, the largest peak first
    assert events["peak [µs]"].iloc[0] == pytest.approx(summary.overall.max_ns / 1000)
    assert events["peak [µs]"].is_monotonic_decreasing
    assert set(info.figure_files) == {str(p) for p in figures.iterdir()}


def test_histogram_only_dataset_gets_a_report_with_notes(histogram_dataset, tmp_path):
    info = write_report(histogram_dataset, tmp_path / "h.pdf", sections=MINE)
    pages = render(tmp_path / "h.pdf", tmp_path / "png")
    assert len(pages) == info.pages
    for png in pages:
        assert ink(png) > INK_THRESHOLD, png.name
    text = pdf_text(tmp_path / "h.pdf")
    assert text.count("not available for histogram-only data") == 3  # timeline, period, events
    for title in ("Latency over time", "Period error distribution", "Latency spike events"):
        page = next(p for p in text.split("\f") if title in p)
        assert "not available for histogram-only data" in page
    assert "cyclictest-histogram" in text
    assert "Latency histogram" in text and "Latency percentiles" in text and "Complementary CDF" in text
    assert "35.4" in next(p for p in text.split("\f") if "Latency summary" in p)  # the source's max
    assert "SIMULATED" not in text


def test_sections_plug_in_through_the_registry(simulated, tmp_path, monkeypatch):
    report.registered_sections()  # import the section modules first, so the copy holds their sections
    monkeypatch.setattr(report, "_REGISTRY", dict(report._REGISTRY))
    calls = []

    @register_section(order=41, name="test-extra")
    def extra(ctx):
        calls.append(ctx.shared("answer", lambda: len(calls) + 42))
        fig, ax = new_page()
        ax.plot([0, 1], [0, 1])
        ax.set_xlabel("x [s]")
        return [Page("test-extra", fig), Table(name="test-extra-table", title="Extra", columns=("a",), rows=((1,),))]

    @register_section(order=1, name="test-nothing")
    def nothing(ctx):
        return None

    with pytest.raises(ValueError, match="registered twice"):
        register_section(order=1, name="test-extra")(nothing)
    names = [s.name for s in report.registered_sections()]
    assert names.index("test-nothing") == 0 and names.index("period") < names.index("test-extra")
    info = write_report(simulated, tmp_path / "r.pdf", figures_dir=tmp_path / "f",
                        sections=("test-nothing", "period", "test-extra"))
    assert calls == [42]
    assert "test-extra" in info.sections and "test-nothing" not in info.sections
    assert info.sections == ("period", "test-extra") and info.pages == 3
    assert (tmp_path / "f" / "test-extra.svg").exists() and (tmp_path / "f" / "test-extra-table.tex").exists()


def test_duplicate_page_names_are_refused(simulated, tmp_path, monkeypatch):
    report.registered_sections()  # import the section modules first, so the copy holds their sections
    monkeypatch.setattr(report, "_REGISTRY", dict(report._REGISTRY))

    @register_section(order=99, name="test-clash")
    def clash(ctx):
        return [Page("latency-histogram", new_page()[0])]

    with pytest.raises(ValueError, match="already used"):
        write_report(simulated, tmp_path / "r.pdf", sections=("distributions", "test-clash"))
    assert not (tmp_path / "r.pdf").exists()


def test_unwritable_outputs_are_one_line_errors(simulated, tmp_path, monkeypatch):
    with pytest.raises(JitterscopeError, match="no such directory"):
        write_report(simulated, tmp_path / "missing" / "r.pdf")
    with pytest.raises(JitterscopeError, match="is a directory"):
        write_report(simulated, tmp_path)
    (tmp_path / "file").write_text("x")
    with pytest.raises(JitterscopeError, match="not a directory"):
        write_report(simulated, tmp_path / "r.pdf", figures_dir=tmp_path / "file")
    with pytest.raises(JitterscopeError, match="unknown report section"):
        write_report(simulated, tmp_path / "r.pdf", sections=("nonsense",))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(JitterscopeError, match="SOURCE_DATE_EPOCH") as err:
        write_report(simulated, tmp_path / "r.pdf")
    assert "\n" not in str(err.value)


def test_a_single_wake_up_gives_notes_not_empty_figures(tmp_path):
    table = pa.table({"cpu": np.zeros(1, np.int32), "thread": np.zeros(1, np.int32), "seq": np.zeros(1, np.int64),
                      "expected_ns": np.array([10**12]), "actual_ns": np.array([10**12 + 5000])})
    meta = Metadata(kind="capture", threads=(ThreadInfo(thread=0, cpu=0, interval_ns=1_000_000, samples=1),))
    path = write_dataset(table, meta, tmp_path / "one.parquet")
    info = write_report(path, tmp_path / "one.pdf", sections=MINE)
    for png in render(tmp_path / "one.pdf", tmp_path / "png"):
        assert ink(png) > INK_THRESHOLD, png.name
    text = pdf_text(tmp_path / "one.pdf")
    assert text.count("Too few wake-ups to draw this") == 2  # percentiles, CCDF
    assert "no period can be measured" in text
    assert info.pages >= 7


def test_appendix_says_how_to_make_the_same_report(simulated, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    write_report(simulated, tmp_path / "a.pdf", sections=("appendix",), top_k=7)
    text = " ".join(pdf_text(tmp_path / "a.pdf").split())
    digest = hashlib.sha256(simulated.read_bytes()).hexdigest()
    assert f"dataset sha256 {digest}" in text  # one file: the dataset hash is the file's
    # the real -o path, not always "-o report.pdf"
    out = tmp_path / "a.pdf"
    assert f"SOURCE_DATE_EPOCH={EPOCH} jitterscope report {simulated} -o {out} --top 7 --sections appendix" in text
    assert f"matplotlib {matplotlib.__version__}" in text and f"numpy {np.__version__}" in text


def test_summary_only_source_gets_a_short_honest_report(tmp_path):
    from jitterscope.io import import_files

    formats = Path(__file__).resolve().parents[1] / "data" / "formats"
    table, meta = import_files([formats / "ct-quiet.json", formats / "ct-quiet.txt"])
    path = write_dataset(table, meta, tmp_path / "quiet.parquet")
    info = write_report(path, tmp_path / "q.pdf", figures_dir=tmp_path / "fig")
    assert info.sections == ("findings", "provenance", "appendix")
    pages = render(tmp_path / "q.pdf", tmp_path / "png")
    assert len(pages) == info.pages and all(ink(png) > INK_THRESHOLD for png in pages)
    text = pdf_text(tmp_path / "q.pdf")
    assert "n/a (summary-only source)" in text and "cyclictest-json" in text
    first = " ".join(text.split("\f")[0].split())
    assert "worst wake-up 208 µs on CPU 0; when is not recorded" in first
    summary = pd.read_csv(tmp_path / "fig" / "summary.csv")
    # the source's numbers (ct-quiet.json): count, min, avg (as the mean), max in µs; nothing else is claimed
    assert summary["n"].tolist() == [1000, 678, 1678]
    assert summary["min [µs]"].tolist() == [9.0, 12.0, 9.0]
    assert summary["max [µs]"].tolist() == [208.0, 46.0, 208.0]
    assert summary["mean [µs]"].tolist() == pytest.approx([13.45, 22.84, (1000 * 13.45 + 678 * 22.84) / 1678])
    assert summary[["p50 [µs]", "std [µs]", "p99 [µs]", "overruns"]].isna().all().all()
    names = {Path(name).stem for name in info.figure_files}
    assert "summary" in names and not any(n.startswith(("latency-", "spectrum", "tail", "period")) for n in names)
    with pytest.raises(JitterscopeError, match=r"summary-only source .* no data for section.* distributions"):
        write_report(path, tmp_path / "d.pdf", sections=["distributions"])


def test_simulation_spec_table_lists_seed_and_spec_not_the_planted_draws() -> None:
    from jitterscope.report import simulation_spec_table

    truth = {
        "seed": 7,
        "smi": {"type": "smi", "rate_hz": 0.1, "times_ns": {"count": 23, "values": list(range(100, 123))}},
        "spec": {"cpus": [0, 1], "effects": [{"type": "pstates", "levels_mhz": [1600.0, 2400.0]}]},
    }
    rows = dict(simulation_spec_table(truth).rows)
    assert rows["seed"] == 7
    assert not any(key.startswith("smi") for key in rows)  # the draws are in the planted-versus-recovered table
    assert rows["spec.cpus"] == "0, 1"
    assert rows["spec.effects[0].levels_mhz"] == "1600.0, 2400.0"


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc to read the resident set")
def test_release_freed_memory_returns_what_ended_threads_freed():
    """Between analyses the report hands freed memory back (issue 11: each analysis's peak stacked on the last
    one's leftovers, which the arenas of its ended worker threads kept)."""
    import threading

    from jitterscope.report.build import release_freed_memory

    def resident_mib() -> int:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
        raise AssertionError("no VmRSS")

    survivor = []

    def work() -> None:
        parts = [np.ones(8192) for _ in range(4000)]  # 64 KiB each, below glibc's mmap threshold: 250 MiB
        survivor.append(parts[-1])  # the last one lives on, so the arena's top cannot shrink by itself
        del parts

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    before = resident_mib()
    release_freed_memory()
    assert before - resident_mib() > 150
