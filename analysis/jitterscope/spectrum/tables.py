"""Tables of the spectral analysis (for the report, ``jitterscope spectrum`` users and notebooks).

Builders select and format fields of a :class:`~jitterscope.spectrum.SpectralAnalysis`;
they compute no statistics.
"""

from __future__ import annotations

from ..format import format_thread_cpu
from ..render import P_VALUE, Table
from . import MIN_CYCLES, SpectralAnalysis
from .stationarity import PRESENT_THROUGH
from .text import PEAKS_SHOWN, peaks_by_family, presence_text


def peak_table(analysis: SpectralAnalysis) -> Table:
    """Significant peaks of every thread: every family before further harmonics, 15 rows per thread.

    Parameters
    ----------
    analysis : SpectralAnalysis
        From :func:`jitterscope.spectrum.analyze_spectra`.

    Returns
    -------
    Table
        One row per peak: CPU, the mark it carries on the figure, method and span of the record, frequency,
        period, cycles in the record, SNR, false-alarm probability, harmonic group, the family's fundamental,
        where in the run the line is present, alias candidates and the likely source.
    """
    rows = []
    methods = []
    for thread in analysis.threads:
        who = format_thread_cpu(thread.thread, thread.cpu)
        methods.append(f"{who}: {thread.method_text}, span {thread.span_s:.4g} s")
        for mark, peak in enumerate(peaks_by_family(thread.peaks, PEAKS_SHOWN)[0], start=1):
            rows.append((thread.cpu if thread.cpu >= 0 else f"? (thread {thread.thread})", mark,
                         "LS" if thread.method == "lomb-scargle" else "Welch", thread.span_s,
                         peak.frequency_hz, peak.period_s * 1e3, peak.frequency_hz * thread.span_s, peak.snr, peak.fap,
                         f"{peak.harmonic_group}" + (f" ×{peak.harmonic_number}" if peak.harmonic_number > 1 else ""),
                         peak.fundamental_hz if peak.fundamental_hz is not None else peak.frequency_hz,
                         presence_text(peak), ", ".join(f"{c:.6g}" for c in peak.alias_candidates_hz[1:3]),
                         peak.likely_source or "-"))
    return Table(
        name="spectral-peaks", title="Periodic disturbances: significant spectral peaks",
        columns=("CPU", "mark", "method", "span [s]", "freq [Hz]", "period [ms]", "cycles", "SNR", "FAP", "group",
                 "fundamental [Hz]", "present", "alias candidates [Hz]", "likely source"),
        rows=tuple(rows),
        formats=("", "{:d}", "", "{:.4g}", "{:.4f}", "{:.4g}", "{:.0f}", "{:.1f}", P_VALUE, "", "{:.4f}", "", "", ""),
        notes=(f"Peaks with false-alarm probability below {analysis.options.alpha:g} and at least {MIN_CYCLES} cycles "
               "in the analysed record (span); 'mark' is the number the peak carries on its CPU's spectrum figure "
               "(Welch PSD or Lomb-Scargle periodogram, whichever the peaks come from).  Welch: local noise-floor "
               "test with Šidák correction; Lomb-Scargle (LS, for series with gaps): Baluev.  Every family is "
               "listed before further harmonics of any one; a family is one periodic disturbance (its fundamental "
               "need not be a peak).  'present': share of the record's time segments in which the line stands "
               f"above its local noise (a finding needs {PRESENT_THROUGH:.0%}; the span where it is present "
               "otherwise; n/r: too weak to judge segment by segment).  A disturbance above fs/2 appears folded; "
               "the alias candidates are the true frequencies it may have (a family member's: n × its "
               "fundamental).", *methods,
               # how each thread was analysed (a Lomb-Scargle reduction, gaps): said under the table
               *(f"{format_thread_cpu(thread.thread, thread.cpu)}: {note}" for thread in analysis.threads
                 for note in thread.notes)),
    )
