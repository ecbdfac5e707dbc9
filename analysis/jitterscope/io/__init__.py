"""Datasets in and out: every way a dataset is made, and every way one leaves jitterscope.

Sources: :mod:`.capture` (finding and running the native ``jitterscope-capture``),
:mod:`.importers` (cyclictest, jitterdebugger, oslat, rtla, periodic_timer; turbostat as
a timeline; ftrace and trace-cmd report text as an events table), :mod:`.simulate` (synthetic
datasets with planted, known effects).
Sinks: :mod:`.export` (CSV, rt-tests JSON, HdrHistogram), :mod:`.perfetto` (one event's window as Trace Event
Format JSON for ui.perfetto.dev), :mod:`.pack` (one sorted,
zstd-compressed, checksummed file).  :mod:`.names` lists the format names, importing nothing.
"""

import lazy_loader as _lazy

# Names load from their module on first use: importing the package is free.
__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submod_attrs={
        "capture": ["capture_binary", "capture_dataset", "demo_output_dir", "realtime_refusal", "run_capture"],
        "export": ["export_dataset"],
        "perfetto": ["DEFAULT_MARGIN_NS", "PerfettoExport", "export_event_perfetto", "track_of"],
        "importers": ["FORMATS", "ImportedDataset", "detect", "import_files", "import_to_dataset"],
        "importers.cyclictest_json": ["parse_cmdline"],
        "importers.cyclictest_verbose": ["reconstruct", "resolve_intervals"],
        "importers.oslat_poll": ["import_oslat_poll"],
        "importers.rtla_osnoise": ["import_as_poll", "import_rtla_osnoise_poll"],
        "importers.ftrace": ["check_alignment", "read_trace_text", "sniff_trace", "with_source"],
        "importers.turbostat": ["read_timeline", "read_turbostat"],
        "names": ["EVENT_EXPORT_FORMATS", "EXPORT_FORMATS", "IMPORT_FORMATS", "TRACE_FORMATS"],
        "pack": ["anonymize_metadata", "content_sha256", "pack_dataset", "sort_keys", "verify_pack"],
        "simulate.effects": [
            "Drops", "Effect", "IdleStates", "PStates", "PeriodicDisturbance", "SMIs", "SharedStalls", "Stalls",
            "TransitionSMIs",
        ],
        "simulate.poll": ["PeriodicIrq", "PollSpec", "PollSpecError", "poll_spec_from_options",
                          "simulate_poll"],
        "simulate.power": ["simulate_story"],
        "simulate.recovery": [
            "PlantedRecovery", "PlantedRow", "RecordedGaps", "planted_recovery", "recorded_gaps", "recover_planted",
        ],
        "simulate.simulation": [
            "BaseLatency", "SimulationSpec", "SpecError", "load_spec", "simulate", "spec_from_options",
            "write_simulation",
        ],
    },
)
