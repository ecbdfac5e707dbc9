"""A report reads its columns without pandas (issue 25): pyarrow's ``to_numpy`` imports pandas on its first call
(0.9 s of CPU on this machine) though no pandas object is made; ``dataset.column_values`` reads the same values.
The sections that read rows themselves (timeline, tails, events; derive.latency_ns under them) are checked."""

from __future__ import annotations

import subprocess
import sys

from jitterscope.io import SMIs, spec_from_options, write_simulation

CODE = """
import sys
from jitterscope.report import write_report
write_report(sys.argv[1], sys.argv[2], sections=("timeline", "tails", "events"), workers=1)
print("pandas" in sys.modules)
"""


def test_timeline_tails_and_events_sections_do_not_import_pandas(tmp_path) -> None:
    spec = spec_from_options(threads=2, samples=5_000, effects=[SMIs(rate_hz=0.5, duration_ns=150_000)])
    dataset = write_simulation(spec, tmp_path / "sim.parquet", seed=3)
    out = subprocess.run([sys.executable, "-c", CODE, str(dataset), str(tmp_path / "r.pdf")],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "False"
