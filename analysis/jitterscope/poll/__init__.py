"""Busy-poll noise: the analyses of poll datasets (kind ``poll``: every interruption of a polling loop).

Modules, in the order data flows through them: :mod:`.read` (the rows per thread and the per-second table
``_poll/part-*.parquet``), :mod:`.summary` (interruptions per second by size class, the worst one, noise and
the CPU available as osnoise reports it), :mod:`.causes` (each gap explained from the kernel trace; RT
throttling; SMIs; hardware/hypervisor), :mod:`.events` (gaps of several CPUs at once as one event),
:mod:`.spectrum` (periodic sources: the tick, periodic IRQs, RT throttling's 1 Hz), :mod:`.compare` (runs
compared per CPU: interruptions per second by size class, noise, the worst one; verdicts), :mod:`.tails` (the
extreme-value fit of interruption lengths).
Views: :mod:`.text` (the findings sentences and tables), :mod:`.compare_tables`, :mod:`.plots` and :mod:`.pdf`
(matplotlib, loaded on first use).
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submod_attrs={
        "compare": ["PollChange", "PollComparison", "PollPair", "PollRun", "compare_poll", "compare_poll_groups"],
        "compare_tables": ["poll_compare_headlines", "poll_compare_tables", "poll_compare_text"],
        "causes": ["CauseTotal", "HARDWARE", "INCOMPLETE", "NOT_TRACED", "PollCauses", "RT_THROTTLING",
                   "explain_interruptions", "throttling_rows"],
        "events": ["PollEvent", "PollEvents", "find_poll_events"],
        "pdf": ["plot_poll_changes", "poll_compare_pages", "write_poll_compare_report"],
        "plots": ["plot_class_rates", "plot_gap_histogram", "plot_interruptions"],
        "read": ["PollData", "PollThread", "read_poll"],
        "spectrum": ["PollLine", "PollSpectrum", "poll_spectrum"],
        "summary": ["PollSummary", "SizeClass", "ThreadNoise", "size_classes", "summarize_poll", "wall_clock_ns"],
        "tails": ["POLL_PROMISE", "analyze_poll_tails"],
        "text": ["PollFindings", "format_gap", "poll_findings", "poll_tables", "poll_text"],
    },
)
