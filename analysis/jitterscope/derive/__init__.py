"""Derived quantities: latency, period and overruns from the samples; counter deltas
(effective frequency, C0 residency, SMIs); per-thread series; per-CPU trace noise (what held
each wake-up's CPU, from the dataset's kernel trace).

Modules: :mod:`.latency`, :mod:`.counters`, :mod:`.series`, :mod:`.trace`, :mod:`.split` (interrupt versus
thread latency of each traced wake-up); :mod:`.text` (its text).
"""

import lazy_loader as _lazy

# Names load from their module on first use: importing the package is free, and the views
# (matplotlib) load only when a plot is asked for.
__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submod_attrs={
        "counters": [
            "CounterQuality", "CounterScan", "CounterSeries", "CounterSet", "REASON_FIRST", "REASON_IMPLAUSIBLE",
            "REASON_MIGRATION", "REASON_NOT_COUNTING", "REASON_RESET", "REASON_SLOW_READ", "derive_counters",
            "TSC_ESTIMATE_ROWS", "ThreadScan", "iter_counter_batches", "iter_counter_chunks", "read_counters",
            "scan_counters", "thread_rows", "unavailable_reason",
        ],
        "latency": [
            "latency_ns", "overruns_from_expected", "period_error_ns", "period_ns", "require_wakeups", "seq_gaps",
            "tsc_latency_ns", "tsc_period_ns",
        ],
        "series": ["pooled_latency", "read_thread_series"],
        "split": ["HRTIMER_WAKEUP", "LatencySplit", "SPLIT_SOURCES", "SplitSummary", "TIMER_VECTOR", "WakeMarks",
                  "summarize_splits"],
        "text": ["trace_attribution_text"],
        "trace": [
            "CLASS_OF_KIND", "Cause", "CauseStat", "Contribution", "PRESENT_SHARE", "STATUS_ATTRIBUTED",
            "STATUS_INCOMPLETE", "STATUS_UNTRACED", "SpikeAttribution", "TraceAttribution", "attribute_spikes",
            "command_of", "held_by_meaning",
        ],
    },
)
