"""pack: sorted, zstd+delta, checksummed single file; reads back identical; sizes; --anonymize."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jitterscope.dataset import Metadata, ThreadInfo, open_dataset, write_dataset
from jitterscope.errors import DatasetError
from jitterscope.io import (
    SimulationSpec,
    anonymize_metadata,
    content_sha256,
    import_files,
    pack_dataset,
    simulate,
    verify_pack,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "formats"


@pytest.fixture(scope="module")
def long_import(tmp_path_factory) -> Path:
    """The 20,000-wake-up cyclictest -v run (with its --json), imported."""
    folder = tmp_path_factory.mktemp("long")
    text = folder / "ct-long.txt"
    text.write_bytes(gzip.decompress((DATA / "ct-long.txt.gz").read_bytes()))
    table, metadata = import_files([text, DATA / "ct-long.json"])
    return write_dataset(table, metadata, folder / "long.parquet")


def _shuffled(table: pa.Table, seed: int) -> pa.Table:
    return table.take(np.random.default_rng(seed).permutation(table.num_rows))


def test_reads_back_identical_in_pyarrow_pandas_duckdb(tmp_path, long_import):
    source = open_dataset(long_import)
    shuffled = _shuffled(source.read(), 1)  # pack must sort, whatever the input order
    write_dataset(shuffled, source.metadata, tmp_path / "shuffled.parquet")
    result = pack_dataset(tmp_path / "shuffled.parquet", tmp_path / "packed.parquet")
    expected = source.read().sort_by([("thread", "ascending"), ("seq", "ascending")])
    packed = pq.read_table(tmp_path / "packed.parquet")
    assert packed.schema.remove_metadata().equals(expected.schema.remove_metadata())
    assert packed.equals(expected.replace_schema_metadata(packed.schema.metadata))
    frame = pd.read_parquet(tmp_path / "packed.parquet")
    pd.testing.assert_frame_equal(frame, expected.to_pandas())
    via_duckdb = duckdb.sql(f"SELECT * FROM read_parquet('{tmp_path / 'packed.parquet'}')").arrow()
    if hasattr(via_duckdb, "read_all"):
        via_duckdb = via_duckdb.read_all()
    assert via_duckdb.to_pandas().equals(expected.to_pandas())
    opened = open_dataset(tmp_path / "packed.parquet")
    meta_before = {k: v for k, v in vars(source.metadata).items() if k != "pack"}
    meta_after = {k: v for k, v in vars(opened.metadata).items() if k != "pack"}
    assert json.dumps(meta_after, default=str, sort_keys=True) == json.dumps(meta_before, default=str, sort_keys=True)
    assert opened.metadata.pack == {"sha256": result.sha256, "anonymized": [], "rows": 20000}
    assert result.sha256 == content_sha256(expected)
    assert verify_pack(tmp_path / "packed.parquet") == result.sha256


def test_encodings_and_size_imported_cyclictest(tmp_path, long_import):
    result = pack_dataset(long_import, tmp_path / "packed.parquet")
    meta = pq.ParquetFile(tmp_path / "packed.parquet").metadata
    encodings = {meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i).encodings
                 for i in range(meta.num_columns)}
    for name, chosen in result.encodings.items():  # what was chosen is what was written
        wanted = ("RLE_DICTIONARY", "PLAIN_DICTIONARY") if chosen == "DICTIONARY" else (chosen,)
        assert set(wanted) & set(encodings[name]), (name, chosen, encodings[name])
    assert result.encodings["seq"] == "DELTA_BINARY_PACKED"  # 0, 1, 2 ... : deltas beat everything
    assert meta.row_group(0).column(0).compression == "ZSTD"
    text_bytes = len(gzip.decompress((DATA / "ct-long.txt.gz").read_bytes())) / result.wakeups
    print(f"\nimported cyclictest: {result.bytes_per_wakeup:.3f} bytes/wake-up packed "
          f"(cyclictest -v text {text_bytes:.1f}); per column {result.column_bytes_per_wakeup()}")
    assert result.wakeups == 20000
    assert result.bytes_per_wakeup <= 3.0
    assert sum(result.column_bytes.values()) < result.bytes


def test_size_native_capture_with_tsc(tmp_path):
    # the columns the capture binary writes without counter access (this VM has no MSRs): cpu..read_cycles
    table, metadata = simulate(SimulationSpec(threads=2, samples=50_000, counters=()), seed=3)
    assert {"tsc", "run_cpu", "read_cycles"} <= set(table.column_names)
    write_dataset(table, metadata, tmp_path / "sim.parquet")
    result = pack_dataset(tmp_path / "sim.parquet", tmp_path / "packed.parquet")
    print(f"\nsimulated capture with TSC: {result.bytes_per_wakeup:.3f} bytes/wake-up "
          f"(limit {28 / 5:.1f}); per column {result.column_bytes_per_wakeup()}")
    assert result.bytes_per_wakeup <= 28 / 5


def test_tampered_rows_fail_the_checksum(tmp_path, long_import):
    pack_dataset(long_import, tmp_path / "packed.parquet")
    table = pq.read_table(tmp_path / "packed.parquet")
    actual = np.asarray(table.column("actual_ns")).copy()
    actual[123] += 1000
    tampered = table.set_column(table.column_names.index("actual_ns"), "actual_ns", pa.array(actual))
    pq.write_table(tampered, tmp_path / "tampered.parquet")
    with pytest.raises(DatasetError, match="does not match the recorded"):
        verify_pack(tmp_path / "tampered.parquet")
    with pytest.raises(DatasetError, match="was not written by 'jitterscope pack'"):
        verify_pack(long_import)


def test_histogram_dataset_packs(tmp_path):
    table, metadata = import_files([DATA / "shared" / "cyclictest-histogram.txt"])
    write_dataset(table, metadata, tmp_path / "h.parquet")
    result = pack_dataset(tmp_path / "h.parquet", tmp_path / "hp.parquet")
    assert result.wakeups == 4000  # bins plus overflows
    back = open_dataset(tmp_path / "hp.parquet")
    assert back.is_histogram and back.read().equals(
        table.cast(back.schema).sort_by([("thread", "ascending"), ("bin_start_ns", "ascending")]))


def test_refuses_to_overwrite(tmp_path, long_import):
    shutil.copy(long_import, tmp_path / "x.parquet")
    with pytest.raises(DatasetError, match="already exists"):
        pack_dataset(long_import, tmp_path / "x.parquet")


def _identifying_metadata() -> Metadata:
    return Metadata(
        kind="import",
        threads=(ThreadInfo(thread=0, cpu=0, interval_ns=1000, extra={"note": "ran on build-host-7"}),),
        environment={"hostname": "build-host-7", "kernel_release": "6.18.44-fc-v782", "cpus_online": "0-1",
                     "cmdline": "root=/dev/sda1 ip=192.168.1.20 ifname=eth0:52:54:00:12:34:56",
                     "board_serial": "SN-0042-XYZ", "cpu_model": "Intel(R) Xeon(R)"},
        settings={"asked": {"output": "/home/alice/runs/a.parquet", "user": "alice", "interval_ns": 1000000}},
        source={"files": ["/home/alice/ct.txt"], "notes": ["copied from fe80::1ff:fe23:4567:890a"]},
    )


def test_anonymize_replaces_identifying_values_and_says_which():
    meta, changed = anonymize_metadata(_identifying_metadata())
    dumped = json.dumps({k.decode(): v.decode() for k, v in meta.to_kv().items()})
    for secret in ("build-host-7", "192.168.1.20", "52:54:00:12:34:56", "SN-0042-XYZ", "alice",
                   "fe80::1ff:fe23:4567:890a"):
        assert secret not in dumped, secret
    # the allowlist: listed places transformed, unlisted strings dropped (and said so)
    assert set(changed) == {"environment.hostname", "environment.cmdline", "environment.board_serial (dropped)",
                            "settings.asked.output", "settings.asked.user (dropped)", "source.files[]",
                            "source.notes[]", "threads[].note (dropped)"}
    assert meta.environment["kernel_release"] == "6.18.44-fc-v782"
    assert meta.environment["cpu_model"] == "Intel(R) Xeon(R)"
    assert meta.environment["hostname"].startswith("anon-")
    assert "note" not in meta.threads[0].extra and "board_serial" not in meta.environment
    assert meta.settings["asked"]["interval_ns"] == 1000000


def test_pack_anonymize_records_changes(tmp_path):
    table, _ = simulate(SimulationSpec(threads=1, samples=1000, counters=()), seed=1)
    identifying = _identifying_metadata()
    threads = tuple(ThreadInfo(thread=t.thread, cpu=t.cpu, interval_ns=1_000_000, samples=1000, extra=t.extra)
                    for t in identifying.threads)  # the gate: samples add up to the rows
    write_dataset(table, identifying.with_changes(kind="simulation", threads=threads), tmp_path / "s.parquet")
    result = pack_dataset(tmp_path / "s.parquet", tmp_path / "p.parquet", anonymize=True)
    meta = open_dataset(tmp_path / "p.parquet").metadata
    assert meta.pack["anonymized"] == list(result.anonymized) and "environment.hostname" in result.anonymized
    assert pq.read_table(tmp_path / "p.parquet").num_rows == 1000


PLANTED = {"hostname": "alice-laptop.example.org", "short host": "alice-laptop", "user": "alice",
           "MAC": "00:1a:2b:3c:4d:5e", "IP": "192.168.77.23", "home": "/home/alice"}


def _plant(value, depth: int = 0):
    """Every string of a metadata document replaced by one that carries every planted identifier."""
    carrier = ("run by alice on alice-laptop.example.org (ip=192.168.77.23::192.168.77.1:255.255.255.0:"
               "alice-laptop:eth0 ether 00:1a:2b:3c:4d:5e) from /home/alice/caps, user=alice")
    if isinstance(value, dict):
        return {k: _plant(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_plant(v, depth + 1) for v in value]
    return carrier if isinstance(value, str) else value


def test_pack_anonymize_leaves_no_planted_identifier_anywhere_in_the_bytes(tmp_path):
    table, meta = simulate(SimulationSpec(threads=2, samples=500), seed=2)
    environment = {**_plant(dict(meta.environment)), "hostname": PLANTED["hostname"], "nodename": "alice-laptop",
                   "cmdline": "ro ip=192.168.77.23::192.168.77.1:255.255.255.0:alice-laptop:eth0 user=alice "
                              "isolcpus=domain,2-3 idle=poll console=ttyS0,115200 quiet"}
    settings = _plant(dict(meta.settings))
    settings["asked"] = {**settings["asked"], "output": "/home/alice/caps/run1"}
    planted = meta.with_changes(
        environment=environment, settings=settings, counters=_plant(dict(meta.counters)),
        status={"state": "complete", "reason": "stopped by alice", "flushes": 3},
        source={"format": "cyclictest", "files": ["/srv/alice/ct.txt", "/home/alice/ct.json"],
                "notes": ["copied from alice-laptop"], "reconstructed": {}},
        ground_truth=_plant(dict(meta.ground_truth)), tool={"name": "jitterscope", "version": "0.1 (alice)"},
        threads=tuple(ThreadInfo(thread=t.thread, cpu=t.cpu, interval_ns=t.interval_ns, samples=t.samples,
                                 drops=t.drops, overruns=t.overruns, tid=t.tid,
                                 extra={**t.extra, "note": "alice-laptop 00-1A-2B-3C-4D-5E 192.168.77.23"})
                      for t in meta.threads),
    )
    source = write_dataset(table, planted, tmp_path / "planted.parquet")
    raw = source.read_bytes()
    assert all(value.encode() in raw for value in PLANTED.values())  # the plant took
    out = tmp_path / "shared.parquet"
    result = pack_dataset(source, out, anonymize=True)
    data = out.read_bytes()
    for what, value in PLANTED.items():
        for form in {value, value.upper(), value.replace(":", "-")}:
            assert form.encode() not in data, (what, form)
            assert form.encode("utf-16-le") not in data
    assert b"alice" not in data.lower()
    # the ARROW:schema copy of the metadata is base64: decode it and look there too
    arrow_schema = pq.ParquetFile(out).metadata.metadata.get(b"ARROW:schema")
    if arrow_schema is not None:
        import base64
        assert b"alice" not in base64.b64decode(arrow_schema).lower()
    shared = open_dataset(out)  # still a valid dataset, and says what changed
    assert "environment.hostname" in result.anonymized and "environment.cmdline" in result.anonymized
    assert "source.files[]" in result.anonymized and "status.reason" in result.anonymized
    assert shared.metadata.environment["hostname"].startswith("anon-")
    # kept: the latency parameters (values of the kernel's vocabulary kept, others hashed); the rest dropped
    assert re.fullmatch(r"isolcpus=domain,2-3 idle=poll console=anon-[0-9a-f]{12} quiet",
                        shared.metadata.environment["cmdline"])
    assert pq.read_table(out).num_rows == table.num_rows


# ---- poll datasets: the per-second table travels inside the one file ----------------------------------------

POLL_CAPTURE = Path(__file__).resolve().parents[1] / "data" / "capture" / "poll-1s5"


@pytest.mark.parametrize("anonymize", [False, True])
def test_a_packed_poll_dataset_reads_back_equal(tmp_path, anonymize):
    """Rows, per-second table and what the analyses read are the same from the pack as from the directory, with
    --anonymize too; the table goes without its parts' own metadata (the capture's hostname was in it)."""
    from jitterscope.dataset import read_poll_table, validate_dataset
    from jitterscope.io import PollSpec, simulate_poll
    from jitterscope.poll import read_poll, summarize_poll

    simulated = simulate_poll(PollSpec(cpus=(0, 1), duration_s=3, burst_rate_hz=5, trace=True),
                              tmp_path / "sim", seed=4)
    for source in (POLL_CAPTURE, simulated):
        out = tmp_path / f"{source.name}.parquet"
        pack_dataset(source, out, anonymize=anonymize)
        assert verify_pack(out)
        assert read_poll_table(out).equals(read_poll_table(source))
        assert open_dataset(out).read().equals(open_dataset(source).read().sort_by([("thread", "ascending"),
                                                                                     ("seq", "ascending")]))
        verdict = validate_dataset(out)
        assert verdict.valid, verdict.problems
        assert any("agrees with the rows" in note for note in verdict.notes), verdict.notes
        a, b = read_poll(source), read_poll(out)
        for ta, tb in zip(a.threads, b.threads, strict=True):
            assert all(np.array_equal(ta.windows[k], tb.windows[k]) for k in ta.windows)
            assert np.array_equal(ta.duration_ns, tb.duration_ns)
        assert summarize_poll(a).threads == summarize_poll(b).threads
        packed = open_dataset(out).metadata.pack["poll_windows"]
        blob = pq.ParquetFile(pa.BufferReader(__import__("base64").b64decode(packed["data"])))
        assert not any(key.startswith(b"jitterscope.") for key in (blob.metadata.metadata or {}))
        if anonymize:
            assert open_dataset(out).metadata.environment["hostname"].startswith("anon-")


def test_a_packed_poll_table_that_was_changed_or_left_out_is_said(tmp_path):
    from jitterscope.dataset import read_poll_table, validate_dataset
    from jitterscope.errors import SchemaError

    out = tmp_path / "p.parquet"
    pack_dataset(POLL_CAPTURE, out)
    table = pq.read_table(out)
    kv = dict(table.schema.metadata)
    pack = json.loads(kv[b"jitterscope.pack"])
    windows = read_poll_table(out)
    changed = windows.set_column(windows.column_names.index("noise_ns"), "noise_ns",
                                 pa.array(windows.column("noise_ns").to_numpy() + 1))
    sink = pa.BufferOutputStream()
    pq.write_table(changed, sink)
    forged = dict(pack, poll_windows=dict(pack["poll_windows"], data=__import__("base64").b64encode(
        sink.getvalue().to_pybytes()).decode()))
    pq.write_table(table.replace_schema_metadata({**kv, b"jitterscope.pack": json.dumps(forged).encode()}),
                   tmp_path / "forged.parquet")
    with pytest.raises(DatasetError, match="changed after packing"):
        verify_pack(tmp_path / "forged.parquet")
    assert not validate_dataset(tmp_path / "forged.parquet").valid
    # a pack of an older jitterscope: the rows alone, said as a note; the table's reader says what to do
    del pack["poll_windows"]
    pq.write_table(table.replace_schema_metadata({**kv, b"jitterscope.pack": json.dumps(pack).encode()}),
                   tmp_path / "old.parquet")
    verdict = validate_dataset(tmp_path / "old.parquet")
    assert verdict.valid and any("the rows only" in note for note in verdict.notes)
    with pytest.raises(DatasetError, match="pack the capture's directory again"):
        read_poll_table(tmp_path / "old.parquet")
    bad = dict(pack, poll_windows=dict(forged["poll_windows"], format="csv"))
    pq.write_table(table.replace_schema_metadata({**kv, b"jitterscope.pack": json.dumps(bad).encode()}),
                   tmp_path / "bad.parquet")
    with pytest.raises(SchemaError, match="not the format"):
        read_poll_table(tmp_path / "bad.parquet")
