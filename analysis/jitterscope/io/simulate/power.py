"""Power-management scenarios for :mod:`jitterscope.io.simulate`: the seed story and SMIs tied to transitions.

The *seed story* that started jitterscope: a 60 Hz periodic timer (16.667 ms)
at SCHED_FIFO on a shielded CPU showed ±100 µs errors under the
``performance`` governor while cpufreq claimed a steady 2.4 GHz and
APERF/MPERF showed the frequency moving; a ``powersave`` run (steady low
frequency) and a run with a CPU hog beside it (frequency pinned high, never
idle) showed almost none.  :func:`seed_story` rebuilds the three runs with a
1 Hz background disturbance in all of them, so every run has spikes that are
*not* caused by transitions.

:func:`with_smis` adds SMIs, optionally tied to transitions with
:class:`~jitterscope.simeffects.TransitionSMIs` (``"transition_smis"``, defined
in :mod:`jitterscope.simeffects` so spec files can use it without importing
this module): firmware that handles some P-state changes in SMM.
"""

from __future__ import annotations

from typing import Any

from .effects import Effect, PeriodicDisturbance, PStates, SMIs, TransitionSMIs
from .simulation import BaseLatency, Simulation, SimulationSpec, simulate

STORY_INTERVAL_NS = 16_666_667
"""60 Hz."""
STORY_CLAIMED_KHZ = 2_400_000
STORY_KINDS = ("performance", "powersave", "hog")


def seed_story(kind: str, *, seconds: float = 300.0, coupling_probability: float = 0.5,
               coupling_amplitude_ns: float = 100_000.0, threads: int = 1) -> SimulationSpec:
    """The spec of one of the three seed-story runs.

    Parameters
    ----------
    kind : {"performance", "powersave", "hog"}
        ``performance``: random P-state changes among 1.6/2.4/3.4 GHz (mean dwell 0.5 s),
        a transition adds ``coupling_amplitude_ns`` to the first wake-up after it with
        ``coupling_probability``; ``powersave``: steady 800 MHz; ``hog``: pinned at
        3.4 GHz with C0 = 100 %.
    seconds : float
        Length of the run.
    coupling_probability, coupling_amplitude_ns : float
        The planted coupling of the performance run (0 for a null run).
    threads : int
        Threads (CPUs 0..threads-1).

    Returns
    -------
    SimulationSpec
        Every run also has a 1 Hz background disturbance of 40 µs on one wake-up per second.  Its
        ``environment`` records the cpufreq claim the kind would have: ``performance`` claims the
        fixed 2.4 GHz of the story (and the counters disagree); ``powersave`` claims 800 MHz and
        ``hog`` 3.4 GHz (both true).
    """
    if kind not in STORY_KINDS:
        raise ValueError(f"seed story kind must be one of {STORY_KINDS}, not {kind!r}")
    if kind == "performance":
        pstates = PStates(levels_mhz=(1600.0, 2400.0, 3400.0), process="random", mean_dwell_ns=500_000_000,
                          c0_fraction=0.05, coupling_probability=coupling_probability,
                          coupling_amplitude_ns=coupling_amplitude_ns, coupling_window=0)
    elif kind == "powersave":
        pstates = PStates(levels_mhz=(800.0,), process="steps", dwell_ns=(10**15,), c0_fraction=0.05)
    else:
        pstates = PStates(levels_mhz=(3400.0,), process="steps", dwell_ns=(10**15,), c0_fraction=1.0)
    background = PeriodicDisturbance(frequency_hz=1.0, amplitude_ns=40_000.0, width_ns=STORY_INTERVAL_NS)
    governor = "powersave" if kind == "powersave" else "performance"
    claimed = {"performance": STORY_CLAIMED_KHZ, "powersave": 800_000, "hog": 3_400_000}[kind]
    cpufreq = {"driver": "acpi-cpufreq (simulated)", "governor": governor, "cur_khz": claimed,
               "min_khz": 800_000, "max_khz": 3_400_000}
    return SimulationSpec(
        threads=threads, interval_ns=STORY_INTERVAL_NS, samples=int(seconds * 1e9 / STORY_INTERVAL_NS),
        tsc_hz=STORY_CLAIMED_KHZ * 1e3, governor=governor,
        base=BaseLatency(distribution="lognormal", median_ns=4_000.0, spread=0.3), effects=(pstates, background),
        environment={"cpufreq": {"*": cpufreq}},
    )


def with_smis(spec: SimulationSpec, *, rate_hz: float = 2.0, duration_ns: int = 3_000_000,
              at_transitions: float = 0.0) -> SimulationSpec:
    """``spec`` plus Poisson SMIs (and, with ``at_transitions`` > 0, SMIs at that share of transitions)."""
    extra: tuple[Effect, ...] = (SMIs(rate_hz=rate_hz, duration_ns=duration_ns),)
    if at_transitions:
        extra += (TransitionSMIs(probability=at_transitions),)
    return SimulationSpec(**{**_fields(spec), "effects": (*spec.effects, *extra)})


def simulate_story(kind: str, seed: int, **options: Any) -> Simulation:
    """Simulate a seed-story run; it records the cpufreq claim of :func:`seed_story`'s spec.

    ``options`` go to :func:`seed_story`, plus ``smis`` (a dict for :func:`with_smis`).
    """
    smis = options.pop("smis", None)
    spec = seed_story(kind, **options)
    if smis is not None:
        spec = with_smis(spec, **smis)
    return simulate(spec, seed)


def _fields(spec: SimulationSpec) -> dict[str, Any]:
    return {name: getattr(spec, name) for name in SimulationSpec.__dataclass_fields__}
