"""Tails: peaks-over-threshold generalised Pareto fits with their assumptions checked.

Compute: :mod:`.gpd`, :mod:`.accumulator`, :mod:`.checks`, :mod:`.rates`, :mod:`.fit`.
Views: :mod:`.plots` (matplotlib, loaded on first use), :mod:`.tables`.
"""

import lazy_loader as _lazy

# Names load from their module on first use: importing the package is free, and the views
# (matplotlib) load only when a plot is asked for.
__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submodules=["gpd"],
    submod_attrs={
        "accumulator": ["TOP_K", "TailAccumulator", "block_size_for", "spread", "summarize_series"],
        "fit": [
            "EVT_PROMISE", "TailFit", "TailsReport", "analyze_tails", "choose_threshold", "clock_resolution",
            "fit_summary", "fit_tail", "shape_text", "XI_MAX", "QQ_MIN", "MODEL_CHECKS",
        ],
        "rates": ["DECLUSTER_GAP", "RATE_LEVELS_NS", "Clusters", "EventRate", "cluster_starts", "clustered_interval",
                  "count_events",
                  "decluster", "event_rates", "intervals_estimator", "poisson_interval"],
        "plots": ["plot_mean_residual_life", "plot_parameter_stability", "plot_return_levels", "plot_tail_qq"],
        "tables": [
            "tail_checks_table", "tail_events_table", "tail_fit_table", "tail_levels_table", "tails_tables",
            "tails_text",
        ],
    },
)
