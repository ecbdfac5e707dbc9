"""The tails section on a two-mechanism mixture: nothing beyond the data in any output (Must show 3).

A lognormal body plus rare stalls of three periods is the shape of a real capture's tail (the demo's
fits gave xi = 1.2 and 4.1 and once-per-day levels of 10^8 µs and more).  Every place the tail numbers
go is opened: the PDF's text, the tables under ``--figures`` (CSV, JSON, LaTeX), and ``tails --json``.
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess

import pytest
from jitterscope.cli import main
from jitterscope.io import BaseLatency, SimulationSpec, Stalls, write_simulation
from jitterscope.report import write_report

RETURN_COLUMNS = ("1/hour [µs]", "low [µs]", "high [µs]", "1/day [µs]")


@pytest.fixture(scope="module")
def mixture(tmp_path_factory):
    spec = SimulationSpec(threads=2, samples=30_000, base=BaseLatency(spread=0.3),
                          effects=(Stalls(probability=5e-4, periods=3.0),))
    return write_simulation(spec, tmp_path_factory.mktemp("mixture") / "mix.parquet", seed=4)


@pytest.fixture(scope="module")
def written(mixture, tmp_path_factory):
    out = tmp_path_factory.mktemp("mixture-report")
    write_report(mixture, out / "r.pdf", figures_dir=out / "fig", sections=["tails"])
    return out


def _tex_blocks(tex: str) -> list[dict[str, list[str]]]:
    """Each tabular of a LaTeX table as {column name: the data rows' cells}."""
    blocks = []
    for body in tex.split(r"\toprule")[1:]:
        head, _, rest = body.partition(r"\midrule")
        data = rest.partition(r"\bottomrule")[0]
        names = [c.strip().strip("{}") for c in head.strip().splitlines()[0].rstrip(" \\").split("&")]
        rows = [[c.strip() for c in line.rstrip(" \\").split("&")] for line in data.strip().splitlines()]
        blocks.append({name: [row[i] for row in rows] for i, name in enumerate(names)})
    return blocks


def _max_us(rows: list[dict]) -> dict[int, float]:
    return {int(r["thread"]): float(r["max [µs]"]) for r in rows}


def test_figures_tables_carry_no_return_level(written):
    fig = written / "fig"
    rows = list(csv.DictReader(io.StringIO((fig / "tails-fit.csv").read_text(encoding="utf-8"))))
    assert len(rows) == 2
    for row in rows:
        assert row["beyond max"] == "withheld"
        assert all(row[c] == "" for c in RETURN_COLUMNS), row
        assert float(row["P(>max) [/wake-up]"]) == 0.0
        # every latency in the table is within the data
        assert all(float(row[c]) <= float(row["max [µs]"]) for c in row if "[µs]" in c and row[c])
    table = json.loads((fig / "tails-fit.json").read_text(encoding="utf-8"))
    assert all(r[c] is None for r in table["rows"] for c in RETURN_COLUMNS)
    assert any("mixes mechanisms" in note for note in table["notes"])
    tex = (fig / "tails-fit.tex").read_text(encoding="utf-8")
    data_rows = [line for line in tex.splitlines() if line.rstrip().endswith(r"\\") and "withheld" in line]
    assert len(data_rows) == 2
    # the wide table is split into blocks of <= 8 columns: the return levels (1/hour, and 1/day with its
    # interval in the block that holds it) are n/a in every block's rows
    blocks = _tex_blocks(tex)
    assert sum("1/hour" in b for b in blocks) == 1 and sum("1/day" in b for b in blocks) == 1
    for block in blocks:
        names = ("1/hour", "1/day", "low", "high") if "1/day" in block else ("1/hour",)
        for name in names:
            if name in block:
                assert block[name] == ["n/a", "n/a"], (name, block)
    events = list(csv.DictReader(io.StringIO((fig / "tails-events.csv").read_text(encoding="utf-8"))))
    one_ms = [r for r in events if float(r["above [µs]"]) == 1000]
    assert len(one_ms) == 2 and all(int(r["events"]) > 0 for r in one_ms)
    assert all(float(r["low"]) < float(r["per hour"]) < float(r["high"]) for r in one_ms)
    for name in ("tails-checks-0", "tails-checks-1"):
        notes = " ".join(json.loads((fig / f"{name}.json").read_text(encoding="utf-8"))["notes"])
        assert "once per" not in notes and "large events:" in notes


def test_pdf_pages_print_no_return_level_and_no_offset_axes(written):
    text = subprocess.run(["pdftotext", "-layout", str(written / "r.pdf"), "-"], capture_output=True, text=True,
                          check=True).stdout
    assert "mixes mechanisms" in text and "no extrapolation" in text
    assert "once per hour:" not in text and "once per day:" not in text
    assert "± nan" not in text and "nan" not in text.lower().split()
    # no latency in the 10^5 µs range and above (the axes' offsets are tested in tests/tails/test_plots.py)
    big = [float(m.replace(",", "")) for m in re.findall(r"(\d[\d,]*(?:\.\d+)?) µs", text)]
    assert big and max(big) < 1e5


def test_tails_json_and_text(mixture, capsys):
    assert main(["tails", str(mixture), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    for thread in report["threads"]:
        assert thread["extrapolated"] is False
        assert thread["return_levels"] == [] and thread["return_curve"] == []
        assert max(level for level, _ in thread["exceedance_probabilities"]) == thread["observed_max_ns"]
        assert {r["level_ns"] for r in thread["large_events"]} >= {1e6}
    assert main(["tails", str(mixture)]) == 0
    text = capsys.readouterr().out
    assert "once per hour:" not in text and "once per day:" not in text
    assert "mixes mechanisms" in text and "Large events counted" in text
