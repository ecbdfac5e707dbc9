"""Report section: latency spectra per CPU, spectrogram, spike-train spectrum, inter-spike intervals, peak table."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from ...errors import AnalysisError
from ...render import Page, Table, legends_off_data, new_page
from ...spectrum import (
    analyze_spectra,
    peak_table,
    plot_isi,
    plot_lomb_scargle,
    plot_psd,
    plot_spectrogram,
    plot_spike_psd,
)
from ..build import ReportContext, register_section

MAX_THREAD_PAGES = 8


def _line(text: str) -> Table:
    return Table(name="spectrum", title="Latency spectra", columns=("finding",), rows=((text,),), formats=("",),
                 align=("l",))


@register_section(order=40, name="spectrum", uses=("spectrum",))
def spectra_section(ctx: ReportContext) -> Sequence[Page | Table] | None:
    """Per CPU: PSD with marked peaks and spectrogram; spike spectrum and ISI; then the peak table."""
    if ctx.dataset.is_histogram:
        return [_line("spectra not available: a histogram-only dataset has no time series")]
    try:
        analysis = ctx.shared("spectrum", lambda: analyze_spectra(ctx.dataset))
    except AnalysisError as exc:
        return [_line(f"spectra not computed: {exc}")]
    items: list[Page | Table] = []
    for thread in analysis.threads[:MAX_THREAD_PAGES]:
        # the peaks' own method is always drawn: Lomb-Scargle peaks get their periodogram under the Welch PSD
        with_ls = thread.lomb_scargle is not None
        fig, axes = new_page(3 if with_ls else 2, 1)
        plot_psd(thread, axes[0])
        if with_ls:
            plot_lomb_scargle(thread, axes[1])
        if thread.spectrogram is not None:
            plot_spectrogram(thread.spectrogram, axes[-1], title=f"{_who(thread)}: spectrogram")
        # once the page is laid out (where it is drawn): the legends go into headroom above the spectra
        items.append(Page(ctx.thread_page_name("spectrum", thread.thread, thread.cpu), fig,
                          prepare=functools.partial(legends_off_data, axes=tuple(axes[:-1]), hold=True)))
        fig, axes = new_page(1, 2)
        plot_spike_psd(thread.spike_psd, thread.spike_peaks, axes[0], title=f"{_who(thread)}: spectrum of spikes",
                       spikes=thread.isi.spikes)
        plot_isi(thread.isi, axes[1])
        items.append(Page(ctx.thread_page_name("spikes", thread.thread, thread.cpu), fig))
    items.append(peak_table(analysis))
    return items


def _who(thread) -> str:
    """"CPU 3", or "thread 1 (CPU unknown)" for an import that does not record CPUs."""
    return f"CPU {thread.cpu}" if thread.cpu >= 0 else f"thread {thread.thread} (CPU unknown)"
