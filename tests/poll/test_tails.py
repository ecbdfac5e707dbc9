"""tails of a poll dataset: the extreme-value fit of interruption lengths, on planted tails with known shapes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from jitterscope.cli import main
from jitterscope.errors import AnalysisError
from jitterscope.io import PollSpec, import_oslat_poll, simulate_poll
from jitterscope.poll import analyze_poll_tails
from jitterscope.tails import tails_text

from .conftest import hand_dataset

DATA = Path(__file__).resolve().parents[1] / "data" / "formats"
SECONDS, COUNT, XI = 10, 2500, 0.3


@pytest.fixture(scope="session")
def planted_tails(tmp_path_factory):
    """The same 2,500 interruption times over 10 s, lengths 1 µs + a Pareto (ξ = 0.3) or an exponential excess."""
    root = tmp_path_factory.mktemp("polltails")
    rng = np.random.default_rng(5)
    starts = np.sort(rng.choice(SECONDS * 10**9 - 10**7, COUNT, replace=False))
    excess = {"pareto": (2000 / XI) * (rng.uniform(size=COUNT) ** -XI - 1), "exponential": rng.exponential(2000, COUNT)}
    return {name: analyze_poll_tails(hand_dataset(root / name, [(1, int(s), int(1000 + x)) for s, x in
                                                                zip(starts, values, strict=True)], runtime_s=SECONDS))
            for name, values in excess.items()}


def test_planted_shapes_are_recovered_and_the_heavy_tail_reaches_further(planted_tails):
    heavy, light = planted_tails["pareto"].threads[0], planted_tails["exponential"].threads[0]
    assert abs(heavy.xi - XI) < 3 * heavy.xi_se and heavy.xi > 0.1
    assert abs(light.xi) < 3 * light.xi_se and light.xi < 0.15
    for fit in (heavy, light):
        assert fit.unit == "interruption" and fit.n == COUNT and fit.cpu == 1
        assert fit.rate_hz == pytest.approx(COUNT / SECONDS)  # interruptions per second polled, not 1 per ns
        assert fit.extrapolated and {r.period for r in fit.return_levels} == {"hour", "day"}
    hour = {name: next(r.level_ns for r in report.threads[0].return_levels if r.period == "hour")
            for name, report in planted_tails.items()}
    assert hour["pareto"].lower > 3 * hour["exponential"].upper
    # once an hour at 250 interruptions/s: 900,000 interruptions; exponential: 1 µs + 2 µs x ln(900000) = 28.4 µs
    assert hour["exponential"].lower < 28_400 < hour["exponential"].upper


def test_text_speaks_of_interruptions(planted_tails):
    text = tails_text(planted_tails["exponential"])
    assert "[/interruption]" in text and "n interruptions;" in text and "if interruptions are independent" in text
    assert "wake-up" not in text


def test_a_mixture_of_mechanisms_gets_no_return_level(tmp_path):
    # the tick's 2 µs, a few 30 µs bursts and RT throttling's 50 ms a second: no one Pareto law above a threshold
    path = simulate_poll(PollSpec(cpus=(1,), duration_s=10, burst_rate_hz=3, burst_ns=30_000), tmp_path / "m", seed=3)
    fit = analyze_poll_tails(path).threads[0]
    assert not fit.extrapolated and fit.return_levels == () and "mixes mechanisms" in fit.withheld
    ten_ms = next(r for r in fit.large_events if r.level_ns == 10_000_000)
    assert ten_ms.events == 10  # throttling, once a second, counted in the data
    assert dict(fit.exceedance_probabilities)[fit.observed_max_ns].estimate == 0  # nothing beyond the max


def test_histogram_import_is_refused(tmp_path):
    path = import_oslat_poll(DATA / "oslat-fifo.txt", tmp_path / "o")
    with pytest.raises(AnalysisError, match="without per-interruption rows"):
        analyze_poll_tails(path)


def test_cli_tails_of_a_poll_dataset_and_its_gates(tmp_path, capsys):
    out = tmp_path / "p"
    assert main(["simulate", "--mode", "poll", "-o", str(out), "-D", "6s", "--bursts", "3:30", "--seed", "4"]) == 0
    capsys.readouterr()
    assert main(["tails", str(out), "--fail-if", "max>10ms", "--fail-if", "p50>1ms"]) == 3
    captured = capsys.readouterr()
    assert "[/interruption]" in captured.out and "withheld" in captured.out
    assert "FAILED fail-if max>10ms: max = 50,000 µs" in captured.err and "passed fail-if p50>1ms" in captured.err
    assert main(["tails", str(out), "--fail-if", "events>1ms:0"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
