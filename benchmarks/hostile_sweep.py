"""The hostile sweep (issue 26): every command against bad numbers, bad paths, hostile metadata and truncated parts.

Each run is a real ``jitterscope`` process under a timeout and a memory watch; the sweep prints, per category and
in total, how many runs gave a Python traceback, hung (ran past the timeout), went over 1 GB of RSS, left a
temporary (``.NAME.PID.tmp``) or a directory behind, or ended with an exit status other than 0, 1 or 2.

The inputs:

* bad numbers: NaN, inf, -1, 1e999 and an empty string for every command's numeric options (and simulate's
  effect specs, a JSON spec with NaN, a binary spec file, ``fleet --scheduler ''``);
* paths: '', a missing file, a directory, /dev/zero, a FIFO nobody writes, and outputs under a missing parent,
  in a directory, named '' (inputs of every command, outputs of every command that writes);
* metadata: a part whose ``jitterscope.environment`` is 100,000 nested ``[``, one of 30 MB of ``[``, NaN and
  Infinity literals, mistyped values (a string interval, interval_ns 0, negative sample counts);
* truncated parts: the first 10 %, 50 % and 99 % of a valid part.

Usage: ``python benchmarks/hostile_sweep.py [--timeout 60] [--jobs 2] [--only CATEGORY] [--list] [--source DIR]``;
exit status 0 when every count is 0. ``--source DIR`` runs the ``jitterscope`` package found in DIR (e.g. an
``analysis`` directory from ``git archive OLD analysis | tar -x``) instead of the installed one: how the "before"
counts were taken.

Counts on the shared, loaded 2-CPU VM (load average ~14 from other work), 623 runs, ``--timeout 60``:

==========  =====  ==========  =====  =========  =========  ========
            runs   tracebacks  hangs  over 1 GB  leftovers  odd exit
==========  =====  ==========  =====  =========  =========  ========
before      623    43          11     1          5          1
after       623    0           1      0          1          0
after 2     623    0           0      0          0          0
==========  =====  ==========  =====  =========  =========  ========

Before (commit 966c96b): RecursionError in every command on a 100,000-deep or 30 MB ``[`` environment,
ZeroDivisionError in spectrum, import of /dev/zero at 800 MB when stopped and of a FIFO waiting forever, simulate
--spec /dev/zero over 1 GB, UnicodeDecodeError of a binary spec, NaN/inf effect specs, fleet --scheduler
tracebacks, demo FileExistsError, --fail-if p101 exit 3. After: the one hang is ``report --figures`` into an
existing folder, a full report with every figure at 300 dpi, which ran past its 180 s under that load (no
deadlock: it ends given time); the one leftover was a false attribution of a concurrent run's output (the
directory fixture is now per run). After 2 (commit 048a2e9, load average 9-16 from other work, not quiet, 1472 s):
``report --figures`` has ten times the timeout (FIGURES_FACTOR: slow, not hung); every count 0, the largest run
813 MiB; the compare cases again on 5c8b2ab (replicates in int32): 47 runs, every count 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JITTERSCOPE = [sys.executable, "-c", "import sys; from jitterscope.cli import main; sys.exit(main())"]
SOURCE_JITTERSCOPE = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]; "
                      "sys.path.insert(0, {source!r}); from jitterscope.cli import main; sys.exit(main())")
"""The command line with ``--source``: the editable install's import hook removed, the given package first."""
MEMORY_LIMIT = 1 << 30
"""A run whose RSS passes 1 GiB counts as over, and is stopped there (an unbounded run would take the machine)."""
BAD_NUMBERS = ("nan", "inf", "-inf", "-1", "1e999", "")
SLOW_COMMANDS = ("report", "demo", "compare", "fleet")
"""Commands whose real work on a valid input takes long on a loaded 2-CPU machine: three times the timeout."""
FIGURES_FACTOR = 10
"""``report --figures`` into a directory that can take them writes the whole report plus every figure (173 files,
300 dpi PNGs and PDFs) even for the 4,000 wake-ups of the fixture: 105 s at load average 5 on this 2-CPU VM
(709 MiB peak), 238 s in the first sweep at load ~14 with two runs at a time, finishing each time with every file
written. Slow, not hung (the report's speed is its own issue): ten times the timeout for it."""


@dataclass
class Case:
    category: str
    name: str
    argv: list[str]
    cwd_files: bool = False


@dataclass
class Outcome:
    case: Case
    code: int | None
    seconds: float
    peak_rss: int
    stderr: str
    leftovers: list[str] = field(default_factory=list)

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.stderr

    @property
    def hang(self) -> bool:
        return self.code is None

    @property
    def over_memory(self) -> bool:
        return self.peak_rss > MEMORY_LIMIT

    @property
    def odd_exit(self) -> bool:
        return self.code is not None and self.code not in (0, 1, 2) and not self.over_memory


def _fixtures(work: Path) -> dict[str, str]:
    """Write the hostile inputs into ``work``; return name -> path."""
    import pyarrow.parquet as pq
    from jitterscope.io import SimulationSpec, simulate

    table, metadata = simulate(SimulationSpec(threads=2, samples=2000), 1)
    kv = metadata.to_kv()
    paths: dict[str, str] = {}

    def part(name: str, changes: dict[bytes, bytes]) -> None:
        path = work / f"{name}.parquet"
        pq.write_table(table.replace_schema_metadata({**kv, **changes}), path)
        paths[name] = str(path)

    part("valid", {})
    part("other", {})
    part("deep-environment", {b"jitterscope.environment": b"[" * 100_000})
    part("deep-settings", {b"jitterscope.settings": b'{"asked": ' * 50_000 + b"1" + b"}" * 50_000})
    part("huge-environment", {b"jitterscope.environment": b"[" * (30 << 20)})
    threads = json.loads(kv[b"jitterscope.threads"])
    part("nan-clock", {b"jitterscope.clock": b'{"tsc_hz": NaN}'})
    part("inf-threads", {b"jitterscope.threads": json.dumps(
        [{**t, "min_ns": float("inf")} for t in threads]).encode()})
    part("interval-zero", {b"jitterscope.threads": json.dumps([{**t, "interval_ns": 0} for t in threads]).encode()})
    part("interval-text", {b"jitterscope.threads": json.dumps([{**t, "interval_ns": "1ms"} for t in threads]).encode()})
    part("samples-negative", {b"jitterscope.threads": json.dumps([{**t, "samples": -5} for t in threads]).encode()})
    part("ground-truth-nan", {b"jitterscope.ground_truth": b'{"periodic": [{"frequency_hz": NaN}]}'})
    valid = Path(paths["valid"]).read_bytes()
    for share in (10, 50, 99):
        path = work / f"truncated-{share}.parquet"
        path.write_bytes(valid[: len(valid) * share // 100])
        paths[f"truncated-{share}"] = str(path)
    empty = work / "empty.parquet"
    empty.write_bytes(b"")
    paths["empty-file"] = str(empty)
    (work / "a-dir").mkdir()
    paths["dir"] = str(work / "a-dir")
    paths["missing"] = str(work / "missing.parquet")
    paths["empty-path"] = ""
    paths["dev-zero"] = "/dev/zero"
    fifo = work / "fifo"
    os.mkfifo(fifo)
    paths["fifo"] = str(fifo)
    binary = work / "binary.json"
    binary.write_bytes(bytes(range(256)) * 4)
    paths["binary"] = str(binary)
    nan_spec = work / "nan-spec.json"
    nan_spec.write_text('{"threads": 2, "samples": 100, "effects": [{"type": "periodic", "frequency_hz": NaN, '
                        '"amplitude_us": 5}]}')
    paths["nan-spec"] = str(nan_spec)
    text = work / "ct.txt"
    text.write_text("".join(f"       0:{i:8d}:      {10 + i % 7}\n" for i in range(1000)))
    paths["ct-verbose"] = str(text)
    return paths


DATASET_COMMANDS: dict[str, list[str]] = {
    "summary": [], "events": [], "info": [], "validate": [], "power": ["--surrogates", "0"], "spectrum": [],
    "tails": [], "report": ["-o", "{out}/r.pdf"], "export": ["--format", "csv", "-o", "{out}/e.csv"],
    "pack": ["-o", "{out}/p.parquet"], "fleet": ["--no-progress"], "compare": ["{other}", "--resamples", "20"],
}
"""Commands that read one dataset (first positional) and the other options each needs."""
OUTPUTS: dict[str, tuple[list[str], str]] = {
    "report": (["report", "{valid}"], "-o"), "export": (["export", "{valid}", "--format", "csv"], "-o"),
    "pack": (["pack", "{valid}"], "-o"), "simulate": (["simulate", "--samples", "100"], "-o"),
    "import": (["import", "{ct-verbose}", "--format", "cyclictest-verbose"], "-o"),
    "compare": (["compare", "{valid}", "{other}", "--resamples", "20"], "-o"),
    "fleet": (["fleet", "{valid}", "--no-progress"], "-o"), "demo": (["demo", "-D", "0.2", "-q"], "--out"),
    "report-figures": (["report", "{valid}", "-o", "{out}/r.pdf"], "--figures"),
    "capture": (["capture", "-D", "0.2", "-q"], "-o"),
}
"""Commands that write, with the option naming their output."""
NUMBERS: dict[str, list[str]] = {
    "summary": ["--tolerance", "--top", "--spike-us", "--worst", "--interval-stats"],
    "events": ["--threshold", "--top"], "power": ["--window", "--alpha", "--min-dwell", "--surrogates", "--seed"],
    "spectrum": ["--nperseg", "--alpha", "--spike-threshold-us", "--top"], "tails": ["--level-us", "--confidence"],
    "compare": ["--noise", "--confidence", "--resamples", "--seed"], "report": ["--top"],
    "export": ["--thread"], "fleet": ["--noise", "--confidence", "--workers"],
    "simulate": ["--threads", "--interval-us", "--samples", "--median-us", "--spread", "--dwell-ms", "--stalls",
                 "--drops", "--seed", "-D"],
    "demo": ["--hz", "-D"], "capture": ["-D", "-i", "-p", "-l", "--flush-interval", "--ring"],
    "import": ["--turbostat-start", "--turbostat-interval"],
}
SIMULATE_SPECS = {"--periodic": ["nan:5", "inf:5", "60:nan", "60:inf", "60:5:nan", "-1:5"],
                  "--smi": ["nan:5", "inf:5", "1:nan", "-1:5"], "--idle": ["nan:5", "0.1:inf", "2:5"],
                  "--coupling": ["nan:5:1", "0.5:inf:1", "0.5:5:nan"], "--pstates": ["nan,800", "inf,800", "-1"]}


def _cases(paths: dict[str, str]) -> list[Case]:
    cases: list[Case] = []
    fill = lambda argv, out: [a.format(out=out, **paths) if "{" in a else a for a in argv]  # noqa: E731
    hostile = [n for n in paths if n not in ("valid", "other", "ct-verbose", "binary", "nan-spec")]
    for command, extra in DATASET_COMMANDS.items():
        for name in hostile:
            category = ("paths" if name in ("empty-path", "missing", "dir", "dev-zero", "fifo", "empty-file")
                        else "truncated" if name.startswith("truncated") else "metadata")
            cases.append(Case(category, f"{command} {name}", [command, paths[name], *extra]))
    for name in ("empty-path", "missing", "dir", "dev-zero", "fifo", "empty-file", "binary", "truncated-50"):
        for fmt in ("", "cyclictest-verbose", "cyclictest-histogram", "jitterdebugger", "turbostat"):
            argv = ["import", paths[name], "-o", "{out}/i.parquet"] + (["--format", fmt] if fmt else [])
            cases.append(Case("paths", f"import {name} {fmt or 'auto'}", argv))
    for name in ("empty-path", "missing", "dir", "dev-zero", "fifo", "binary", "nan-spec"):
        cases.append(Case("paths" if name != "nan-spec" else "numbers", f"simulate --spec {name}",
                          ["simulate", "--spec", paths[name], "-o", "{out}/s.parquet"]))
    for command, (argv, option) in OUTPUTS.items():
        for name, target in (("empty", ""), ("missing-parent", "{out}/no/such/x"), ("dir", "{out}/a-dir"),
                             ("dev-full", "/dev/full"), ("fifo", paths["fifo"])):
            if command == "capture" and name in ("dev-full", "fifo"):
                continue
            cases.append(Case("outputs", f"{command} {option} {name}", [*argv, option, target]))
    for command, options in NUMBERS.items():
        base = {"simulate": ["simulate", "-o", "{out}/s.parquet", "--samples", "100"],
                "demo": ["demo", "--out", "{out}/d"], "capture": ["capture", "-q", "-o", "{out}/c"],
                "import": ["import", "{ct-verbose}", "-o", "{out}/i.parquet"]}.get(
            command, [command, "{valid}", *DATASET_COMMANDS.get(command, [])])
        for option in options:
            for value in BAD_NUMBERS:
                argv = [*base, option, value]
                if command == "simulate" and option == "-D":
                    argv = [a for a in argv if a not in ("--samples", "100")]
                cases.append(Case("numbers", f"{command} {option} {value!r}", argv))
    for option, values in SIMULATE_SPECS.items():
        for value in values:
            cases.append(Case("numbers", f"simulate {option} {value}",
                              ["simulate", "-o", "{out}/s.parquet", "--samples", "100", option, value]))
    for value in ("", "tcp://", "::::", "nohost:notaport"):
        cases.append(Case("numbers", f"fleet --scheduler {value!r}",
                          ["fleet", "{valid}", "--no-progress", "--scheduler", value]))
    for value in ("p101>5us", "nosuch>5us", "p99>nan", "p99>", "max>infus", ""):
        cases.append(Case("numbers", f"summary --fail-if {value!r}", ["summary", "{valid}", "-q", "--fail-if", value]))
    cases.append(Case("outputs", "summary --junit ''", ["summary", "{valid}", "-q", "--junit", ""]))
    for case in cases:
        case.argv = [a if "{" not in a or a.startswith("{out}") else fill([a], "")[0] for a in case.argv]
    return cases


def _run(case: Case, work: Path, timeout: float, command: list[str]) -> Outcome:
    out = Path(tempfile.mkdtemp(prefix="run-", dir=work))
    (out / "a-dir").mkdir()  # an existing directory as an output, the run's own (runs go two at a time)
    argv = [a.replace("{out}", str(out)) for a in case.argv]
    started = time.monotonic()
    process = subprocess.Popen([*command, *argv], cwd=out, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, start_new_session=True)
    peak = 0
    code: int | None = None
    limit = timeout * (FIGURES_FACTOR if "--figures" in case.argv else 3 if case.argv[0] in SLOW_COMMANDS else 1)
    stderr_chunks: list[bytes] = []
    os.set_blocking(process.stderr.fileno(), False)  # type: ignore[union-attr]
    while True:
        try:
            chunk = process.stderr.read()  # type: ignore[union-attr]
            if chunk:
                stderr_chunks.append(chunk)
        except BlockingIOError:
            pass
        peak = max(peak, _tree_rss(process.pid))
        if process.poll() is not None:
            code = process.returncode
            break
        if peak > MEMORY_LIMIT or time.monotonic() - started > limit:
            # SIGTERM first (a run that cleans up on it leaves nothing), SIGKILL after a grace period
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            code = None if peak <= MEMORY_LIMIT else -9
            break
        time.sleep(0.05)
    try:
        stderr_chunks.append(process.stderr.read() or b"")  # type: ignore[union-attr]
    except BlockingIOError:
        pass
    seconds = time.monotonic() - started
    _kill_group(process.pid)
    leftovers = [str(p.relative_to(work)) for p in out.rglob("*") if ".tmp" in p.name]
    if code not in (0, None):  # a failed run leaves nothing it made in the directory it was given
        leftovers += [f"a-dir/{n}" for n in os.listdir(out / "a-dir")]
    shutil.rmtree(out, ignore_errors=True)
    code = code if code is None or code >= 0 else 128 - code
    return Outcome(case, code, seconds, peak, b"".join(stderr_chunks).decode("utf-8", "replace"), leftovers)


def _tree_rss(pid: int) -> int:
    """RSS of ``pid`` and its children (a capture, a dask worker) in bytes; 0 once it is gone."""
    total = 0
    for candidate in [pid, *_children(pid)]:
        try:
            with open(f"/proc/{candidate}/statm") as handle:
                total += int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            pass
    return total


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                for child in handle.read().split():
                    found += [int(child), *_children(int(child))]
    except OSError:
        pass
    return found


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per run before it counts as a hang")
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time")
    parser.add_argument("--only", help="run only this category (numbers, paths, outputs, metadata, truncated)")
    parser.add_argument("--match", help="run only the cases whose name contains this text")
    parser.add_argument("--list", action="store_true", help="list the cases and run nothing")
    parser.add_argument("--source", help="run the jitterscope package in this directory (the 'before' counts)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every failing run's stderr tail")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hostile-sweep-"))
    try:
        paths = _fixtures(work)
        cases = [c for c in _cases(paths) if (not args.only or c.category == args.only)
                 and (not args.match or args.match in c.name)]
        if args.list:
            print("\n".join(f"{c.category:10} {c.name}" for c in cases))
            return 0
        command = JITTERSCOPE if not args.source else [
            sys.executable, "-c", SOURCE_JITTERSCOPE.format(source=str(Path(args.source).resolve()))]
        started = time.monotonic()
        with ThreadPoolExecutor(args.jobs) as pool:
            outcomes = list(pool.map(lambda c: _run(c, work, args.timeout, command), cases))
        return _print(outcomes, time.monotonic() - started, args.verbose)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _print(outcomes: list[Outcome], seconds: float, verbose: bool) -> int:
    checks = {"tracebacks": lambda o: o.traceback, "hangs": lambda o: o.hang, "over 1 GB": lambda o: o.over_memory,
              "leftovers": lambda o: bool(o.leftovers), "odd exit": lambda o: o.odd_exit}
    bad = 0
    for outcome in outcomes:
        failed = [name for name, check in checks.items() if check(outcome)]
        if failed:
            last = outcome.stderr.strip().splitlines()[-1:] or [""]
            print(f"{', '.join(failed):>22}: {outcome.case.name}  (exit {outcome.code}, {outcome.seconds:.1f} s, "
                  f"{outcome.peak_rss >> 20} MiB) {' '.join(outcome.leftovers)} {last[0][:160]}")
            if verbose:
                print("      " + "\n      ".join(outcome.stderr.strip().splitlines()[-6:]))
    categories = sorted({o.case.category for o in outcomes})
    print(f"\n{'category':10} {'runs':>5} " + " ".join(f"{name:>10}" for name in checks))
    for category in [*categories, "total"]:
        mine = [o for o in outcomes if category in ("total", o.case.category)]
        counts = Counter(name for o in mine for name, check in checks.items() if check(o))
        print(f"{category:10} {len(mine):5d} " + " ".join(f"{counts[name]:10d}" for name in checks))
        if category == "total":
            bad = sum(counts.values())
    print(f"{len(outcomes)} runs in {seconds:.0f} s; peak RSS of one run {max(o.peak_rss for o in outcomes) >> 20} MiB")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
