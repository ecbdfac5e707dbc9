"""oslat output (text or ``--json``) imported as a busy-poll dataset (kind ``poll``).

oslat measures what ``jitterscope capture --mode poll`` measures, a busy loop's gaps, but keeps only a
histogram of them per core (1 µs buckets, the last one holding every longer gap) with the minimum, average,
maximum and duration.  The import is therefore histogram-only: **no per-interruption rows** (no times, no
causes, no periodic sources: the source notes say so), and one "window" per core spanning the whole run in
the per-second table, whose ``h`` columns are oslat's buckets (edges in ``jitterscope.poll``).

Derived per core, stated in the notes: interruptions = loops in buckets at or above the threshold (1 µs:
oslat's ``002 (us)`` bucket, [1, 2) µs, and up); noise = each such bucket's count times its midpoint, the
overflow bucket counted at its lower edge except the maximum itself (a lower bound when it holds more than one
loop); iterations = every loop counted.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa

from ... import __version__
from ...dataset import Metadata, ThreadInfo, poll_bucket_column, write_poll_dataset
from ...errors import ImportFormatError
from . import oslat

THRESHOLD_NS = 1000
"""oslat's buckets are whole µs; a gap of 1 µs or more (bucket ``002 (us)`` up) is an interruption."""


def import_oslat_poll(path: str | os.PathLike[str], output: str | os.PathLike[str], *,
                      overwrite: bool = False) -> Path:
    """Import oslat's text or ``--json`` output at ``path`` as the poll dataset directory ``output``.

    Raises
    ------
    ImportFormatError
        ``path`` is not oslat output (or a core has no duration).
    DatasetError
        ``output`` exists (without ``overwrite``) or cannot be written.
    """
    source = Path(path)
    head = source.read_bytes()[:65536] if source.is_file() else b""
    if oslat.sniff_json(head):
        parsed, fmt = oslat.parse_json(source), oslat.JSON_FORMAT
    elif oslat.sniff(head):
        parsed, fmt = oslat.parse(source), oslat.FORMAT
    else:
        raise ImportFormatError(f"{source}: not oslat output (text or --json); import it with 'jitterscope import' "
                                "without --as poll")
    durations = parsed.settings.get("duration_s") or []
    if len(durations) != len(parsed.histograms) or any(d is None or d <= 0 for d in durations):
        raise ImportFormatError(f"{source}: oslat output without a duration per core; a poll dataset needs the time "
                                "polled (the run did not finish?)")
    top = max(int(h.bin_start_ns[-1] + h.bin_width_ns[-1]) for h in parsed.histograms)
    last_start = max(int(h.bin_start_ns[-1]) for h in parsed.histograms)
    edges = np.r_[np.arange(0, last_start + 1000, 1000), max(top, last_start + 1000)].astype(np.int64)
    edges = np.unique(edges)
    n_buckets = edges.size - 1
    seconds: dict[str, list] = {n: [] for n in ("cpu", "thread", "window_start_ns", "window_ns", "iterations",
                                                "noise_ns", "interruptions", "max_gap_ns")}
    dense_rows, threads = [], []
    for histogram, summary, duration_s in zip(parsed.histograms, parsed.summaries, durations, strict=True):
        dense = np.zeros(n_buckets, np.int64)
        np.add.at(dense, np.searchsorted(edges, histogram.bin_start_ns, side="right") - 1, histogram.counts)
        lows = edges[:-1]
        counted = lows >= THRESHOLD_NS
        mids = lows + 500
        overflow = n_buckets - 1
        noise = int((dense[:overflow] * mids[:overflow])[counted[:overflow]].sum())
        maximum = int(summary.max_ns or 0)
        if dense[overflow] and counted[overflow]:
            # the overflow bucket: its loops are at least its lower edge; the largest one is known exactly
            noise += int((dense[overflow] - 1) * lows[overflow] + max(maximum, int(lows[overflow])))
        cpu = int(histogram.cpu if histogram.cpu is not None else -1)
        runtime = round(duration_s * 1e9)
        interruptions = int(dense[counted].sum())
        for name, value in (("cpu", cpu), ("thread", histogram.thread), ("window_start_ns", 0),
                            ("window_ns", runtime), ("iterations", int(dense.sum())), ("noise_ns", noise),
                            ("interruptions", interruptions), ("max_gap_ns", maximum)):
            seconds[name].append(value)
        dense_rows.append(dense)
        threads.append(ThreadInfo(thread=histogram.thread, cpu=cpu, interval_ns=0, samples=0, drops=0,
                                  extra={"iterations": int(dense.sum()), "noise_ns": noise}))
    table = {k: np.asarray(v, np.int64) for k, v in seconds.items()}
    matrix = np.vstack(dense_rows)
    table.update({poll_bucket_column(k): matrix[:, k] for k in range(n_buckets)})
    longest = int(max(seconds["window_ns"]))
    notes = [*parsed.notes,
             "histogram only: oslat keeps no per-interruption rows, so the dataset has none (no times, causes or "
             "periodic sources); the per-second table holds one window per core spanning the whole run",
             f"interruptions: loops >= {THRESHOLD_NS} ns (oslat's bucket '002 (us)' and up); noise: each bucket's "
             "count times its midpoint, the overflow bucket at its lower edge but for the maximum (a lower bound)"]
    metadata = Metadata(
        kind="poll", threads=tuple(threads), tool={"name": "jitterscope import", "version": __version__},
        settings={"asked": dict(parsed.settings), "granted": {}}, environment=dict(parsed.environment) or None,
        source={"format": fmt, "files": [source.name], "notes": notes, "histogram_only": True,
                "tool": dict(parsed.tool or {})},
        poll={"threshold_ns": THRESHOLD_NS, "clock": "tsc", "clock_read_ns": None, "iteration_ns": None,
              "histogram_edges_ns": edges.tolist(), "window_ns": longest, "rt_throttling": None,
              "rows_dropped": 0},
    )
    empty = pa.table({n: pa.array([], pa.int64()) for n in ("cpu", "thread", "seq", "start_ns", "duration_ns")})
    return write_poll_dataset(output, empty, pa.table(table), metadata, overwrite=overwrite, inputs=[source])
