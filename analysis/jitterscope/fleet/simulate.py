"""A simulated fleet with planted, known answers: :func:`write_simulated_fleet`.

Machines ``rt-00`` … vary kernel, governor, ``hz`` and kernel command line
(``isolcpus``/``nohz_full``, ``idle=poll``) and run one capture a night.  Two
things are planted: a **bad configuration** (governor ``powersave`` on every
``bad_every``-th machine, whose runs get deep idle exits of 60 µs on 0.5 % of the
wake-ups: p99.9 and above, not p99, move) and a **regression** on one good machine's one night (a 25 Hz
disturbance adding 40 µs to one wake-up in 40).  Everything else is the same
lognormal base latency with a per-machine median, so no other night of any
machine differs beyond sampling noise.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..io import BaseLatency, IdleStates, PeriodicDisturbance, SimulationSpec, write_simulation

KERNELS = ("6.1.90-rt31", "6.6.30-rt30", "6.12.0-rt5")
FIRST_NIGHT_NS = 1_793_581_200_000_000_000  # 2026-11-02T01:00:00Z: the fleet's first nightly run
NIGHT_NS = 86_400 * 10**9


@dataclass(frozen=True)
class SimulatedFleet:
    """Where the runs are and what was planted."""

    paths: tuple[str, ...]
    hosts: tuple[str, ...]
    bad_key: str
    bad_value: str
    bad_hosts: tuple[str, ...]
    regressed_host: str
    regressed_night: int
    regressed_path: str


def write_simulated_fleet(directory: str | Path, *, hosts: int = 20, nights: int = 10, samples: int = 5_000,
                          threads: int = 2, bad_every: int = 5, regressed_host: int = 1,
                          regressed_night: int | None = None, seed: int = 0,
                          overwrite: bool = False) -> SimulatedFleet:
    """Write ``hosts x nights`` simulated captures under ``directory`` (``<host>/night-NN.parquet``).

    Parameters
    ----------
    directory
        Existing or new directory.
    hosts, nights
        Fleet size: one capture per machine and night.
    samples, threads
        Wake-ups per thread and threads per capture (1 ms interval).
    bad_every
        Machines ``i`` with ``i % bad_every == bad_every - 1`` have the bad configuration.
    regressed_host, regressed_night
        The machine (a good one) and night (default: the middle one) with the planted regression.
    seed
        Base seed; each capture's seed is derived from it, its machine and its night.
    overwrite
        Replace captures already there (else an existing one is an error).

    Returns
    -------
    SimulatedFleet
    """
    if hosts < 2 or nights < 3 or bad_every < 2:
        raise ValueError("a simulated fleet needs >= 2 hosts, >= 3 nights and bad_every >= 2")
    regressed_night = nights // 2 if regressed_night is None else regressed_night
    if (regressed_host % bad_every == bad_every - 1) or not 0 < regressed_night < nights:
        raise ValueError("the regressed machine must have the good configuration and a night before and after")
    root = Path(directory)
    names, paths, bad = [], [], []
    regressed_path = ""
    for i in range(hosts):
        host = f"rt-{i:02d}"
        names.append(host)
        is_bad = i % bad_every == bad_every - 1
        if is_bad:
            bad.append(host)
        # each key cycles with its own period, so no key but the governor lines up with the bad machines
        kernel = KERNELS[(i // 2) % len(KERNELS)]
        governor = "powersave" if is_bad else ("performance", "schedutil")[i % 2]
        cmdline = f"BOOT_IMAGE=/vmlinuz-{kernel} root=/dev/sda1 ro"
        cmdline += " isolcpus=1 nohz_full=1" if (i // 3) % 2 else ""
        cmdline += " idle=poll" if (i // 4) % 2 else ""
        environment = {"hostname": host, "kernel_release": kernel, "kernel_version": f"#1 SMP PREEMPT_RT {kernel}",
                       "preempt": "rt", "preempt_rt": True, "hz": (1000, 250)[(i // 5) % 2], "cmdline": cmdline}
        base = BaseLatency("lognormal", median_ns=2_600 + 100 * (i % 7), spread=0.3)
        (root / host).mkdir(parents=True, exist_ok=True)
        for night in range(nights):
            effects = []
            if is_bad:
                effects.append(IdleStates(deep_probability=0.005, exit_latency_ns=60_000))
            if i == regressed_host and night == regressed_night:
                effects.append(PeriodicDisturbance(frequency_hz=25, amplitude_ns=40_000, width_ns=1_000_000))
            spec = SimulationSpec(threads=threads, samples=samples, governor=governor, base=base,
                                  effects=tuple(effects), environment=environment,
                                  realtime_ns=FIRST_NIGHT_NS + night * NIGHT_NS + i * 60 * 10**9)
            path = root / host / f"night-{night:02d}.parquet"
            write_simulation(spec, path, seed=seed * 1_000_003 + i * 1_009 + night, overwrite=overwrite)
            paths.append(str(path))
            if i == regressed_host and night == regressed_night:
                regressed_path = str(path)
    return SimulatedFleet(tuple(paths), tuple(names), "governor", "powersave", tuple(bad), names[regressed_host],
                          regressed_night, regressed_path)
