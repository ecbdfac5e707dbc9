"""Where a peak may come from: alias candidates and known periodic sources.

A latency series is sampled once per timer interval, so a disturbance at a
true frequency f shows at |f - k fs| folded into [0, fs/2].  Each observed peak
therefore stands for a family of true frequencies; the candidates listed are
the first few, and a known source matches when one of its harmonics folds onto
the peak.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..errors import AnalysisError
from .peaks import Peak, fold_frequency

MAX_INTERVAL_MULTIPLE = 16


@dataclass(frozen=True)
class Source:
    """A periodic process known or suspected to disturb the timer."""

    name: str
    frequency_hz: float
    harmonics: int = 10
    """Highest harmonic of the source a peak may be matched to."""

    def to_json(self) -> dict:
        return {"name": self.name, "frequency_hz": self.frequency_hz, "harmonics": self.harmonics}


def parse_sources(text: str) -> tuple[Source, ...]:
    """Parse a user list ``"name=HZ,name=HZ"`` (a bare ``HZ`` is named after its frequency).

    Raises
    ------
    AnalysisError
        An entry is not a positive frequency in Hz.
    """
    sources = []
    for entry in filter(None, (part.strip() for part in text.split(","))):
        name, _, value = entry.rpartition("=")
        try:
            frequency = float(value)
        except ValueError:
            frequency = math.nan
        if not frequency > 0 or not math.isfinite(frequency):
            raise AnalysisError(f"source {entry!r} is not NAME=HZ with a positive frequency; e.g. --sources smi=0.5")
        sources.append(Source(name or f"{frequency:g} Hz", frequency))
    return tuple(sources)


def default_sources(environment: Mapping[str, Any] | None, fs_hz: float | None) -> tuple[Source, ...]:
    """Sources every Linux system may have: the scheduler tick, 1 Hz housekeeping, periods of n intervals.

    Parameters
    ----------
    environment : mapping or None
        The dataset's ``environment`` metadata (its ``hz`` is CONFIG_HZ when readable).
    fs_hz : float or None
        The timer's sampling frequency; None when the sampling is irregular.
    """
    sources = []
    hz = (environment or {}).get("hz")
    if isinstance(hz, int | float) and hz > 0:
        sources.append(Source(f"scheduler tick (CONFIG_HZ={hz:g})", float(hz)))
    sources.append(Source("1 Hz housekeeping (daemons, RTC, vmstat)", 1.0))
    if fs_hz:
        # only the fundamental: harmonics of fs/n for every n would label a good part of the band
        # fs/2 is the Nyquist frequency: alternating wake-ups differ there, but so does anything folding onto it
        # (k fs +- fs/2), so it is not named "every 2 timer intervals" as if that were known
        sources.append(Source("Nyquist frequency fs/2: alternate wake-ups differ (every 2 intervals, or a "
                              "disturbance folded onto fs/2)", fs_hz / 2, harmonics=1))
        sources += [Source(f"every {n} timer intervals", fs_hz / n, harmonics=1)
                    for n in range(3, MAX_INTERVAL_MULTIPLE + 1)]
    return tuple(sources)


def alias_candidates(frequency_hz: float, fs_hz: float, *, folds: int = 2) -> tuple[float, ...]:
    """True frequencies that appear at ``frequency_hz`` when sampled at ``fs_hz``: f, k fs - f, k fs + f (k ≤ folds)."""
    candidates = {round(frequency_hz, 9)}
    for k in range(1, folds + 1):
        candidates |= {round(k * fs_hz - frequency_hz, 9), round(k * fs_hz + frequency_hz, 9)}
    return tuple(sorted(c for c in candidates if c >= 0))


def match_source(peak: Peak, sources: tuple[Source, ...], *, fs_hz: float | None) -> str | None:
    """The first source one of whose harmonics lands within one resolution element of the peak, as a label."""
    tolerance = peak.resolution_hz
    for source in sources:
        if source.frequency_hz < 2 * tolerance:
            continue  # harmonics closer than the resolution would match anything
        for n in range(1, source.harmonics + 1):
            true = n * source.frequency_hz
            seen = true if fs_hz is None else float(fold_frequency(true, fs_hz))
            if abs(seen - peak.frequency_hz) <= tolerance:
                label = source.name if n == 1 else f"{source.name}, harmonic {n}"
                if fs_hz is not None and true > fs_hz / 2 * (1 + 1e-9):
                    label += f", aliased from {true:g} Hz"
                return label
    return None


def attribute(peaks: tuple[Peak, ...], sources: tuple[Source, ...], *, fs_hz: float | None,
              folds: int = 2) -> tuple[Peak, ...]:
    """Fill each peak's alias candidates and likely source.

    Only fundamentals (harmonic number 1) are matched against the sources; a
    harmonic inherits its family's source, so a chance coincidence of a
    harmonic with some unrelated source cannot override the family.  A member
    of a family has no alias candidates but its true frequency n f0 when that
    is above fs/2: the family explains it, and no other fold is needed.

    Parameters
    ----------
    peaks : tuple of Peak
    sources : tuple of Source
        In order of preference (user-supplied first).
    fs_hz : float or None
        Nominal sampling frequency; None for irregular sampling (no aliasing).
    folds : int
        Number of folds k listed among the candidates.
    """
    family = {p.harmonic_group: match_source(p, sources, fs_hz=fs_hz) for p in peaks if p.harmonic_number == 1}
    sizes: dict[int, int] = {}
    for peak in peaks:
        sizes[peak.harmonic_group] = sizes.get(peak.harmonic_group, 0) + 1
    out = []
    for peak in peaks:
        if sizes[peak.harmonic_group] > 1 and peak.fundamental_hz:
            # a family member's true frequency is known: n f0 (an alias only where that lies above fs/2)
            true = peak.harmonic_number * peak.fundamental_hz
            candidates = (peak.frequency_hz,) + ((true,) if fs_hz and true > fs_hz / 2 else ())
        else:
            candidates = alias_candidates(peak.frequency_hz, fs_hz, folds=folds) if fs_hz else (peak.frequency_hz,)
        source = family.get(peak.harmonic_group)
        if source is not None and peak.harmonic_number > 1:
            source = f"{source}, harmonic {peak.harmonic_number} of the family"
        out.append(replace(peak, alias_candidates_hz=tuple(float(c) for c in np.round(candidates, 6)),
                           likely_source=source))
    return tuple(out)
