"""Experiments: a capture run over a plan of machine settings and loads, randomised in blocks with replicates,
the machine put back after every run and at every exit, and the comparison of the conditions.

Compute: :mod:`.plan` (the TOML plan, its check against the machine, the design), :mod:`.knobs` (the machine's
knobs: where each lives, which levels it takes), :mod:`.journal` (every change fsync'd before it is made,
restore, processes we started), :mod:`.loads` (load processes), :mod:`.runner` (``sweep run``),
:mod:`.analyze` and :mod:`.results` (per-run metrics, conditions, factor effects with between-run intervals),
:mod:`.simulate` (a sweep with planted effects).  Views: :mod:`.plots`, :mod:`.pdf` (matplotlib, loaded on
first use), :mod:`.tables`.
"""

import lazy_loader as _lazy

__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submod_attrs={
        "analyze": [
            "EVENT_THRESHOLD_NS", "analyze_sweep", "compare_conditions", "histogram_metrics", "holm", "run_events",
            "run_histogram",
        ],
        "journal": [
            "FAULT_ENV", "FAULT_STEPS", "JOURNAL", "Journal", "RestoreError", "lock_machine", "lock_path",
            "read_journal", "restore_directory", "unlock_machine",
        ],
        "knobs": ["KNOBS", "KnobError", "Machine", "Setting", "knob_settings", "parse_cpuset"],
        "loads": ["Started", "start_process", "stop_process"],
        "runner": ["MANIFEST", "SweepInterrupted", "SweepResult", "annotate_dataset", "run_sweep"],
        "results": [
            "METRICS", "VERDICTS", "VERDICT_EFFECT", "VERDICT_INCONCLUSIVE", "VERDICT_NONE", "ConditionStats",
            "Effect", "Estimate", "RunMetrics", "SweepAnalysis",
        ],
        "tables": [
            "conditions_table", "effects_table", "events_table", "headline", "latex_table", "methods_paragraph",
            "runs_table",
            "sweep_text",
        ],
        "plots": ["plot_effects", "plot_sweep_ccdf"],
        "pdf": ["write_sweep_figures", "write_sweep_report"],
        "simulate": ["simulated_sweep_runs", "write_simulated_sweep"],
        "plan": [
            "CAPTURE_OPTIONS", "Condition", "Plan", "PlanCheck", "PlanError", "PlannedRun", "check_plan",
            "check_text", "read_plan",
        ],
    },
)
