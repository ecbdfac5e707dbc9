"""Power management: frequency transitions, SMIs and idle depth against latency
(the ``correlate`` command, the report's power section), and the turbostat timeline.

Compute: :mod:`.cpufreq`, :mod:`.association`, :mod:`.correlate`, :mod:`.stream` (the streaming,
mergeable accumulators correlate runs on: bounded memory at any size), :mod:`.turbostat`.
Views: :mod:`.plots` (matplotlib, loaded on first use), :mod:`.tables`.
"""

import lazy_loader as _lazy

# Names load from their module on first use: importing the package is free, and the views
# (matplotlib) load only when a plot is asked for.
__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submod_attrs={
        "defaults": ["DEFAULT_C0_EDGES", "DEFAULT_MIN_DWELL", "DEFAULT_THRESHOLD"],
        "association": [
            "RiskRatio", "detectable_ratio", "event_average", "event_average_from_sums", "event_sums", "holm",
            "lagged_correlation", "rank_test", "rank_test_binned", "risk_ratio",
        ],
        "correlate": [
            "Correlation", "SMI", "TRANSITION", "correlate", "correlate_dataset",
            "default_threshold",
        ],
        "cpufreq": [
            "TransitionDetector", "analyse_frequency", "check_claimed", "claim_check", "claimed_hz",
            "detect_transitions", "time_in_frequency",
        ],
        "stream": [
            "DISPLAY_ROWS", "EVENT_BLOCK_ROWS", "ConditionClasses", "ConditionCounts", "CounterProfile", "DisplayRows",
            "EventBlocks", "LaggedRanks", "RankSample", "SmiCounts", "ThreadFacts",
        ],
        "plots": [
            "close_up_window", "plot_counter_hexbin", "plot_event_average", "plot_frequency_timeline",
            "plot_frequency_zoom", "plot_lagged_correlation",
        ],
        "tables": [
            "claims_table", "correlation_text", "event_table", "condition_tests_table", "time_in_frequency_table",
            "verdict_table",
        ],
        "turbostat": ["TimelineStream", "decode_timeline", "join_timeline", "overlap_note", "timeline_counters",
                      "wall_clock_ns"],
    },
)
