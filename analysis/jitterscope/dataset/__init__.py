"""The dataset: the contract (schema, metadata), reading and writing files, invariants, validation.

Modules: :mod:`.schema` (columns and version), :mod:`.metadata` (the metadata document),
:mod:`.files` (open, iterate, write), :mod:`.invariants` and :mod:`.validate` (the contract
check), :mod:`.atomic` (write-to-temporary-then-rename), :mod:`.jsonvalue` (every JSON value read from a file,
bounded), :mod:`.poll` (kind ``poll``: the per-second table ``_poll/`` and its checks), :mod:`.trace`
(the kernel events table ``_trace/part-NNNNN.parquet`` inside a dataset directory).
"""

import lazy_loader as _lazy

# Names load from their module on first use: importing the package is free, and the views
# (matplotlib) load only when a plot is asked for.
__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submod_attrs={
        "atomic": ["check_output", "write_atomically", "write_directory_atomically"],
        "files": [
            "Dataset", "DatasetStream", "column_values", "iter_thread_batches", "open_dataset", "stream_dataset",
            "write_dataset",
        ],
        "jsonvalue": ["MAX_JSON_DEPTH", "json_depth", "load_json"],
        "metadata": ["Metadata", "ThreadInfo"],
        "poll": ["content_sha256", "pack_poll_windows", "poll_edges", "poll_window_parts", "read_poll_table",
                 "read_poll_windows", "write_poll_dataset"],
        "schema": [
            "COUNTER_COLUMNS", "POLL_COLUMNS", "POLL_DIR", "POLL_WINDOW_COLUMNS", "SAMPLE_COLUMNS",
            "poll_bucket_column", "poll_histogram_edges", "poll_schema", "poll_window_schema", "sample_schema",
        ],
        "trace": [
            "TRACE_COLUMNS", "TRACE_DIR", "TRACE_EVENTS", "TRACE_FILE", "TraceEvents", "TraceTable",
            "WINDOW_BACKGROUND", "WINDOW_INCOMPLETE", "WINDOW_MARKER", "WINDOW_SPIKE",
            "events_from_rows", "open_trace", "read_trace_events", "trace_events_path", "trace_part_paths",
            "trace_schema", "write_trace_events",
        ],
        "validate": ["validate_dataset"],
    },
)
