"""The layout check over every figure (issue 25, must-show 1): how many distinct figures, at which widths, and how
many text boxes clipped (off the canvas, or a data label past its panel), overlapping, or legends and labels on
the data.

Figures of: the report of a real traced capture (tests/data/capture/traced-2s), of a cyclictest -v and a
jitterdebugger import (tests/data/formats), of a 10^6 simulation (2 threads x 500,000 wake-ups with P-states,
coupling, SMIs and a 113 Hz line), the compare PDF of 3 runs and the fleet PDF of 20 machines.  Each report
figure is checked as the PDF draws it (A4 landscape) and refitted as ``report --figures DIR --figure-width page``
and ``column`` make it; the compare and fleet PDFs have no ``--figures`` (A4 only).  A figure is "distinct" per
source and page name (the same page of two sources counts twice: different data, different layout).

Usage: ``python benchmarks/figure_layout.py [--samples 500000] [--workdir DIR]``; prints one line per problem and
the totals; exits 1 when any problem is found.

Result (71fdd5f's code, --samples 500000, the shared 2-CPU VM, not quiet; 11.4 min): distinct figures 65 (traced
capture 13, cyclictest -v 13, jitterdebugger 13, simulation 10^6 18, compare of 3 runs 2, fleet of 20 machines 6);
179 checks (figure x width); clipped 0, overlapping 0, legends/labels on data 0, titles over 2 lines at a paper's
width 0, caption problems 0.  Before (6886073): legends on data 2, the 10^6 simulation's frequency-timeline-cpu0/cpu1
at column width; titles were not counted then (the PSD's took six lines at a column's width, the frequency
timeline's five, the event averages' four).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"


def _check(figure, name: str, counts: dict[str, int], problems: list[str], *, refitted: bool = False) -> None:
    from jitterscope.render import caption_problems, layout_problems, long_titles

    found = layout_problems(figure, name=name)
    long = long_titles(figure, name=name) if refitted else []  # at a paper's width: two lines at most
    counts["long titles"] += len(long)
    for problem in found + long + caption_problems(figure, name=name):
        print(problem, flush=True)  # as found: a 10^6 report takes minutes
        problems.append(problem)
    counts["checks"] += 1
    counts["clipped"] += sum("outside the canvas" in p or "past the frame" in p for p in found)
    counts["overlapping"] += sum(" overlaps " in p for p in found)
    counts["covering data"] += sum(" covers " in p for p in found)


def report_figures(source: str, dataset: Path, out: Path, counts: dict[str, int], problems: list[str],
                   names: set[str]) -> None:
    """Every figure page of the report of ``dataset`` at A4, and refitted to column and to page width (a report
    each: a figure holding functions, as a secondary axis does, cannot be copied)."""
    from jitterscope.render import fit_for_paper
    from jitterscope.report import build, write_report

    original = build._export_figure
    for width in ("column", "page"):
        def export(page, directory, width=width, first=width == "column"):
            if page.kind != "figure":
                return []
            if first:
                names.add(f"{source}: {page.name}")
                _check(page.figure, f"{source} {page.name} at A4", counts, problems)
            fit_for_paper(page.figure, width)
            _check(page.figure, f"{source} {page.name} at {width} width", counts, problems, refitted=True)
            return []

        build._export_figure = export
        try:
            # one process: the check runs where the page is drawn (a forked worker's findings would be lost)
            write_report(dataset, out / f"{source}.pdf", figures_dir=out / f"figures-{source}", figure_width=width,
                         workers=1, overwrite=True)
        finally:
            build._export_figure = original


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=500_000, help="wake-ups per thread of the simulation")
    parser.add_argument("--workdir", type=Path, help="keep the inputs here (default: a temporary folder)")
    args = parser.parse_args(argv)

    import matplotlib
    from jitterscope.cli import main as cli
    from jitterscope.compare import compare_runs
    from jitterscope.compare.pdf import compare_pages
    from jitterscope.dataset import open_dataset
    from jitterscope.fleet import run_fleet, write_simulated_fleet
    from jitterscope.fleet.pdf import fleet_pages
    from jitterscope.render import REPORT_RC

    work = args.workdir or Path(tempfile.mkdtemp(prefix="jitterscope-layout-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    traced = work / "traced"
    if not traced.exists():
        shutil.copytree(DATA / "capture" / "traced-2s", traced)
    inputs = {"traced capture": traced, "cyclictest -v": work / "ct.parquet", "jitterdebugger": work / "jd.parquet",
              "simulation 10^6": work / "sim.parquet"}
    cli(["import", str(DATA / "formats" / "ct-verbose.txt"), "-o", str(inputs["cyclictest -v"]), "-q", "--force"])
    cli(["import", str(DATA / "formats" / "jd-fresh"), "-o", str(inputs["jitterdebugger"]), "-q", "--force"])
    cli(["simulate", "-o", str(inputs["simulation 10^6"]), "--threads", "2", "--interval-us", "100", "--samples",
         str(args.samples), "--pstates", "800,2400", "--dwell-ms", "50", "--coupling", "0.5:30:3", "--smi",
         "0.5:200", "--periodic", "113:3", "--seed", "1", "--force"])
    runs = []
    for i, median in enumerate(("3", "4", "3")):
        path = work / f"run{i}.parquet"
        cli(["simulate", "-o", str(path), "--threads", "2", "--samples", "20000", "--median-us", median, "--seed",
             str(i), "--force"])
        runs.append(open_dataset(path))
    fleet_dir = work / "fleet"
    if fleet_dir.exists():
        shutil.rmtree(fleet_dir)
    fleet = write_simulated_fleet(fleet_dir, hosts=20, nights=3, samples=2_000)

    counts = {"checks": 0, "clipped": 0, "overlapping": 0, "covering data": 0, "long titles": 0}
    problems: list[str] = []
    names: set[str] = set()
    with matplotlib.rc_context(REPORT_RC):
        for source, path in inputs.items():
            report_figures(source, path, work, counts, problems, names)
        for label, pages in (("compare of 3 runs", compare_pages(compare_runs(runs, n_boot=200))),
                             ("fleet of 20 machines", fleet_pages(run_fleet(list(fleet.paths), scheduler="serial")))):
            for page in pages:
                if page.kind == "figure":
                    names.add(f"{label}: {page.name}")
                    _check(page.figure, f"{label} {page.name} at A4", counts, problems)
    by_source: dict[str, int] = {}
    for name in names:
        by_source[name.split(": ")[0]] = by_source.get(name.split(": ")[0], 0) + 1
    print("distinct figures: " + ", ".join(f"{k} {v}" for k, v in by_source.items()) + f"; total {len(names)}")
    print(f"checks (figure x width): {counts['checks']}; clipped {counts['clipped']}, overlapping "
          f"{counts['overlapping']}, legends/labels on data {counts['covering data']}, titles over 2 lines at a "
          f"paper's width {counts['long titles']}, caption problems "
          f"{len(problems) - sum(counts[k] for k in ('clipped', 'overlapping', 'covering data', 'long titles'))}; "
          f"{time.perf_counter() - started:.0f} s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
