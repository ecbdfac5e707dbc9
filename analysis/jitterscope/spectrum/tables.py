"""Tables of the spectral analysis (for the report, ``jitterscope spectrum`` users and notebooks).

Builders select and format fields of a :class:`~jitterscope.spectrum.SpectralAnalysis`;
they compute no statistics.
"""

from __future__ import annotations

from ..render import Table
from . import SpectralAnalysis
from .text import peaks_by_family


def peak_table(analysis: SpectralAnalysis) -> Table:
    """Significant peaks of every thread: families by strongest member, 4 harmonics each, 15 rows per thread.

    Parameters
    ----------
    analysis : SpectralAnalysis
        From :func:`jitterscope.spectrum.analyze_spectra`.

    Returns
    -------
    Table
        One row per peak: CPU, frequency, period, SNR, false-alarm probability, harmonic group,
        alias candidates and the likely source.
    """
    rows = []
    for thread in analysis.threads:
        for peak in peaks_by_family(thread.peaks, 15)[0]:
            rows.append((thread.cpu, peak.frequency_hz, peak.period_s * 1e3, peak.snr, peak.fap,
                         f"{peak.harmonic_group}" + (f" ×{peak.harmonic_number}" if peak.harmonic_number > 1 else ""),
                         ", ".join(f"{c:.6g}" for c in peak.alias_candidates_hz[1:3]), peak.likely_source or "-"))
    return Table(
        name="spectral-peaks", title="Periodic disturbances: significant spectral peaks",
        columns=("CPU", "freq [Hz]", "period [ms]", "SNR", "FAP", "group", "alias candidates [Hz]", "likely source"),
        rows=tuple(rows), formats=("", "{:.4f}", "{:.4g}", "{:.1f}", "{:.1e}", "", "", ""),
        notes=(f"Peaks with false-alarm probability below {analysis.options.alpha:g} (Welch: local noise-floor test "
               "with Šidák correction; Lomb-Scargle: Baluev).  A disturbance above fs/2 appears folded; "
               "the alias candidates are the true frequencies it may have.",
               # how each thread was analysed (a Lomb-Scargle reduction, gaps): the report says it under the table
               *(f"cpu {thread.cpu}: {note}" for thread in analysis.threads for note in thread.notes)),
    )
