"""Page 1 of a poll dataset's report: the sentences and the PDF."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from jitterscope.io import PollSpec, simulate_poll
from jitterscope.poll import (
    explain_interruptions,
    find_poll_events,
    format_gap,
    poll_findings,
    poll_spectrum,
    read_poll,
    summarize_poll,
)
from jitterscope.report import write_report


def _findings(path):
    data = read_poll(path)
    causes = explain_interruptions(data)
    meta = data.dataset.metadata
    return poll_findings(summarize_poll(data), causes=causes, spectrum=poll_spectrum(data, causes=causes),
                         environment=meta.environment, clock=meta.clock, events=find_poll_events(data, causes=causes))


def test_page_one_sentences_name_the_loss_the_worst_gap_its_cause_and_the_tick(traced_poll):
    findings = _findings(traced_poll)
    head = findings.headline[0]
    # 50 ms a second of throttling (5 %) and 250 ticks of 2.04 µs (0.051 %), and the IRQs, bursts and hardware
    assert re.match(r"CPU 1 lost 5\.0[5-7] % to interruptions \(95 % CI ", head), head
    assert "worst 50 ms at " in head and head.endswith("caused by RT throttling.")
    actions = " ".join(findings.actions)
    assert ("250/s ticks of 2.04 µs on CPU 1, the scheduler tick (CONFIG_HZ=250): boot with nohz_full=1 "
            in actions)
    assert "RT throttling stopped the loop on CPU 1 for 50 ms every 1 s" in actions
    assert "A periodic source at 10 Hz (irq 24 eth0) interrupts CPU 1" in actions
    assert "had no kernel event: hardware or hypervisor" in actions


def test_a_tick_on_a_nohz_full_cpu_gets_another_action(traced_poll, tmp_path):
    data = read_poll(traced_poll)
    env = {**data.dataset.metadata.environment, "nohz_full_cpus": "1"}
    findings = poll_findings(summarize_poll(data), spectrum=poll_spectrum(data), environment=env)
    actions = " ".join(findings.actions)
    assert "already nohz_full" in actions and "boot with nohz_full" not in actions


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs pdftotext (poppler-utils)")
def test_the_report_pdf_has_page_one_for_noise(tmp_path):
    path = simulate_poll(PollSpec(cpus=(1,), duration_s=12, trace=True), tmp_path / "d", seed=3)
    info = write_report(path, tmp_path / "r.pdf")
    assert info.pages >= 4 and info.sections[0] == "findings" and info.sections[-1] == "gaps"
    text = subprocess.run(["pdftotext", "-f", "1", "-l", "1", "-layout", str(tmp_path / "r.pdf"), "-"],
                          capture_output=True, text=True, check=True).stdout
    flat = " ".join(text.split())
    assert "Busy-poll noise" in flat and re.search(r"CPU 1 lost 5\.0[5-7] % to interruptions", flat)
    assert "caused by RT throttling" in flat and "nohz_full=1" in flat


def test_one_source_whose_gaps_fall_in_two_size_classes_is_one_action(traced_poll):
    """A 1 kHz host timer costing 8 µs or 13 µs is found in two size classes: page 1 says it once, with both
    sizes, and a source no kernel event covers is not told to move its IRQ."""
    import dataclasses

    from jitterscope.poll import HARDWARE
    data = read_poll(traced_poll)
    spectrum = poll_spectrum(data)
    base = spectrum.lines[0]
    host = [dataclasses.replace(base, size_class=size, frequency_hz=hz, source=None, cause=HARDWARE,
                                events=n, median_ns=median)
            for size, hz, n, median in (("1 µs – 10 µs", 1000.0, 5449, 7870), ("10 µs – 100 µs", 1000.4, 3988, 13300))]
    irq = dataclasses.replace(base, frequency_hz=1000.2, source=None, cause="irq 24 eth0", events=10, median_ns=5000)
    findings = poll_findings(summarize_poll(data), spectrum=dataclasses.replace(spectrum, lines=(*host, irq)),
                             environment=data.dataset.metadata.environment)
    about = [a for a in findings.actions if a.startswith("A periodic source at 1000 Hz")]
    assert len(about) == 2, about  # the host's two classes as one; the IRQ (another cause) on its own
    host_action = next(a for a in about if "hardware" in a)
    assert "(9437 times: 5449 of 7.87 µs, 3988 of 13.3 µs)" in host_action
    assert "smp_affinity" not in host_action and "below the kernel" in host_action
    assert "smp_affinity" in next(a for a in about if "eth0" in a)


def test_gaps_of_a_periodic_source_with_no_kernel_event_are_not_counted_again(traced_poll):
    """The 1 Hz hardware gaps planted in the traced simulation, found as a periodic source: the bullet of gaps
    no kernel event covers counts only the others (none here), so page 1 does not count them twice."""
    import dataclasses

    from jitterscope.poll import HARDWARE
    data = read_poll(traced_poll)
    causes = explain_interruptions(data)
    hardware = next(t for t in causes.totals if t.cause == HARDWARE)
    spectrum = poll_spectrum(data, causes=causes)
    base = spectrum.lines[0]
    host = dataclasses.replace(base, cpu=hardware.cpu, frequency_hz=1.0, source=None, cause=HARDWARE,
                               events=hardware.count - 3, median_ns=5000)
    findings = poll_findings(summarize_poll(data), causes=causes,
                             spectrum=dataclasses.replace(spectrum, lines=(host,)))
    rest = [a for a in findings.actions if "had no kernel event" in a]
    assert rest == [f"3 other interruption(s) of CPU {hardware.cpu} (up to {format_gap(hardware.max_ns)}) had no "
                    "kernel event either: hardware or hypervisor (an SMI, the host taking the vCPU); check the "
                    "BIOS's SMI sources or the host's CPU pinning."], findings.actions
    every = dataclasses.replace(host, events=hardware.count)
    findings = poll_findings(summarize_poll(data), causes=causes,
                             spectrum=dataclasses.replace(spectrum, lines=(every,)))
    assert not [a for a in findings.actions if "had no kernel event" in a], findings.actions


def test_report_figures_and_sections_of_a_poll_dataset(traced_poll, tmp_path, capsys, monkeypatch):
    """--figures writes each figure (PDF/SVG/PNG) and table (CSV/JSON/LaTeX) and methods.md/.tex as the timer
    report does; --sections keeps only the named sections; the PDF is the same bytes with or without --figures;
    an unknown section is one line naming the known ones."""
    import json

    from jitterscope.cli import main
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764460800")
    assert main(["report", str(traced_poll), "-o", str(tmp_path / "a.pdf"), "--figures", str(tmp_path / "f"),
                 "--sections", "summary,gaps", "--figure-width", "column", "-q"]) == 0
    names = {p.name for p in (tmp_path / "f").iterdir()}
    for stem in ("poll_rates", "poll_gaps", "poll_summary-tables"):
        assert {f"{stem}.pdf", f"{stem}.svg", f"{stem}.png"} <= names, names
    assert {"poll_noise.tex", "poll_noise.csv", "poll_noise.json", "poll_classes.tex", "methods.md",
            "methods.tex"} <= names
    assert not any(n.startswith(("poll_findings", "poll_interruptions", "poll_causes")) for n in names), names
    noise = json.loads((tmp_path / "f" / "poll_noise.json").read_text())
    assert 94.9 < noise["rows"][0]["available [%]"] < 95.0 and noise["rows"][0]["95 % CI [%]"].startswith("94.9")
    assert "Busy-poll interruptions were recorded" in (tmp_path / "f" / "methods.md").read_text()
    assert main(["report", str(traced_poll), "-o", str(tmp_path / "b.pdf"), "--sections", "summary,gaps",
                 "-q"]) == 0
    assert (tmp_path / "a.pdf").read_bytes() == (tmp_path / "b.pdf").read_bytes()
    capsys.readouterr()
    # as the timer report says an unknown section: one line, exit 1, nothing written
    assert main(["report", str(traced_poll), "-o", str(tmp_path / "c.pdf"), "--sections", "summary,tails"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "tails" in err and "findings, summary, interruptions" in err and not (tmp_path / "c.pdf").exists()
