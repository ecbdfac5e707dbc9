"""Mutated real files never produce a traceback: a few hundred cases here, 10,000 in benchmarks/import_fuzz.py."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("chunk", range(4))
def test_mutations_import_or_fail_with_one_line(tmp_path, chunk, load_benchmark):
    fuzz = load_benchmark("import_fuzz")
    outcomes = set()
    for case in range(chunk * 100, chunk * 100 + 100):
        _, _, outcome = fuzz.run_case(case, seed=20261130, workdir=tmp_path)
        outcomes.add(outcome)
    assert "ImportFormatError" in outcomes  # the mutations do reach the parsers
