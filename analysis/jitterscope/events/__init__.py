"""Latency spike events: a stall seen by one or several CPUs, its catch-up wake-ups and missed periods as one
event, with its time, span, CPUs, peak and the causes the data supports.

Compute: :mod:`.detect` (per-thread episode accumulators, the merge into events), :mod:`.causes`
(cause sources: counters, turbostat, steal; kernel-trace sources plug in), :mod:`.analyze` (``find_events``),
:mod:`.groups` (events by first cause: the top causes and "other"),
:mod:`.results`, :mod:`.defaults`.  Views: :mod:`.plots` (matplotlib, loaded on first use),
:mod:`.tables`, :mod:`.text`.
"""

import lazy_loader as _lazy

# Names load from their module on first use: importing the package is free, and the views
# (matplotlib) load only when a plot is asked for.
__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submod_attrs={
        "analyze": ["default_threshold_ns", "find_events", "poisson_interval", "threads_share_a_clock"],
        "causes": [
            "COUNTERS", "CauseFinder", "CauseSource", "StealSeries", "counter_causes", "decode_steal",
            "steal_by_chance", "steal_source", "trace_source", "turbostat_source",
        ],
        "defaults": [
            "DISPLAY_EVENTS", "IDLE_C0_RATIO", "LEVELS", "MAX_DEFAULT_THRESHOLD_NS", "MIN_EXCESS_NS", "ROBUST_SD",
            "TRANSITION_WINDOW",
        ],
        "detect": ["ThreadEpisodes", "merge_episodes"],
        "groups": ["CauseGroup", "MAX_GROUPS", "display_name", "group_causes"],
        "plots": ["plot_events"],
        "results": [
            "CAUSE_KINDS", "Cause", "Episode", "Event", "Events", "HYPERVISOR", "HalvesTest", "IDLE_EXIT",
            "RateInterval", "SMI", "TRACE_INCOMPLETE", "TRACE_UNEXPLAINED", "TRANSITION", "TURBOSTAT", "UNEXPLAINED",
            "cause_class",
        ],
        "tables": ["event_causes_text", "event_rates_table", "event_split_text", "events_table", "rates_basis"],
        "text": ["format_events"],
    },
)
