"""The summary: streaming histograms, moments and percentiles per thread, the latency
timeline, the curves drawn from them, and their plots, tables and text.

Compute: :mod:`.histogram`, :mod:`.accumulators`, :mod:`.stats`, :mod:`.timeline`,
:mod:`.curves`.  Views: :mod:`.plots` (matplotlib, loaded on first use), :mod:`.tables`,
:mod:`.text`.
"""

import lazy_loader as _lazy

# Names load from their module on first use: importing the package is free, and the views
# (matplotlib) load only when a plot is asked for.
__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submod_attrs={
        "curves": [
            "LOG_BINS_PER_DECADE", "LogDensity", "bin_histograms", "ccdf_curves", "log_density", "percentile_curves",
            "series_label",
        ],
        "histogram": ["HistogramResult", "KeyedLatencyHistograms", "LatencyHistogram"],
        "plots": [
            "plot_ccdf", "plot_latency_density", "plot_latency_histogram", "plot_percentiles", "plot_period_error",
            "plot_timeline",
        ],
        "stats": [
            "CyclictestStats", "IntervalStats", "Moments", "PERCENTILES", "Summary", "TopSpikes", "cyclictest_us",
            "summarize",
        ],
        "special": ["sparse_tools", "special_ufuncs"],
        "tables": ["spike_table", "summary_table"],
        "text": ["format_cyclictest_line", "format_info", "format_intervals", "format_summary_table"],
        "timeline": [
            "N_BUCKETS", "SUB_BUCKETS", "LatencyTimeline", "TimelineResult", "bucket_centre_ns", "bucket_of",
            "compute_timeline",
        ],
    },
)
