"""Fuzz the importers with mutations of real tool output; no input may produce a traceback.

Each case mutates one of the real files in tests/data/formats (truncation,
byte flips, line deletions and duplications, random garbage, swapped lines,
edited numbers) and imports it (alone, or with its companion file), then writes and reopens
the dataset.  Every case must either succeed or raise a JitterscopeError whose
message is one line.

    python benchmarks/import_fuzz.py            # 10,000 cases
    python benchmarks/import_fuzz.py --cases 500 --seed 7

Prints the outcome counts and the time per case against the time to import
the unmutated files (the baseline, measured in the same run).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
from jitterscope.dataset import validate_dataset, write_dataset
from jitterscope.errors import JitterscopeError
from jitterscope.io import import_files, read_turbostat

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "formats"

# (file to mutate, companion files imported with it)
TARGETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ct-verbose.txt", ()),
    ("ct-verbose.txt", ("ct-verbose.json",)),
    ("ct-verbose.json", ("ct-verbose.txt",)),
    ("ct-verbose-ns.txt", ("ct-verbose-ns.json",)),
    ("ct-hist.json", ()),
    ("ct-histofall.txt", ()),
    ("ct-quiet.txt", ()),
    ("ct-vq.txt", ()),
    ("shared/cyclictest-histogram.txt", ("shared/cyclictest-summary.json",)),
    ("shared/cyclictest-verbose.txt", ()),
    ("jd-shared/samples.raw", ("jd-shared/results.json",)),
    ("jd-fresh/samples.raw", ()),
    ("jd-fresh/results.json", ("jd-fresh/samples.raw",)),
    ("jd-fresh/stdout.txt", ()),
    ("oslat.txt", ()),
    ("oslat.json", ()),
    ("rtla/timerlat-hist.txt", ()),
    ("periodic-timer/blocks.log", ()),
    ("turbostat/interval.txt", ()),  # read with read_turbostat (not a dataset import)
)


def _truncate(data: bytes, rng: np.random.Generator) -> bytes:
    return data[: int(rng.integers(0, len(data)))]


def _flip(data: bytes, rng: np.random.Generator) -> bytes:
    out = bytearray(data)
    for _ in range(int(rng.integers(1, 6))):
        out[int(rng.integers(0, len(out)))] ^= 1 << int(rng.integers(0, 8))
    return bytes(out)


def _garbage(data: bytes, rng: np.random.Generator) -> bytes:
    at = int(rng.integers(0, len(data) + 1))
    junk = rng.integers(0, 256, size=int(rng.integers(1, 64)), dtype=np.uint8).tobytes()
    return data[:at] + junk + data[at:]


def _lines(edit: Callable[[list[bytes], np.random.Generator], None]) -> Callable[[bytes, np.random.Generator], bytes]:
    def mutate(data: bytes, rng: np.random.Generator) -> bytes:
        lines = data.split(b"\n")
        if len(lines) > 1:
            edit(lines, rng)
        return b"\n".join(lines)
    return mutate


def _delete(lines: list[bytes], rng: np.random.Generator) -> None:
    for _ in range(int(rng.integers(1, 4))):
        if len(lines) > 1:
            del lines[int(rng.integers(0, len(lines)))]


def _duplicate(lines: list[bytes], rng: np.random.Generator) -> None:
    at = int(rng.integers(0, len(lines)))
    lines.insert(at, lines[at])


def _swap(lines: list[bytes], rng: np.random.Generator) -> None:
    a, b = (int(v) for v in rng.integers(0, len(lines), size=2))
    lines[a], lines[b] = lines[b], lines[a]


def _number(lines: list[bytes], rng: np.random.Generator) -> None:
    at = int(rng.integers(0, len(lines)))
    choices = [b"-1", b"0", b"99999999999999999999", b"nan", b"1e308", b"", b"x"]
    digits = [i for i, c in enumerate(lines[at]) if chr(c).isdigit()]
    if digits:
        i = digits[int(rng.integers(0, len(digits)))]
        lines[at] = lines[at][:i] + choices[int(rng.integers(0, len(choices)))] + lines[at][i + 1:]


def _random_file(data: bytes, rng: np.random.Generator) -> bytes:
    return rng.integers(0, 256, size=int(rng.integers(1, 4096)), dtype=np.uint8).tobytes()


MUTATIONS: tuple[tuple[str, Callable[[bytes, np.random.Generator], bytes]], ...] = (
    ("truncate", _truncate), ("flip", _flip), ("garbage", _garbage), ("delete", _lines(_delete)),
    ("duplicate", _lines(_duplicate)), ("swap", _lines(_swap)), ("number", _lines(_number)),
    ("random", _random_file),
)


def _summary_only(metadata) -> bool:
    # summary-only imports (cyclictest -q, jitterdebugger stdout, periodic_timer) have no bins, which the
    # validator does not accept yet; they are checked by their own tests
    return any(t.extra.get("summary_only") for t in metadata.threads)


def run_case(case: int, seed: int, workdir: Path) -> tuple[str, str, str]:
    """Mutate and import one case; returns (target, mutation, outcome) or raises on a traceback."""
    rng = np.random.default_rng([seed, case])
    target, companions = TARGETS[int(rng.integers(0, len(TARGETS)))]
    name, mutate = MUTATIONS[int(rng.integers(0, len(MUTATIONS)))]
    source = DATA / target
    folder = workdir / f"case{case}"
    folder.mkdir()
    mutated = folder / source.name
    mutated.write_bytes(mutate(source.read_bytes(), rng))
    files = [mutated]
    for companion in companions:
        copy = folder / Path(companion).name
        shutil.copyfile(DATA / companion, copy)
        files.append(copy)
    try:
        if target.startswith("turbostat/"):
            read_turbostat(mutated)
        else:
            table, metadata = import_files(files)
            written = write_dataset(table, metadata, folder / "out.parquet")
            verdict = validate_dataset(written)  # an import must be a dataset that keeps the contract
            if not verdict.valid and not _summary_only(metadata):
                raise AssertionError(f"case {case} ({target}, {name}): import is not a valid dataset: "
                                     f"{verdict.problems}")
        outcome = "imported"
    except JitterscopeError as exc:
        message = str(exc)
        if "\n" in message or not message:
            raise AssertionError(f"case {case} ({target}, {name}): error message is not one line: {message!r}") \
                from None
        outcome = type(exc).__name__
    finally:
        shutil.rmtree(folder)
    return target, name, outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=20261130)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        start = time.perf_counter()
        for target, companions in TARGETS:
            if target.startswith("turbostat/"):
                read_turbostat(DATA / target)
            else:
                import_files([DATA / target, *(DATA / c for c in companions)])
        baseline = (time.perf_counter() - start) / len(TARGETS)
        outcomes: Counter[str] = Counter()
        start = time.perf_counter()
        for case in range(args.cases):
            try:
                _, _, outcome = run_case(case, args.seed, workdir)
            except Exception:  # a traceback is the failure this script looks for
                traceback.print_exc()
                print(f"FAILED at case {case} (seed {args.seed})", file=sys.stderr)
                return 1
            outcomes[outcome] += 1
        per_case = (time.perf_counter() - start) / max(args.cases, 1)
    print(f"{args.cases} cases, no traceback: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    print(f"time per case {per_case * 1e3:.2f} ms; unmutated import {baseline * 1e3:.2f} ms; "
          f"ratio {per_case / baseline:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
