"""turbostat interval output: a per-CPU frequency, C-state and SMI timeline.

turbostat prints, every interval, a header line of column names (``Core CPU
Avg_MHz Busy% Bzy_MHz TSC_MHz IRQ SMI POLL C1 ... CoreTmp PkgWatt``, tab- or
space-separated, chosen with ``--show``/``--hide``), a summary row whose
topology columns (``Package``, ``Die``, ``Node``, ``Core``, ``CPU``) are ``-``,
and one row per CPU (the second hyper-thread of a core leaves the core-level
columns at the end of its row out).  With ``--show Time_Of_Day_Seconds`` each row carries the
wall-clock time.  Lines before the first header (version, CPUID and MSR notes
on stderr) are skipped.

This is not latency data, so it does not become a dataset of its own:
:func:`read_turbostat` returns an Arrow table, one row per (interval, CPU), and
:func:`read_timeline` the ``jitterscope.timeline`` document (docs/dataset-format.md)
that ``jitterscope import TURBOSTAT.txt --onto DATASET`` attaches to a capture of
the same run, joined by wall-clock time (:mod:`jitterscope.timeline_join`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ._common import fail, iter_lines, show

FORMAT = "turbostat"
TOPOLOGY = ("Package", "Die", "Node", "Core", "CPU", "APIC", "X2APIC")
_KNOWN = {"CPU", "Core", "Avg_MHz", "Busy%", "Bzy_MHz", "TSC_MHz", "IRQ", "SMI", "Time_Of_Day_Seconds", "usec",
          "Package", "PkgWatt", "CorWatt", "POLL", "C1", "C1%", "CPU%c1", "CoreTmp", "PkgTmp"}
_ELAPSED = re.compile(r"\s*\d+\.\d+ sec\s*")
_VALUE = re.compile(r"-|-?\d{1,18}(\.\d+)?|0x[0-9a-fA-F]{1,16}")


def sniff(head: bytes) -> bool:
    for line in head.decode("utf-8", "replace").splitlines():
        words = set(line.split())
        if ("Avg_MHz" in words or "Busy%" in words or "Bzy_MHz" in words) and len(words & _KNOWN) >= 2:
            return True
    return False


def read_turbostat(path: str | os.PathLike[str]) -> pa.Table:
    """Read turbostat's interval output into a table.

    Returns
    -------
    pyarrow.Table
        ``interval`` (int64, 0-based block number), ``cpu`` (int32, -1 for the
        summary row), ``time_s`` (float64 wall-clock seconds when
        ``Time_Of_Day_Seconds`` was shown, else null), then every other column
        as printed, as float64 (null where turbostat printed ``-``).

    Raises
    ------
    ImportFormatError
        No header line, a row that does not fit its header, or a value that is not a number.
    """
    file = Path(path)
    lines = iter_lines(file, FORMAT)  # a few MiB at a time, not the whole file
    header: list[str] | None = None
    interval = -1
    rows: list[tuple[int, list[str]]] = []
    for number, line in lines:
        words = line.split()
        if not words:
            continue
        if sniff(line.encode()):
            if header is not None and words != header:
                raise fail(FORMAT, file, f"line {number}", "the columns changed from the first header",
                           "import one run (one --show selection) at a time")
            header = words
            interval += 1
            continue
        if header is None or _ELAPSED.fullmatch(line):
            continue  # turbostat's start-up notes; "10.003837 sec" after a forked command
        if len(words) > len(header):
            raise fail(FORMAT, file, f"line {number}", f"{len(words)} values for {len(header)} columns")
        # the second hyper-thread of a core omits the core-level columns at the end of its row
        words += ["-"] * (len(header) - len(words))
        bad = next((w for w in words if not _VALUE.fullmatch(w)), None)
        if bad is not None:
            raise fail(FORMAT, file, f"line {number}", f"{show(bad)} is not a number ({show(line)})")
        rows.append((interval, words))
    if header is None:
        raise fail(FORMAT, file, "whole file", "no header line with Avg_MHz/Busy%/Bzy_MHz",
                   "was turbostat run in interval mode?")
    if len(set(header)) != len(header):
        raise fail(FORMAT, file, "header", "a column name appears twice")
    columns: dict[str, list] = {"interval": [r[0] for r in rows]}
    cpu_index = header.index("CPU") if "CPU" in header else None
    columns["cpu"] = [-1 if cpu_index is None else _cpu(r[1][cpu_index], file) for r in rows]
    if "Time_Of_Day_Seconds" in header:
        at = header.index("Time_Of_Day_Seconds")
        columns["time_s"] = [_number(r[1][at]) for r in rows]
    else:
        columns["time_s"] = [None] * len(rows)
    for index, name in enumerate(header):
        if name in ("CPU", "Time_Of_Day_Seconds"):
            continue
        columns[name] = [_number(r[1][index]) for r in rows]
    schema = pa.schema([("interval", pa.int64()), ("cpu", pa.int32()), ("time_s", pa.float64())]
                       + [(name, pa.float64()) for name in columns if name not in ("interval", "cpu", "time_s")])
    return pa.table({name: pa.array(values, type=schema.field(name).type) for name, values in columns.items()},
                    schema=schema)


def _cpu(text: str, file: Path) -> int:
    if text == "-":
        return -1  # the summary row
    if not re.fullmatch(r"\d{1,7}", text):
        raise fail(FORMAT, file, "CPU column", f"{show(text)} is not a CPU number")
    return int(text)


def _number(text: str) -> float | None:
    if text == "-":
        return None
    if text.startswith("0x"):
        return float(int(text, 16))
    value = float(text)
    return value if np.isfinite(value) else None


TIME_COLUMN = "Time_Of_Day_Seconds"
DEFAULT_INTERVAL_S = 5.0  # turbostat's own default for --interval
_MAX_EPOCH_S = 1e11  # year 5138; keeps every time exact in int64 ns
_NOT_COUNTERS = {*TOPOLOGY, "interval", "cpu", "time_s", "usec"}


def read_timeline(
    path: str | os.PathLike[str], *, start_s: float | None = None, interval_s: float | None = None,
) -> dict[str, Any]:
    """Read turbostat's interval output into a ``jitterscope.timeline`` document.

    Parameters
    ----------
    path
        turbostat's output (``turbostat --interval S --show Time_Of_Day_Seconds,...``).
    start_s
        Wall-clock (epoch) seconds at which the first interval began; required
        when turbostat printed no ``Time_Of_Day_Seconds`` column, ignored otherwise.
    interval_s
        turbostat's ``--interval``; default: the median spacing of the
        ``Time_Of_Day_Seconds`` blocks, else turbostat's default of 5 s.

    Returns
    -------
    dict
        The JSON document described in docs/dataset-format.md (``timeline``).

    Raises
    ------
    ImportFormatError
        A corrupt file, no time column and no ``start_s``, or times that do not increase.
    """
    file = Path(path)
    table = read_turbostat(file)
    if table.num_rows == 0:
        raise fail(FORMAT, file, "whole file", "a header but no rows", "let turbostat run at least one interval")
    headers = np.asarray(table.column("interval").to_numpy(zero_copy_only=False), dtype=np.int64)
    cpus_column = np.asarray(table.column("cpu").to_numpy(zero_copy_only=False), dtype=np.int64)
    blocks, notes = _blocks(headers, cpus_column, file)
    keep = blocks >= 0
    if not keep.all():
        table, blocks, cpus_column = table.filter(pa.array(keep)), blocks[keep], cpus_column[keep]
    count = int(blocks.max()) + 1
    if interval_s is not None and not (np.isfinite(interval_s) and interval_s > 0):
        raise fail(FORMAT, file, "--turbostat-interval", f"{interval_s} is not a positive number of seconds")
    times = table.column("time_s").to_numpy(zero_copy_only=False).astype(np.float64)
    if np.isnan(times).all():
        if start_s is None:
            raise fail(FORMAT, file, "header", f"no {TIME_COLUMN} column, so its intervals cannot be put on the "
                       "capture's clock", f"run turbostat with --show {TIME_COLUMN} or give --turbostat-start "
                       "EPOCH_SECONDS (when its first interval began)")
        step = DEFAULT_INTERVAL_S if interval_s is None else float(interval_s)
        end = float(start_s) + step * np.arange(1, count + 1)
        time_from = "--turbostat-start"
    else:
        end = np.full(count, np.nan)
        np.fmax.at(end, blocks, times)
        if np.isnan(end).any():
            raise fail(FORMAT, file, f"block {int(np.flatnonzero(np.isnan(end))[0]) + 1}",
                       f"no {TIME_COLUMN} value", "import the file as turbostat wrote it")
        if (np.diff(end) <= 0).any():
            raise fail(FORMAT, file, f"block {int(np.flatnonzero(np.diff(end) <= 0)[0]) + 2}",
                       f"{TIME_COLUMN} does not increase", "import one turbostat run at a time")
        step = float(interval_s) if interval_s is not None else (
            float(np.median(np.diff(end))) if count > 1 else DEFAULT_INTERVAL_S)
        time_from = TIME_COLUMN
    start = np.concatenate([[end[0] - step], end[:-1]])
    if not (start[0] >= 0 and end[-1] < _MAX_EPOCH_S):
        raise fail(FORMAT, file, "times", f"{start[0]:.6f} to {end[-1]:.6f} s is not a wall-clock (epoch) time",
                   "give --turbostat-start as seconds since 1970")
    columns = [name for name in table.column_names if name not in _NOT_COUNTERS]
    values: dict[str, dict[str, list[float | None]]] = {}
    package: dict[str, list[float | None]] = {}
    cpus = sorted({int(c) for c in cpus_column if c >= 0})
    arrays = {name: table.column(name).to_numpy(zero_copy_only=False).astype(np.float64) for name in columns}
    for cpu in [-1, *cpus]:
        rows = np.flatnonzero(cpus_column == cpu)
        target = package if cpu < 0 else values.setdefault(str(cpu), {})
        for name in columns:
            series = np.full(count, np.nan)
            series[blocks[rows]] = arrays[name][rows]
            target[name] = [None if np.isnan(v) else v for v in series.tolist()]
    return {
        "source": "turbostat", "file": file.name, "interval_s": step, "clock": "realtime",
        "time_from": time_from, "columns": columns, "cpus": cpus,
        "start_s": [round(float(s), 6) for s in start], "end_s": [round(float(e), 6) for e in end],
        "values": values, "package": package, "notes": notes,
    }


def _blocks(headers: np.ndarray, cpus: np.ndarray, file: Path) -> tuple[np.ndarray, list[str]]:
    """Block (interval) of every row: a new one at each header and where a CPU's row comes again
    (``--header_iterations`` prints the header only every N intervals); every block must list the
    first block's CPUs in its order, save an incomplete last one (turbostat stopped while printing),
    which is dropped (-1)."""
    blocks = np.empty(cpus.size, dtype=np.int64)
    block, seen = -1, set()
    for row, (header, cpu) in enumerate(zip(headers.tolist(), cpus.tolist(), strict=True)):
        if row == 0 or header != headers[row - 1] or cpu in seen:
            block, seen = block + 1, set()
        seen.add(cpu)
        blocks[row] = block
    expected = cpus[blocks == 0].tolist()
    notes = []
    for k in range(block + 1):
        found = cpus[blocks == k].tolist()
        if found == expected:
            continue
        if k == block and k > 0 and found == expected[:len(found)]:
            blocks[blocks == k] = -1
            notes.append(f"the last block lists {len(found)} of {len(expected)} rows (turbostat stopped while "
                         "printing it); left out")
            continue
        raise fail(FORMAT, file, f"block {k + 1}", f"rows for CPUs {_cpu_list(found)}, but the first block has "
                   f"{_cpu_list(expected)}", "import the file as turbostat wrote it")
    return blocks, notes


def _cpu_list(cpus: list[int]) -> str:
    return ", ".join("summary" if c < 0 else str(c) for c in cpus)
