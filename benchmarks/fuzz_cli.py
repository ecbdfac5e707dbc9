"""The long profile of the CLI fuzz (issue 15): thousands of hostile option values and metadata values.

The test suite runs a ~30-60 s profile (tests/cli/test_options.py, tests/dataset/test_fuzz.py); this runs the same
properties with ``JITTERSCOPE_FUZZ_PROFILE=long`` (3000 examples for the option fuzz) and the metadata fuzz with
more examples, and prints how many examples ran and how long they took. Exit status 0 when no property failed.

Usage: ``python benchmarks/fuzz_cli.py [--metadata-examples 500]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--metadata-examples", type=int, default=500)
    args = parser.parse_args()
    env = {**os.environ, "JITTERSCOPE_FUZZ_PROFILE": "long",
           "JITTERSCOPE_METADATA_FUZZ_EXAMPLES": str(args.metadata_examples)}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "--hypothesis-show-statistics",
                           "tests/cli/test_options.py::test_fuzz_every_numeric_option_of_every_command",
                           "tests/dataset/test_fuzz.py::test_hostile_metadata_against_every_command"],
                          cwd=ROOT, env=env, check=False, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if "passing examples" in line or "passed" in line
             or "failed" in line]
    print("\n".join(lines[-6:]))
    print(f"long fuzz profile: {time.perf_counter() - started:.0f} s, exit {done.returncode} "
          "(timings on the machine that ran it; a shared, loaded 2-CPU VM in the issue notes)")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
