"""Text from a dataset is data, never markup: outputs stay valid under hostile metadata.

Every string of the metadata carries ANSI escapes, a title-setting sequence, CR, NUL, BEL, a lone surrogate,
mathtext (``$\\frac{1}{$``), LaTeX and HTML specials. Then: every SVG of ``--figures`` parses as XML, every
``.tex`` table is ASCII without control characters (pdflatex is not installed here: tests/render/test_table.py
compiles when it is), every JSON/CSV is valid UTF-8 without raw controls, the PDF renders with pdftoppm, and
``info``/``compare`` print no control character but newline and tab. A 200 KB hostname and a 1 MB command line
are cut in the pages (the JSON keeps them) instead of filling hundreds of provenance pages.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from jitterscope.cli import main
from jitterscope.dataset import write_dataset
from jitterscope.io import SimulationSpec, simulate

HOSTILE = "h\x1b[2J\x1b]0;pwned\x07\rINJECTED LINE\x00 a $\\frac{1}{$ \\input{x} %&#_ <script>alert(1)</script> \ud800"
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _hostile(value):
    if isinstance(value, dict):
        return {k: _hostile(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_hostile(v) for v in value]
    return HOSTILE if isinstance(value, str) else value


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> Path:
    table, meta = simulate(SimulationSpec(threads=2, samples=3000), 5)
    settings = _hostile(dict(meta.settings))
    settings["granted"] = {**settings["granted"], "degraded": ["$$", HOSTILE]}
    meta = meta.with_changes(environment=_hostile(dict(meta.environment)), settings=settings,
                             counters=_hostile(dict(meta.counters)), status={"state": "complete", "reason": HOSTILE},
                             tool={"name": "jitterscope", "version": HOSTILE})
    return write_dataset(table, meta, tmp_path_factory.mktemp("hostile") / "hostile.parquet")


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_every_output_of_report_stays_valid(hostile, tmp_path) -> None:
    figures = tmp_path / "figures"
    code, _, err = _run("report", str(hostile), "-o", str(tmp_path / "r.pdf"), "--figures", str(figures), "-q",
                        "--sections", "provenance,distributions,appendix")  # the environment is in the appendix
    assert code == 0, err
    svgs = sorted(figures.glob("*.svg"))
    assert svgs
    for svg in svgs:
        ET.parse(svg)  # raises on NUL, ESC, a lone surrogate
    texts = sorted(figures.glob("*.tex"))
    assert texts
    for tex in texts:
        data = tex.read_bytes()
        assert data.isascii() and not CONTROL.search(data.decode()), tex
        assert b"\\frac" not in data.replace(b"\\textbackslash{}frac", b"")  # the backslash is escaped, not TeX
    for path in [*figures.glob("*.json"), *figures.glob("*.csv")]:
        text = path.read_bytes().decode("utf-8")  # valid UTF-8: no lone surrogate written
        assert not CONTROL.search(text.replace("\n", "").replace("\t", "")), path
        if path.suffix == ".json":
            json.loads(text)
    environment = json.loads((figures / "environment.json").read_text())
    assert any("INJECTED LINE" in json.dumps(row) for row in environment["rows"])
    if shutil.which("pdftoppm"):
        subprocess.run(["pdftoppm", "-png", "-r", "30", "-f", "1", "-l", "3", str(tmp_path / "r.pdf"),
                        str(tmp_path / "page")], check=True, capture_output=True)
        assert len(list(tmp_path.glob("page-*.png"))) == 3
    words = subprocess.run(["pdftotext", str(tmp_path / "r.pdf"), "-"], capture_output=True, text=True).stdout
    assert "$\\frac{1}{$" in words and "\\x1b[2J" in words  # drawn literally, the escape visible


@pytest.mark.parametrize("argv", [["info"], ["compare", "{path}", "--resamples", "20"], ["info", "--json"],
                                  ["summary", "--json"]])
def test_the_terminal_gets_no_control_character(hostile, argv) -> None:
    code, out, err = _run(argv[0], str(hostile), *(a.format(path=hostile) for a in argv[1:]))
    assert code == 0, err
    assert not CONTROL.search(out) and not CONTROL.search(err)
    if argv == ["info"]:
        assert "h\\x1b[2J\\x1b]0;pwned\\x07\\rINJECTED LINE\\x00" in out  # visible, on the line it belongs to
        assert not any(line.startswith("INJECTED") for line in out.splitlines())


def test_huge_strings_are_cut_in_pages_and_kept_in_json(tmp_path) -> None:
    table, meta = simulate(SimulationSpec(threads=1, samples=2000), 6)
    hostname, cmdline = "h" * 200_000, "console=ttyS0 " * 70_000  # 200 KB and 0.98 MB (the gate allows 1 MiB)
    meta = meta.with_changes(environment={**meta.environment, "hostname": hostname, "cmdline": cmdline})
    dataset = write_dataset(table, meta, tmp_path / "huge.parquet")
    figures = tmp_path / "figures"
    code, _, err = _run("report", str(dataset), "-o", str(tmp_path / "r.pdf"), "--figures", str(figures), "-q",
                        "--sections", "provenance,appendix")
    assert code == 0, err
    pages = int(re.search(r"Pages:\s+(\d+)", subprocess.run(["pdfinfo", str(tmp_path / "r.pdf")],
                                                             capture_output=True, text=True).stdout).group(1))
    assert pages <= 12  # 163+ provenance pages before
    rows = json.loads((figures / "environment.json").read_text())["rows"]
    assert any(hostname in json.dumps(row) for row in rows)  # the full value stays in the JSON
    code, out, _ = _run("info", str(dataset))
    assert code == 0 and len(out) < 30_000 and "characters; full value in the JSON" in out
