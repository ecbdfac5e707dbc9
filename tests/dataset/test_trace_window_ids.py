"""The reader numbers kept windows whose ids the capture left out (``number`` -1 in window rows).

The capture writes windows in order, each on every measured CPU, without their ids; a CPU's k-th ``window``
row opens window k and its ``window_end`` closes it.  Checked across batch and part boundaries, for a subset
of the columns, and against rows that carry their ids (older captures), which keep them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from jitterscope.dataset import TRACE_EVENTS, events_from_rows, open_trace, read_trace_events, write_trace_events

WINDOW, END, SWITCH = TRACE_EVENTS["window"], TRACE_EVENTS["window_end"], TRACE_EVENTS["switch"]
INFO = {"version": 1, "clock": "mono", "resolution_ns": 1000, "cpus": [0, 3], "keep": "spikes"}


def _row(ts: int, cpu: int, event: int, number: int = -1) -> list[int]:
    # ts_ns cpu event pid comm number name other_pid other_prio other_comm prio value
    return [ts, cpu, event, 0, 0, number, -1, -1, -1, -1, -1, 1 if event in (WINDOW, END) else 0]


def _rows(ids: bool) -> list[list[int]]:
    """Three windows on CPUs 0 and 3, written CPU by CPU as the capture does; a switch inside each."""
    rows = []
    for w in range(3):
        start = 1000 * (w + 1)
        for cpu in (0, 3):
            rows += [_row(start, cpu, WINDOW, w if ids else -1), _row(start + 10, cpu, SWITCH, 7),
                     _row(start + 100, cpu, END, w if ids else -1)]
    return rows


def _ids(columns: dict[str, np.ndarray]) -> dict[tuple[int, int], list[int]]:
    out: dict[tuple[int, int], list[int]] = {}
    for cpu, event, number in zip(columns["cpu"].tolist(), columns["event"].tolist(), columns["number"].tolist(),
                                  strict=True):
        out.setdefault((cpu, event), []).append(number)
    return out


def _write_two_parts(root: Path, rows: list[list[int]]) -> None:
    """The rows as two parts, split inside the second window (as a part rotation may)."""
    path = write_trace_events(events_from_rows(rows, ["swapper"], INFO), root)
    table = pq.read_table(path)
    path.unlink()
    pq.write_table(table.slice(0, 8), path.with_name("part-00000.parquet"))
    pq.write_table(table.slice(8), path.with_name("part-00001.parquet"))


def test_left_out_window_ids_are_counted_per_cpu_across_batches_and_parts(tmp_path: Path) -> None:
    _write_two_parts(tmp_path, _rows(ids=False))
    table = open_trace(tmp_path)
    assert table is not None and len(table.parts) == 2
    want = {(0, WINDOW): [0, 1, 2], (0, END): [0, 1, 2], (3, WINDOW): [0, 1, 2], (3, END): [0, 1, 2],
            (0, SWITCH): [7] * 3, (3, SWITCH): [7] * 3}
    for batch_rows in (1, 2, 4, 65536):  # a window split across batches, and whole
        batches = list(table.iter_batches(["cpu", "event", "number"], batch_rows=batch_rows))
        assert _ids({n: np.concatenate([b[n] for b in batches]) for n in ("cpu", "event", "number")}) == want
    events = read_trace_events(tmp_path)
    assert _ids(events.columns) == want
    # asked for the number alone, the reader still reads what it needs to count
    alone = list(table.iter_batches(["number"], batch_rows=5))
    assert list(alone[0]) == ["number"]
    assert np.concatenate([b["number"] for b in alone]).tolist() == events.columns["number"].tolist()


def test_written_window_ids_are_kept(tmp_path: Path) -> None:
    rows = _rows(ids=True)
    for r in rows:  # ids that do not start at 0 (a reader that counts would get these wrong)
        if r[2] in (WINDOW, END):
            r[5] += 40
    write_trace_events(events_from_rows(rows, ["swapper"], INFO), tmp_path)
    got = _ids(read_trace_events(tmp_path).columns)
    assert got[(0, WINDOW)] == got[(3, END)] == [40, 41, 42]
