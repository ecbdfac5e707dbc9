"""A fleet of captures: per-dataset streaming summaries as Dask tasks, merged per group, with each
machine's history (regressions flagged by the compare machinery) and the environment keys that
separate the worst tails from the best.

Compute: :mod:`.keys` (grouping keys from the metadata), :mod:`.tasks` (one dataset's summary,
the unit of work), :mod:`.analyze` (groups, histories, key table), :mod:`.engine` (Dask),
:mod:`.results`, :mod:`.simulate` (a fleet with planted answers), :mod:`.poll` (a fleet of busy-poll runs).
Views: :mod:`.plots`, :mod:`.pdf` (matplotlib, loaded on first use), :mod:`.tables`.
"""

import lazy_loader as _lazy

# Names load from their module on first use: importing the package is free, and Dask loads only
# when a fleet runs.
__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submod_attrs={
        "analyze": ["analyze_fleet", "compare_consecutive", "merge_group", "quantile_intervals"],
        "engine": ["SERIAL", "SINGLE_CORE_ENV", "local_cluster", "run_fleet"],
        "keys": ["GroupKey", "cmdline_parameters", "configuration_keys", "governor_of", "parse_group_key"],
        "pdf": ["plot_poll_ranking", "poll_fleet_pages", "write_fleet_report"],
        "poll": ["PollFleet", "PollGroupStats", "PollRunRecord", "analyze_poll_fleet", "summarize_poll_run"],
        "plots": ["plot_fleet_over_time", "plot_fleet_ranking", "plot_key_separation", "plot_machine_history"],
        "results": [
            "Fleet", "GroupStats", "HistoryPoint", "KeySeparation", "KeyValueStats", "MachineHistory",
            "QuantileEstimate", "RunChange",
        ],
        "simulate": ["SimulatedFleet", "write_simulated_fleet"],
        "tables": ["fleet_tables", "fleet_text", "history_table", "key_table", "poll_fleet_text", "ranking_table",
                   "skipped_table"],
        "tasks": ["RunRecord", "SkippedDataset", "summarize_run"],
    },
)
