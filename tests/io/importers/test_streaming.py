"""Streaming import (issue 15): cyclictest -v read a few MiB at a time, the numpy fast path agreeing with
the line parser sample for sample, and its refusals still naming the line; the importer writing chunk by chunk
with the same rows and metadata as before it streamed, in any chunking.

Peak RSS on a 2 GB file is measured by benchmarks/untrusted_memory.py, not here.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from jitterscope.dataset import Metadata, write_dataset
from jitterscope.errors import ImportFormatError
from jitterscope.io import content_sha256, import_files, import_to_dataset
from jitterscope.io.importers import _common, cyclictest_histogram, cyclictest_verbose, jitterdebugger


def _log(path, lines_per_thread: int = 30_000, threads: int = 2, tail: str = "") -> None:
    rng = np.random.default_rng(4)
    head = ["# /dev/cpu_dma_latency set to 0us", "Max CPUs = 2", "Online CPUs = 2"]
    head += [f"Thread {t} Interval: {1000 + 500 * t}" for t in range(threads)]
    body = []
    for cycle in range(lines_per_thread):
        for t in range(threads):
            body.append(f"{t:8d}:{cycle:8d}:{int(rng.integers(-3, 90)):8d}")
    path.write_text("\n".join(head + body) + "\n" + tail)


@pytest.mark.parametrize("chunk", [4096, 100_003, 64 << 20])
def test_chunked_parse_equals_the_line_parser(tmp_path, monkeypatch, chunk) -> None:
    path = tmp_path / "v.txt"
    _log(path)
    monkeypatch.setattr(_common, "CHUNK_BYTES", 64 << 20)
    monkeypatch.setattr(cyclictest_verbose, "_fast_chunk", lambda *args: False)
    reference = cyclictest_verbose.parse(path)
    monkeypatch.undo()
    monkeypatch.setattr(_common, "CHUNK_BYTES", chunk)
    calls = []
    fast = cyclictest_verbose._fast_chunk

    def spy(*args):
        calls.append(fast(*args))
        return calls[-1]

    monkeypatch.setattr(cyclictest_verbose, "_fast_chunk", spy)
    streamed = cyclictest_verbose.parse(path)
    if chunk < 1 << 20:
        assert any(calls), "the numpy path never ran"
    assert reference.settings == streamed.settings
    for a, b in zip(reference.samples, streamed.samples, strict=True):
        assert a.thread == b.thread and a.seq.dtype == np.int64
        np.testing.assert_array_equal(a.seq, b.seq)
        np.testing.assert_array_equal(a.latency_ns, b.latency_ns)
    assert sum(s.seq.size for s in streamed.samples) == 60_000


@pytest.mark.parametrize(("bad", "message"), [
    ("       1:   29999:      12\n", "cycle 29999 of thread 1 does not follow cycle 29999"),
    ("       7:   30000:      12\n", "thread 7 has no 'Thread 7 Interval:' header"),
    ("       0 :  30000:      12\n", "is not a 'thread:cycle:latency' line"),
    ("       0:   30000:     1-2\n", "is not a 'thread:cycle:latency' line"),
])
def test_refusals_name_the_line_in_a_late_chunk(tmp_path, monkeypatch, bad, message) -> None:
    path = tmp_path / "v.txt"
    _log(path, tail=bad)
    monkeypatch.setattr(_common, "CHUNK_BYTES", 50_000)
    with pytest.raises(ImportFormatError, match=message) as info:
        cyclictest_verbose.parse(path)
    assert "line 60006" in str(info.value)


# ---- the importer writes chunk by chunk: same rows and metadata as reading the whole file -------------------------

DATA = Path(__file__).resolve().parents[2] / "data" / "formats"

# (files, (content digest of the rows sorted by thread and seq/bin, digest of the metadata with file names only
# and no jitterscope version)), computed by the importer as it was before it streamed (commit 435cae0), which
# held every sample and built the table whole.  The metadata digests were updated for issue 21 (threads[].
# overflow_above_ns, source.absolute_times and source.assumptions, the overflow note)
# and issue 26 (a -v log imported without the --json beside it says so in source.notes): the table digests are
# as before.
BEFORE_STREAMING = {
    "ct-verbose": (["ct-verbose.txt"], ("c03b7970c354dcff", "ef69537026864467")),
    "ct-verbose+json": (["ct-verbose.txt", "ct-verbose.json"], ("9e19e493dcd71e14", "869db58eeb8becb0")),
    "ct-verbose-ns+json": (["ct-verbose-ns.txt", "ct-verbose-ns.json"], ("f97b8d66950ba396", "1161c459cd03506c")),
    "ct-vq": (["ct-vq.txt"], ("4d57fd053929e9f5", "cb53bf00e9d89591")),
    "ct-vq+json": (["ct-vq.txt", "ct-vq.json"], ("b33330c16c30c538", "dbb948584f869f4a")),
    "shared-verbose": (["shared/cyclictest-verbose.txt"], ("260954a5b472713a", "8f5090c1ba5cc5a3")),
    "shared-verbose+summary": (["shared/cyclictest-verbose.txt", "shared/cyclictest-summary.json"],
                               ("9fd78fcba284e7d5", "5bfce1e7956fe388")),
    "jd-fresh": (["jd-fresh"], ("56433aca96892fdf", "3f76293c3af1f26e")),
    "jd-fresh+stdout": (["jd-fresh", "jd-fresh/stdout.txt"], ("56433aca96892fdf", "95dd329debaf448e")),
    "jd-shared": (["jd-shared"], ("f13f3568b901e6d9", "6ad1b898a754d54d")),
    "ct-hist+json": (["ct-hist.txt", "ct-hist.json"], ("437dce37ecf9dc49", "b72d6927e924180e")),
    "shared-hist": (["shared/cyclictest-histogram.txt"], ("3ff259ed7ad1a80d", "54df09e4283a0de5")),
}


def _sorted(table: pa.Table) -> pa.Table:
    second = "seq" if "seq" in table.column_names else "bin_start_ns"
    return table.sort_by([("thread", "ascending"), (second, "ascending")])


def _digests(table: pa.Table, metadata) -> tuple[str, str]:
    doc = {k.decode(): json.loads(v) for k, v in metadata.to_kv().items()}
    doc["jitterscope.source"]["files"] = [Path(f).name for f in doc["jitterscope.source"]["files"]]
    doc["jitterscope.tool"].pop("version")
    # notes may quote the paths as given (a -v log's --json beside it): the checkout's location is not content
    source = doc["jitterscope.source"]
    source["notes"] = [note.replace(str(DATA), "DATA") for note in source.get("notes", [])]
    return (content_sha256(_sorted(table))[:16],
            hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16])


def _small_chunks(monkeypatch, text_bytes: int = 300, records: int = 11) -> None:
    """Chunks of a few lines (cut mid-line: the reader carries the rest) and of 11 samples.raw records."""
    monkeypatch.setattr(_common, "CHUNK_BYTES", text_bytes)
    monkeypatch.setattr(jitterdebugger, "CHUNK_RECORDS", records)


@pytest.mark.parametrize("name", sorted(BEFORE_STREAMING))
def test_fixtures_import_as_before_streaming_in_any_chunking(tmp_path, monkeypatch, name) -> None:
    files, before = BEFORE_STREAMING[name]
    paths = [DATA / f for f in files]
    table, metadata = import_files(paths)
    assert _digests(table, metadata) == before
    _small_chunks(monkeypatch)
    chunked, chunked_meta = import_files(paths)
    assert _digests(chunked, chunked_meta) == before
    written = import_to_dataset(paths, tmp_path / "out.parquet")
    on_disk = pq.read_table(written.path)
    assert written.rows == on_disk.num_rows == table.num_rows
    assert _sorted(on_disk.replace_schema_metadata()).equals(_sorted(_as_written(table, metadata, tmp_path)))
    assert Metadata.from_kv(on_disk.schema.metadata, where="test").to_kv() == metadata.to_kv()


def _as_written(table: pa.Table, metadata, tmp_path: Path) -> pa.Table:
    """``table`` as ``write_dataset`` stores it (contract types and order), read back."""
    path = tmp_path / "whole.parquet"
    write_dataset(table, metadata, path)
    return pq.read_table(path).replace_schema_metadata()


def test_a_long_synthetic_log_cut_into_many_chunks_gives_the_rows_of_one_read(tmp_path, monkeypatch) -> None:
    path = tmp_path / "v.txt"
    _log(path, lines_per_thread=20_000, threads=3)
    monkeypatch.setattr(_common, "CHUNK_BYTES", 64 << 20)
    whole, whole_meta = import_files([path])
    monkeypatch.setattr(_common, "CHUNK_BYTES", 4093)  # a prime: every cut falls mid-line somewhere else
    parts, parts_meta = import_files([path])
    assert parts_meta.to_kv() == whole_meta.to_kv()
    assert not parts.equals(whole)  # the chunks interleave the threads (the contract allows it) ...
    assert _sorted(parts).equals(_sorted(whole))  # ... but the rows are the same
    for thread in range(3):  # ... and each thread's rows are in seq order
        seq = parts.filter(pc.equal(parts["thread"], thread))["seq"].to_numpy()
        assert np.all(np.diff(seq) > 0) and seq.size == 20_000
    out = import_to_dataset([path], tmp_path / "v.parquet")
    assert out.rows == 60_000 and pq.ParquetFile(out.path).metadata.num_rows == 60_000


def test_closing_summary_lines_that_change_the_interval_make_a_second_pass(tmp_path, monkeypatch) -> None:
    """-v -q: one thread's header says 1500 µs (interval + the default distance, assumed), its summary line
    I:1200: the interval is only known at the end of the file, after rows were written with 1000 µs."""
    lines = ["Thread 0 Interval: 1500"] + [f"{0:8d}:{c:8d}:{5 + c % 7:8d}" for c in range(3000)]
    lines.append("T: 0 ( 4242) P:80 I:1200 C:   3000 Min:      5 Act:    6 Avg:    7 Max:      11")
    path = tmp_path / "vq.txt"
    path.write_text("\n".join(lines) + "\n")
    _small_chunks(monkeypatch, text_bytes=2000)
    out = import_to_dataset([path], tmp_path / "vq.parquet")
    table = pq.read_table(out.path)
    np.testing.assert_array_equal(np.diff(table["expected_ns"].to_numpy()), 1_200_000)
    assert out.rows == 3000 and out.metadata.threads[0].interval_ns == 1_200_000
    assert "I: field" in out.metadata.source["reconstructed"]["expected_ns"]


def test_a_refusal_late_in_the_file_leaves_no_output_and_no_temporary(tmp_path, monkeypatch) -> None:
    path = tmp_path / "v.txt"
    _log(path, tail="       1:   29999:      12\n")
    _small_chunks(monkeypatch, text_bytes=50_000)
    out = tmp_path / "out" / "v.parquet"
    out.parent.mkdir()
    with pytest.raises(ImportFormatError, match="line 60006"):
        import_to_dataset([path], out)
    assert list(out.parent.iterdir()) == []


def test_samples_raw_time_going_back_in_a_later_chunk_names_the_record(tmp_path, monkeypatch) -> None:
    records = np.zeros(100, dtype=jitterdebugger.RECORD)
    records["tv_sec"] = 1
    records["tv_nsec"] = np.arange(100) * 1_000_000
    records["val"] = 3
    records["tv_nsec"][57] = records["tv_nsec"][56]
    path = tmp_path / "samples.raw"
    path.write_bytes(records.tobytes())
    _small_chunks(monkeypatch, records=8)  # record 57 opens a chunk: the check carries the time across
    with pytest.raises(ImportFormatError, match=r"record 57\).*time does not increase \(1056000000 ns after "
                                                r"1056000000 ns\)"):
        import_files([path])


def _histogram_log(path: Path, rows: int, bad: dict[int, str] | None = None) -> None:
    """cyclictest -h output of two threads (and -H's sum column): mostly empty bins, as a long -h run has."""
    rng = np.random.default_rng(9)
    counts = np.zeros((rows, 2), np.int64)
    counts[:60] = rng.integers(0, 500, (60, 2))
    tail = rng.choice(rows, 40, replace=False)
    counts[tail, rng.integers(0, 2, 40)] = 1
    lines = ["# /dev/cpu_dma_latency set to 0us", "# Histogram"]
    lines += [f"{b:06d} {a:06d}\t{c:06d}\t{a + c:06d}" for b, (a, c) in enumerate(counts.tolist())]
    for number, text in (bad or {}).items():
        lines[number - 1] = text
    total = counts.sum(axis=0)
    lines += [f"# Total: {total[0]:09d} {total[1]:09d}", "# Min Latencies: 00000 00001",
              "# Avg Latencies: 00012 00013", "# Max Latencies: 00900 00950", "# Histogram Overflows: 00000 00000",
              "# Histogram Overflow at cycle number:", "# Thread 0:", "# Thread 1:"]
    path.write_text("\n".join(lines) + "\n")


def test_histogram_read_in_chunks_keeps_the_non_empty_bins_of_one_read(tmp_path, monkeypatch) -> None:
    path = tmp_path / "h.txt"
    _histogram_log(path, 20_000)
    monkeypatch.setattr(_common, "CHUNK_BYTES", 64 << 20)
    monkeypatch.setattr(cyclictest_histogram, "_fast_rows", lambda *args: None)
    reference = cyclictest_histogram.parse(path)
    monkeypatch.undo()
    monkeypatch.setattr(_common, "CHUNK_BYTES", 5003)
    calls = []
    fast = cyclictest_histogram._fast_rows

    def spy(*args):
        calls.append(fast(*args) is not None)
        return None if not calls[-1] else fast(*args)

    monkeypatch.setattr(cyclictest_histogram, "_fast_rows", spy)
    streamed = cyclictest_histogram.parse(path)
    assert sum(calls) > 50, "the numpy path never ran"
    assert reference.settings == streamed.settings == {"histogram_limit": 20_000}
    assert [vars(s) for s in reference.summaries] == [vars(s) for s in streamed.summaries]
    for a, b in zip(reference.histograms, streamed.histograms, strict=True):
        assert a.bin_start_ns.size == b.bin_start_ns.size <= 100
        np.testing.assert_array_equal(a.bin_start_ns, b.bin_start_ns)
        np.testing.assert_array_equal(a.counts, b.counts)


@pytest.mark.parametrize(("bad", "message"), [
    ("012345 000000\t000000\t000000", "bin 12345 where bin 12342 was expected"),
    ("012342 000000\t000000", "2 columns where the rows before have 3"),
    ("012342 000000 000000\t000000", "neither a histogram row nor a footer line"),
])
def test_histogram_refusals_name_the_line_in_a_late_chunk(tmp_path, monkeypatch, bad, message) -> None:
    path = tmp_path / "h.txt"
    _histogram_log(path, 20_000, bad={12_345: bad})  # line 12345 holds bin 12342
    monkeypatch.setattr(_common, "CHUNK_BYTES", 5003)
    with pytest.raises(ImportFormatError, match=message) as info:
        cyclictest_histogram.parse(path)
    assert "line 12345" in str(info.value)


@pytest.mark.parametrize("text", ["a\nb\n", "a\nb", "\n\nx\n\n", "", "one line", "T: 0\r\n\nµs ü\n" * 50])
def test_iter_lines_gives_the_lines_of_split_in_any_chunking(tmp_path, monkeypatch, text) -> None:
    path = tmp_path / "t.txt"
    path.write_bytes(text.encode())
    monkeypatch.setattr(_common, "CHUNK_BYTES", 7)
    assert list(_common.iter_lines(path, "test")) == list(enumerate(text.split("\n"), 1))


def test_output_inside_a_jitterdebugger_directory_given_as_input_is_refused(tmp_path) -> None:
    import shutil

    from jitterscope.errors import DatasetError

    run = tmp_path / "jd"
    shutil.copytree(DATA / "jd-fresh", run)
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    with pytest.raises(DatasetError, match="inside an input"):
        import_to_dataset([run], run / "out.parquet", overwrite=True)
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before
