"""Comparing runs: quantile differences with block-bootstrap intervals, tests, verdicts
and the environment diff; groups of replicate runs by their between-run variation.

Compute: :mod:`.bootstrap`, :mod:`.episodes` (episodes of exceedances, structured block length),
:mod:`.groups` (replicates: a run is the unit), :mod:`.envdiff`, :mod:`.results` (shared results and helpers),
:mod:`.samples` (runs with samples; in memory), :mod:`.stream` (the streaming, mergeable accumulator),
:mod:`.streamed` (runs with samples, streamed: what ``compare_runs`` does), :mod:`.binned` (histogram runs),
:mod:`.pvalues` (scipy.stats' p-values computed from scipy.special, without importing scipy.stats).
Views: :mod:`.plots`, :mod:`.pdf` (matplotlib, loaded on first use), :mod:`.tables`, :mod:`.headline` (the
sentences a comparison leads with).
"""

import lazy_loader as _lazy

# Names load from their module on first use: importing the package is free, and the views
# (matplotlib) load only when a plot is asked for.
__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submod_attrs={
        "binned": ["BinnedRun", "compare_binned", "compare_histograms"],
        "bootstrap": ["BlockLength", "block_indices", "bootstrap_series", "optimal_block_length"],
        "envdiff": ["diff_environments", "diff_groups", "flatten_metadata", "per_run_key"],
        "episodes": ["EpisodeCheck", "Exceedances", "episode_test", "exceedances_of", "structured_block_length"],
        "groups": ["GroupComparison", "compare_groups", "group_change", "group_changes", "metric_confidence"],
        "headline": ["environment_causes", "group_headline", "pair_headline", "tail_blind_tests",
                     "unique_differences", "verdict_sentence"],
        "pdf": ["write_compare_report", "write_group_report"],
        "plots": [
            "plot_compare_ccdf", "plot_compare_histograms", "plot_compare_percentiles", "plot_compare_qq",
            "plot_verdicts",
        ],
        # scipy.stats' p-values from scipy.special, without scipy.stats' import (events' halves test uses one too)
        "pvalues": ["binomtest_pvalue", "kruskal_pvalue", "kstwo_sf", "kstwobign_sf", "norm_ppf", "norm_sf",
                    "poisson_sf"],
        "samples": ["compare_runs", "compare_samples"],
        "stream": ["CompareStream", "StreamedRun", "grid_keys", "key_bounds"],
        "streamed": ["METHODS", "compare_streams", "histogram_tests", "prefix_block_length", "stream_run"],
        "results": ["TAIL_FIT_TOP", "VERDICTS", "MetricChange", "largest", "quantile_change", "tail_change"],
        "tables": [
            "comparison_tables", "comparison_text", "group_tables", "group_text", "headline_table", "methods_table",
            "pair_table", "runs_table",
            "verdict_summary_table",
        ],
    },
)
