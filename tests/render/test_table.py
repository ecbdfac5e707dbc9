"""Tables: text layout, CSV/JSON round trips, LaTeX booktabs with every special escaped."""

from __future__ import annotations

import io
import json
import math

import pandas as pd
import pytest
from jitterscope.render import (
    Table,
    format_cell,
    key_value_table,
    latex_escape,
    text_header_lines,
    to_csv,
    to_json_text,
    to_latex,
    to_text,
)
from jitterscope.summary import spike_table, summary_table


def _table() -> Table:
    return Table(
        name="t", title="Latency & friends_1",
        columns=("thread", "p99 [µs]", "note"),
        rows=((0, 12.3456, "50% of #1 ~ $x^2$ {a}\\b"), (1, float("nan"), None), (12, 1234.5, "plain")),
        formats=("", "{:.2f}", ""),
        notes=("n/a: not resolved",),
    )


def test_format_cell_never_shows_nan():
    assert format_cell(None) == "n/a"
    assert format_cell(float("nan"), "{:.2f}") == "n/a"
    assert format_cell(float("inf"), "{:.2f}") == "n/a"
    assert format_cell(3.14159, "{:.2f}") == "3.14"
    assert format_cell(1234567, "{:,}") == "1,234,567"
    assert format_cell("x", "{:.2f}") == "x"


def test_rows_must_match_columns():
    with pytest.raises(ValueError, match="cells"):
        Table(name="bad", title="bad", columns=("a", "b"), rows=((1,),))
    with pytest.raises(ValueError, match="formats"):
        Table(name="bad", title="bad", columns=("a", "b"), rows=((1, 2),), formats=("",))


def test_text_layout_aligns_numbers_right_and_fits_width():
    lines = to_text(_table())
    assert lines[1].split() == ["thread", "p99", "note"]
    assert lines[2].split() == ["[µs]"]  # units on their own header line
    assert lines[1].index("p99") + 3 == lines[2].index("[µs]") + 4  # right-aligned like the numbers below
    assert text_header_lines(lines) == 4
    row0, row1, row2 = lines[4:7]
    # numbers right-aligned: the decimal points line up in the p99 column
    assert row0.index("12.35") + len("12.35") == row2.index("1234.50") + len("1234.50")
    assert "n/a" in row1 and "nan" not in " ".join(lines).lower().replace("n/a", "")
    assert lines[0] == lines[3] == lines[7] and set(lines[0]) == {"─"}
    assert lines[-1] == "n/a: not resolved"


def test_text_wraps_a_long_last_column_and_ellipsizes_others():
    long_value = " ".join(f"word{i}" for i in range(80))
    wrapped = to_text(Table(name="w", title="w", columns=("key", "value"), rows=(("k", long_value), ("k2", "v"))),
                      max_width=60)
    assert all(len(line) <= 60 for line in wrapped)
    body = wrapped[3:-1]
    assert body[0].startswith("k ") and body[-1].startswith("k2")
    assert " ".join(line[5:].strip() for line in body[:-1]) == long_value  # nothing lost
    numeric = Table(name="n", title="n", columns=("a", "b"), rows=(("x" * 100, 1),))
    squeezed = to_text(numeric, max_width=40)
    assert all(len(line) <= 40 for line in squeezed) and "…" in squeezed[3]
    notes = to_text(Table(name="t", title="t", columns=("a",), rows=(), notes=(long_value,)), max_width=50)
    assert all(len(line) <= 50 for line in notes)


def test_csv_round_trips_through_pandas():
    frame = pd.read_csv(io.StringIO(to_csv(_table())))
    assert list(frame.columns) == ["thread", "p99 [µs]", "note"]
    assert frame["thread"].tolist() == [0, 1, 12]
    assert frame["p99 [µs]"].iloc[0] == pytest.approx(12.3456)  # raw value, not the rounded display
    assert math.isnan(frame["p99 [µs]"].iloc[1])
    assert frame["note"].iloc[0] == "50% of #1 ~ $x^2$ {a}\\b"


def test_json_is_valid_and_has_no_nan():
    text = to_json_text(_table())
    assert "NaN" not in text
    obj = json.loads(text)
    assert obj["rows"][1] == {"thread": 1, "p99 [µs]": None, "note": None}
    assert obj["rows"][2]["p99 [µs]"] == 1234.5


def test_latex_uses_booktabs_siunitx_and_escapes_specials():
    tex = to_latex(_table())
    assert tex.count(r"\toprule") == tex.count(r"\midrule") == tex.count(r"\bottomrule") == 1
    # numbers in siunitx S columns sized to their digits; text left
    assert r"\begin{tabular}{S[table-format=2.0]S[table-format=4.2]l}" in tex
    assert tex.startswith(r"\begin{table}[htbp]") and tex.rstrip().endswith(r"\end{table}")
    assert r"50\% of \#1 \textasciitilde{} \$x\textasciicircum{}2\$ \{a\}\textbackslash{}b" in tex
    assert "{p99} & " in tex and r"{[\textmu{}s]}" in tex  # the unit under the name
    assert r"\caption{Latency \& friends\_1}" in tex
    assert "1234.50 &" in tex and "{n/a}" in tex  # no thousands comma; text in a number column braced
    body = tex.split(r"\midrule")[1].split(r"\bottomrule")[0]
    for line in body.strip().splitlines():  # every unescaped & is a column separator
        assert line.replace(r"\&", "").count("&") == 2 and line.endswith(r"\\")


def test_latex_splits_a_wide_table_into_blocks_of_at_most_eight_columns():
    columns = ("thread", *(f"p{i} [µs]" for i in range(15)))
    table = Table(name="wide", title="Wide", columns=columns, rows=((0, *([1234.5] * 15)), ("all", *([2.0] * 15))),
                  formats=("",) + ("{:,.2f}",) * 15)
    tex = to_latex(table)
    assert tex.startswith(r"\begin{table*}")
    specs = [line for line in tex.splitlines() if line.startswith(r"\begin{tabular}")]
    assert len(specs) >= 2 and all(line.count("S[") + line.count("}l") <= 8 for line in specs)
    assert tex.count("{thread}") == len(specs)  # the key column repeated in each block
    assert "\nall & " in tex and "1,234" not in tex  # a text key, a number without its comma


@pytest.mark.parametrize(("raw", "escaped"), [
    ("a_b", r"a\_b"), ("100%", r"100\%"), ("x&y", r"x\&y"), ("~", r"\textasciitilde{}"), ("#", r"\#"),
    ("{}", r"\{\}"), ("\\", r"\textbackslash{}"), ("^", r"\textasciicircum{}"), ("$", r"\$"), ("µs", r"\textmu{}s"),
])
def test_latex_escape_each_special(raw, escaped):
    assert latex_escape(raw) == escaped


def test_key_value_table_renders_nested_values_as_json():
    table = key_value_table("kv", "KV", {"a": 1, "b": [1, 2], "c": {"x": True}, "d": None, "e": False})
    assert table.rows == (("a", 1), ("b", "[1,2]"), ("c", '{"x":true}'), ("d", None), ("e", "no"))
    assert table.alignment() == ("l", "l")


def test_latex_wraps_long_text_columns_in_paragraph_columns():
    table = key_value_table("env", "Environment", {"cmdline": "console=ttyS0 " * 10, "hz": 250,
                                                    "sha256": "0123456789abcdef" * 4})
    tex = to_latex(table)
    assert r"\begin{tabularx}{\columnwidth}{l>{\raggedright\arraybackslash}X}" in tex
    assert r"01234567\allowbreak{}89abcdef" in tex  # a hash may break inside a narrow column
    assert r"\begin{tabular}{ll}" in to_latex(key_value_table("short", "Short", {"hz": 250}))


def _summary(tmp_path, latencies):
    import numpy as np
    import pyarrow as pa
    from jitterscope.dataset import Metadata, ThreadInfo, open_dataset, write_dataset
    from jitterscope.summary import summarize

    n = len(latencies)
    expected = 10**12 + np.arange(n, dtype=np.int64) * 1_000_000
    table = pa.table({"cpu": np.full(n, 3), "thread": np.zeros(n), "seq": np.arange(n), "expected_ns": expected,
                      "actual_ns": expected + np.asarray(latencies)})
    meta = Metadata(kind="capture", threads=(ThreadInfo(thread=0, cpu=3, interval_ns=1_000_000, samples=n),))
    return summarize(open_dataset(write_dataset(table, meta, tmp_path / "d.parquet")), top_k=3), int(expected[0])


def test_summary_table_is_in_us_and_says_na_where_n_cannot_resolve(tmp_path):
    summary, _ = _summary(tmp_path, [1000, 2000, 3000, 4000, 50_000])
    table = summary_table(summary)
    thread, overall = table.rows
    columns = list(table.columns)
    assert thread[:3] == ("0", 3, 5) and overall[:3] == ("all", "all", 5)
    assert thread[columns.index("min [µs]")] == 1.0 and thread[columns.index("max [µs]")] == 50.0
    assert thread[columns.index("mean [µs]")] == pytest.approx(12.0)
    assert thread[columns.index("p50 [µs]")] == pytest.approx(summary.threads[0].percentiles["50"] / 1000)
    for level in ("p90 [µs]", "p99 [µs]", "p99.999 [µs]"):  # n = 5: n (1 - q) < 1
        assert thread[columns.index(level)] is None
    assert "n/a" in to_text(table)[5]


def test_spike_table_orders_by_latency_with_times_and_neighbours(tmp_path):
    summary, origin = _summary(tmp_path, [1000, 9000, 2000, 30_000, 3000, 4000])
    table = spike_table(summary.threads[0].spikes.spikes, origin_ns=origin + 1000, cpus={0: 3})
    assert [row[5] for row in table.rows] == [30.0, 9.0, 4.0]
    rank, time_s, thread, cpu, seq, _, before, after = table.rows[0]
    assert (rank, thread, cpu, seq) == (1, 0, 3, 3)
    assert time_s == pytest.approx(3e-3 + 29_000 / 1e9)  # actual of seq 3, from the origin
    assert before.split()[-1] == "2.0" and after.split()[0] == "3.0"


@pytest.mark.parametrize(("raw", "escaped"), [
    ("→", r"\ensuremath{\rightarrow}"), ("≥ 3", r"\ensuremath{\geq} 3"), ("±", r"\ensuremath{\pm}"),
    ("ξ", r"\ensuremath{\xi}"), ("—", "---"), ("5–95", "5--95"), ("Šidák", r"\v{S}id\'{a}k"),
    ("Δf", r"\ensuremath{\Delta}f"), ("€", "[U+20AC]"),
])
def test_latex_escape_maps_non_ascii_to_latex(raw, escaped):
    assert latex_escape(raw) == escaped


def _non_ascii(tex: str) -> set[str]:
    return {ch for ch in tex if not ch.isascii()}


def test_every_latex_table_of_a_report_and_a_compare_is_ascii(tmp_path):
    from jitterscope.compare import compare_runs, comparison_tables
    from jitterscope.dataset import open_dataset, write_dataset
    from jitterscope.io import simulate_story
    from jitterscope.report import write_report
    from jitterscope.tails import analyze_tails, tails_tables

    paths = []
    for seed in (1, 2):
        table, metadata = simulate_story("performance", seed, seconds=30,
                                         smis={"rate_hz": 2.0, "duration_ns": 3_000_000, "at_transitions": 0.6})
        paths.append(write_dataset(table, metadata, tmp_path / f"run{seed}.parquet"))
    write_report(paths[0], tmp_path / "r.pdf", figures_dir=tmp_path / "fig")
    written = sorted((tmp_path / "fig").glob("*.tex"))  # the tables and methods.tex
    assert {"summary.tex", "correlation-verdict.tex", "spectral-peaks.tex"} <= {p.name for p in written}
    for path in written:
        assert not _non_ascii(path.read_text(encoding="utf-8")), path.name
    datasets = [open_dataset(p) for p in paths]
    tables = comparison_tables(compare_runs(datasets, n_boot=200)) + tails_tables(analyze_tails(datasets[0]))
    tables += _poll_tables(tmp_path)
    texts = [to_latex(t) for t in tables]
    # the texts do hold non-ASCII symbols (µs, →, ±, ...), so the check above is not vacuous
    assert any(_non_ascii(to_text_joined(t)) for t in tables)
    for table, tex in zip(tables, texts, strict=True):
        assert not _non_ascii(tex), table.name
    assert (tmp_path / "fig" / "methods.tex").exists()
    _compile_if_pdflatex([p.read_text(encoding="ascii") for p in written] + texts, tmp_path)


def _poll_tables(tmp_path) -> list:
    """Every table of a poll report (noise, sizes, causes, periodic sources, events) of a traced simulation."""
    from jitterscope.io import PeriodicIrq, PollSpec, simulate_poll
    from jitterscope.poll import (
        explain_interruptions,
        find_poll_events,
        poll_spectrum,
        poll_tables,
        read_poll,
        summarize_poll,
    )

    path = simulate_poll(PollSpec(cpus=(0, 1), duration_s=4, irqs=(PeriodicIrq(10, 8000, "eth0"),), burst_rate_hz=3,
                                  burst_command="spinner_#1 50%", hardware_rate_hz=1, trace=True), tmp_path / "poll")
    data = read_poll(path)
    causes = explain_interruptions(data)
    tables = poll_tables(summarize_poll(data), causes, poll_spectrum(data, causes=causes),
                         find_poll_events(data, causes=causes))
    assert {t.name for t in tables} == {"poll_noise", "poll_classes", "poll_causes", "poll_periodic", "poll_events"}
    return tables


def to_text_joined(table) -> str:
    return "\n".join([table.title, *table.columns, *table.notes, *(c for row in table.text_rows() for c in row)])


def _compile_if_pdflatex(texs: list[str], tmp_path) -> None:
    """Compile the tables in a two-column article at a journal's geometry (IEEE: 7.16 in text, 3.5 in columns)
    with a default pdflatex: no error and no overfull line.  Skipped only where pdflatex is not installed
    (``make test`` installs it, with booktabs and siunitx, as root)."""
    import shutil
    import subprocess

    from jitterscope.render import LATEX_PREAMBLE

    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex not installed (make debs installs texlive as root): the tables are ASCII, "
                    "compiling them was not tried")
    doc = ("\\documentclass[10pt,twocolumn]{article}\n\\usepackage[letterpaper,textwidth=7.16in,columnsep=0.17in,"
           "textheight=9.5in]{geometry}\n" + LATEX_PREAMBLE + "\\begin{document}\n"
           + "\\clearpage\n".join(texs) + "\\end{document}\n")
    (tmp_path / "t.tex").write_text(doc, encoding="ascii")
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    log = (tmp_path / "t.log").read_text(encoding="latin-1")
    overfull = [line for line in log.splitlines() if line.startswith("Overfull \\hbox")]
    assert not overfull, "\n".join(overfull[:20])


def test_literal_text_keeps_the_tick_formatters_mathtext_and_draws_data_literally() -> None:
    """Log-axis ticks are matplotlib's own mathtext (10^3); only texts that may come from a dataset go literal."""
    from jitterscope.render import literal_text
    from matplotlib.figure import Figure

    fig = Figure()
    ax = fig.subplots()
    ax.set_yscale("log")
    ax.plot([1, 10, 1000])
    title = ax.set_title("host a $\\frac{1}{$")
    fig.canvas.draw()
    literal_text(fig)
    fig.canvas.draw()
    assert not title.get_parse_math()
    assert all(label.get_parse_math() for label in ax.get_yticklabels())


def test_literal_text_creates_no_ticks_and_ticks_drawn_later_keep_their_mathtext() -> None:
    """issue 25: literal_text asked every axis for its ticks (running the locators, creating ticks on text pages
    that are never drawn): it takes the ticks that exist, and those the draw creates later stay matplotlib's."""
    from jitterscope.render import literal_text
    from matplotlib.figure import Figure

    fig = Figure()
    ax = fig.subplots()
    ax.set_yscale("log")
    ax.plot([1, 10, 1e6])
    title = ax.set_title("host a $\\frac{1}{$")
    before = (len(ax.yaxis.majorTicks), len(ax.yaxis.minorTicks), len(ax.xaxis.majorTicks))
    literal_text(fig)
    assert (len(ax.yaxis.majorTicks), len(ax.yaxis.minorTicks), len(ax.xaxis.majorTicks)) == before
    fig.draw_without_rendering()
    assert len(ax.yaxis.majorTicks) > before[0]  # the draw made them
    assert not title.get_parse_math()
    assert all(tick.label1.get_parse_math() for tick in ax.yaxis.majorTicks + ax.yaxis.minorTicks)
