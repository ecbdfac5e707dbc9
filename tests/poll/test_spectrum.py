"""poll_spectrum finds the planted periodic sources and names them; pure noise gives none."""

from __future__ import annotations

import pytest
from jitterscope.io import PeriodicIrq, PollSpec, simulate_poll
from jitterscope.poll import explain_interruptions, poll_spectrum


def test_tick_throttling_and_a_periodic_irq_are_found_and_named(traced_poll):
    spectrum = poll_spectrum(traced_poll, causes=explain_interruptions(traced_poll))
    tick = spectrum.line_at(250)
    assert tick is not None and tick.frequency_hz == pytest.approx(250, rel=1e-4)
    assert tick.source == "scheduler tick (CONFIG_HZ=250)" and tick.size_class == "1 µs – 10 µs"
    assert tick.median_ns == pytest.approx(2040, abs=30)
    throttle = spectrum.line_at(1.0, 0.05)
    assert throttle is not None and throttle.size_class == ">= 1 ms"
    assert throttle.source.startswith("RT throttling") and throttle.cause == "RT throttling"
    irq = spectrum.line_at(10, 0.1)
    assert irq is not None and irq.cause == "irq 24 eth0" and irq.source is None
    assert len(spectrum.lines) == 3


def test_the_tick_at_another_hz_is_named_with_that_hz(tmp_path):
    path = simulate_poll(PollSpec(cpus=(2,), duration_s=12, tick_hz=300, rt_runtime_us=None), tmp_path / "d", seed=2)
    lines = poll_spectrum(path).lines
    assert [(round(line.frequency_hz, 3), line.source) for line in lines] == [(300.0, "scheduler tick (CONFIG_HZ=300)")]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_interruptions_make_no_line(tmp_path, seed):
    spec = PollSpec(cpus=(1,), duration_s=20, tick_hz=None, rt_runtime_us=None, burst_rate_hz=30,
                    hardware_rate_hz=50)
    assert poll_spectrum(simulate_poll(spec, tmp_path / "d", seed=seed)).lines == ()


def test_a_periodic_irq_alone_is_found(tmp_path):
    spec = PollSpec(cpus=(1,), duration_s=12, tick_hz=None, rt_runtime_us=None, irqs=(PeriodicIrq(7, 3000),),
                    hardware_rate_hz=2)
    lines = poll_spectrum(simulate_poll(spec, tmp_path / "d", seed=4)).lines
    assert len(lines) == 1 and lines[0].frequency_hz == pytest.approx(7, rel=1e-3)


def test_a_1_hz_irq_is_not_called_throttling(tmp_path):
    # throttling is on, but its name belongs to the class holding its 50 ms gap, not to a 1 Hz train of 5 µs IRQs
    spec = PollSpec(cpus=(1,), duration_s=15, irqs=(PeriodicIrq(1, 5000, "rtc0"),))
    spectrum = poll_spectrum(simulate_poll(spec, tmp_path / "d", seed=5))
    small = [line for line in spectrum.lines if line.size_class == "1 µs – 10 µs" and line.frequency_hz < 2]
    assert len(small) == 1 and small[0].source.startswith("1 Hz housekeeping")
    large = spectrum.line_at(1.0, 0.05)
    assert any(line.source.startswith("RT throttling") for line in spectrum.lines if line.size_class == ">= 1 ms")
    assert large is not None


def test_a_tick_without_a_recorded_config_hz_is_named_as_a_guess(tmp_path):
    spec = PollSpec(cpus=(1,), duration_s=12, rt_runtime_us=None, record_hz=False)
    lines = poll_spectrum(simulate_poll(spec, tmp_path / "d", seed=6)).lines
    assert [line.source for line in lines] == ["scheduler tick? (CONFIG_HZ not recorded; 250 is a usual value)"]
