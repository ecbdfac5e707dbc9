"""Planted versus recovered: every planted effect gets a row with the right verdict, an effect planted too weak
to find is "missed", and a dataset that is not a simulation gets no table."""

from __future__ import annotations

import csv
import subprocess
from pathlib import Path

import pytest
from jitterscope.dataset import ThreadInfo, open_dataset, write_dataset
from jitterscope.events import find_events
from jitterscope.io import (
    Drops,
    IdleStates,
    PeriodicDisturbance,
    PStates,
    SharedStalls,
    SimulationSpec,
    SMIs,
    Stalls,
    TransitionSMIs,
    import_files,
    planted_recovery,
    recorded_gaps,
    recover_planted,
    write_simulation,
)
from jitterscope.power import correlate_dataset
from jitterscope.report import write_report
from jitterscope.spectrum import analyze_spectra

EVERY_EFFECT = (
    PeriodicDisturbance(frequency_hz=113, amplitude_ns=8_000, shape="sine"),
    PStates(levels_mhz=(1200, 2400), dwell_ns=(500_000_000, 500_000_000), coupling_probability=1.0,
            coupling_amplitude_ns=40_000),
    SMIs(rate_hz=0.3, duration_ns=1_500_000),
    TransitionSMIs(probability=0.2),
    Stalls(probability=1e-4, periods=3.5),
    SharedStalls(times_ns=(11_300_000_000,), duration_ns=4_200_000, threads=(0, 1)),
    Drops(probability=1e-4, mean_burst=3),
    IdleStates(deep_probability=0.001, exit_latency_ns=60_000),
)
ROWS = ("periodic[0]", "pstates: transitions", "pstates: coupling", "smi", "transition_smis", "stalls",
        "shared_stall", "drops", "idle")


def _recover(path: Path):
    ds = open_dataset(path)
    return recover_planted(ds, events=find_events(ds), correlation=correlate_dataset(ds)[0],
                           spectra=analyze_spectra(ds))


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> Path:
    spec = SimulationSpec(threads=3, samples=20_000, effects=EVERY_EFFECT)
    return write_simulation(spec, tmp_path_factory.mktemp("recovery") / "every.parquet", 7)


def test_every_planted_effect_has_one_row_and_is_recovered(planted) -> None:
    recovery = _recover(planted)
    assert tuple(row.effect for row in recovery.rows) == ROWS  # the spec's order, every effect once
    assert {row.effect: row.verdict for row in recovery.rows} == dict.fromkeys(ROWS, "recovered")
    truth = open_dataset(planted).metadata.ground_truth
    rows = {row.effect: row for row in recovery.rows}
    smis = truth["smi"]["times_ns"]["count"]
    assert smis >= 3 and rows["smi"].values["found"] == smis
    assert rows["shared_stall"].values["whole"] == 1
    assert "as one event on both CPUs" in rows["shared_stall"].recovered
    stalls = sum(v["count"] for v in truth["stalls"]["stalled_expected_ns"].values())
    assert stalls >= 2 and rows["stalls"].values["found"] == stalls
    assert abs(rows["periodic[0]"].values["error_hz"]) <= 2 * rows["periodic[0]"].values["resolution_hz"]
    dropped = sum(t.drops for t in open_dataset(planted).metadata.threads)
    assert dropped > 0 and rows["drops"].values["missing"] == dropped
    assert all(row.tolerance and row.tolerance != "-" for row in recovery.rows)  # each says its tolerance
    assert recovery.tally() == "9 recovered of 9 planted effects"


def test_effects_planted_too_weak_are_missed(tmp_path) -> None:
    spec = SimulationSpec(threads=2, samples=20_000, effects=(
        PeriodicDisturbance(frequency_hz=113, amplitude_ns=2, shape="sine"),  # 2 ns under a 3 µs body
        PStates(levels_mhz=(1200, 2400), dwell_ns=(500_000_000, 500_000_000)),  # no coupling: a planted null
        SMIs(rate_hz=0.5, duration_ns=2_000),  # 2 µs SMIs: no wake-up is late by the events' threshold
        SharedStalls(times_ns=(9_000_000_000,), duration_ns=3_000),  # 3 µs: under the events' threshold
        IdleStates(deep_probability=0.001, exit_latency_ns=0.0),  # deep idle that adds no latency
    ))
    recovery = _recover(write_simulation(spec, tmp_path / "weak.parquet", 3))
    verdicts = {row.effect: row.verdict for row in recovery.rows}
    assert verdicts["periodic[0]"] == "missed"
    assert verdicts["shared_stall"] == "missed"
    assert verdicts["smi"] in ("missed", "partly")  # correlate may see the counter; no event can
    assert recovery.verdict_of("smi") != "recovered"
    assert verdicts["idle"] in ("missed", "partly")  # correlate may see the C0 bin; no event names it
    assert recovery.verdict_of("idle") != "recovered"
    assert verdicts["pstates: transitions"] == "recovered"
    assert verdicts["pstates: coupling"] == "recovered"  # nothing coupled, nothing attributed


def test_idle_exits_below_the_event_threshold_rest_on_correlate(tmp_path) -> None:
    # 30 µs exits in one wake-up of ten, events only above 100 µs: no idle exit can be an event, so the
    # verdict is correlate's low-C0 attribution (recovered), not "partly" for the events' 0 found
    spec = SimulationSpec(threads=2, samples=20_000,
                          effects=(IdleStates(deep_probability=0.1, exit_latency_ns=30_000),))
    ds = open_dataset(write_simulation(spec, tmp_path / "idle.parquet", 4))
    correlation = correlate_dataset(ds)[0]
    assert any(c.startswith("c0 ") and yes for c, yes in correlation.attributed.items())
    recovery = recover_planted(ds, events=find_events(ds, threshold_ns=100_000), correlation=correlation,
                               spectra=None)
    row = next(r for r in recovery.rows if r.effect == "idle")
    assert row.verdict == "recovered" and "below the events' threshold" in row.recovered
    blind = recover_planted(ds, events=find_events(ds, threshold_ns=100_000), correlation=None, spectra=None)
    assert next(r for r in blind.rows if r.effect == "idle").verdict == "not checked"


def test_a_claim_where_nothing_was_planted_is_a_false_positive() -> None:
    # hand-made results: correlate attributes latency to transitions although no coupling was planted
    from types import SimpleNamespace
    truth = {"seed": 1, "spec": {"effects": [{"type": "pstates"}, {"type": "sparkles"}]},
             "pstates": {"type": "pstates", "levels_mhz": [1200.0], "cpus": {}, "coupling_probability": 0.0},
             "sparkles": {"type": "sparkles", "rate_hz": 3}}
    correlation = SimpleNamespace(available=True, attributed={"transition": True}, tests=(), frequency=None,
                                  reason="")
    threads = (ThreadInfo(thread=0, cpu=0, interval_ns=1_000_000),)
    recovery = planted_recovery(truth, threads, correlation=correlation)
    rows = {row.effect: row for row in recovery.rows}
    assert rows["pstates: coupling"].verdict == "false positive"
    assert rows["sparkles"].verdict == "not checked"
    assert "no recovery analysis for this effect kind" in rows["sparkles"].recovered
    assert planted_recovery(truth, threads).verdict_of("pstates: coupling") == "not checked"  # correlate absent


def test_recorded_gaps_counts_the_missing_seq_values(planted) -> None:
    ds = open_dataset(planted)
    gaps = recorded_gaps(ds)
    assert {t: g.missing for t, g in gaps.items()} == {t.thread: t.drops for t in ds.metadata.threads}


def test_the_report_has_the_table_for_a_simulation_only(planted, tmp_path) -> None:
    info = write_report(planted, tmp_path / "sim.pdf", figures_dir=tmp_path / "fig",
                        sections=("findings", "planted", "power", "spectrum", "events"))
    text = subprocess.run(["pdftotext", "-layout", str(tmp_path / "sim.pdf"), "-"], check=True,
                          capture_output=True, text=True).stdout
    assert "Planted versus recovered: every.parquet" in text
    assert "9 recovered of 9 planted effects" in text  # page 1 says it too
    with open(tmp_path / "fig" / "planted-recovered.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["effect"] for r in rows] == list(ROWS) and {r["verdict"] for r in rows} == {"recovered"}
    assert {"planted-recovered.json", "planted-recovered.tex"} <= {Path(f).name for f in info.figure_files}

    table, meta = import_files([Path(__file__).resolve().parents[2] / "data" / "formats" / "ct-verbose.txt"])
    imported = write_dataset(table, meta, tmp_path / "ct.parquet")
    assert recover_planted(open_dataset(imported)) is None
    info = write_report(imported, tmp_path / "ct.pdf", figures_dir=tmp_path / "ctfig", sections=("findings", "planted"))
    assert "planted" not in info.sections and not any("planted" in f for f in info.figure_files)
    text = subprocess.run(["pdftotext", str(tmp_path / "ct.pdf"), "-"], check=True, capture_output=True,
                          text=True).stdout
    assert "Planted versus recovered" not in text and "planted effects" not in text


def test_a_spectral_line_nothing_planted_is_a_false_positive() -> None:
    from types import SimpleNamespace
    truth = {"periodic[0]": {"type": "periodic", "frequency_hz": 113.0, "amplitude_ns": 5_000.0}}

    def peak(hz: float, harmonic: int = 1) -> SimpleNamespace:
        # every peak its own family (as group_harmonics leaves unrelated lines)
        return SimpleNamespace(frequency_hz=hz, fap=1e-9, harmonic_number=harmonic, resolution_hz=0.05, snr=30.0,
                               method="welch", likely_source=None, harmonic_group=round(hz * 100),
                               fundamental_hz=hz / harmonic)

    thread = SimpleNamespace(thread=0, cpu=0, fs_hz=1000.0, peaks=(peak(113.02), peak(226.0), peak(77.0)))
    spectra = SimpleNamespace(threads=(thread,), skipped=())
    threads = (ThreadInfo(thread=0, cpu=0, interval_ns=1_000_000),)
    recovery = planted_recovery(truth, threads, spectra=spectra)
    rows = {row.effect: row for row in recovery.rows}
    assert rows["periodic[0]"].verdict == "recovered"
    assert rows["spectrum: lines not planted"].verdict == "false positive"
    assert rows["spectrum: lines not planted"].values["lines_hz"] == [77.0]  # 226 Hz is 113 Hz's harmonic
    assert recovery.tally() == "1 recovered of 1 planted effect; false positive: spectrum: lines not planted"
    clean = SimpleNamespace(threads=(SimpleNamespace(**{**vars(thread), "peaks": (peak(113.0),)}),), skipped=())
    assert "spectrum: lines not planted" not in {r.effect for r in planted_recovery(truth, threads, spectra=clean).rows}
