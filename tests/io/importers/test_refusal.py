"""Every importer refuses every other format's real file with one line naming its format and the place."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from jitterscope.errors import ImportFormatError
from jitterscope.io import FORMATS, detect, import_files

DATA = Path(__file__).resolve().parents[2] / "data" / "formats"
FILES = {
    "cyclictest-verbose": "ct-verbose.txt", "cyclictest-histogram": "ct-hist.txt", "cyclictest-json": "ct-hist.json",
    "cyclictest-quiet": "ct-quiet.txt", "jitterdebugger-samples": "jd-fresh/samples.raw",
    "jitterdebugger-results": "jd-fresh/results.json", "jitterdebugger-stdout": "jd-fresh/stdout.txt",
    "oslat": "oslat.txt", "oslat-json": "oslat.json", "rtla-timerlat-hist": "rtla/timerlat-hist.txt",
    "periodic-timer": "periodic-timer/blocks.log",
}
RELATED: set[tuple[str, str]] = set()  # none: each importer tells every other real file apart


def test_every_format_has_a_fixture_that_detects_as_itself():
    assert set(FILES) == set(FORMATS)
    for fmt, name in FILES.items():
        assert detect(DATA / name) == fmt


@pytest.mark.parametrize("forced", FORMATS)
def test_forced_format_refuses_the_others(forced):
    for actual, name in FILES.items():
        if actual == forced or (forced, actual) in RELATED:
            continue
        with pytest.raises(ImportFormatError) as info:
            import_files([DATA / name], fmt=forced)
        message = str(info.value)
        assert "\n" not in message
        assert f"not valid {forced} output" in message, (forced, actual, message)
        assert re.search(r"(line \d+|byte \d+|whole file|footer|preamble|body|header|\"[\w:]+\"|'[^']+' line|"
                         r"thread \"\d+\"|cpu \"\d+\"|end of file|top level|buckets)", message), message
