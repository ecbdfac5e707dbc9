"""The names of the formats jitterscope reads and writes, in a module that imports nothing.

The CLI offers them as choices before anything heavy is imported; the importer
and exporter registries are tested to list exactly these.
"""

IMPORT_FORMATS: tuple[str, ...] = (
    "cyclictest-verbose", "cyclictest-histogram", "cyclictest-json", "cyclictest-quiet",
    "jitterdebugger-samples", "jitterdebugger-results", "jitterdebugger-stdout",
    "oslat", "oslat-json", "rtla-timerlat-hist", "periodic-timer",
)
"""Formats :func:`jitterscope.io.import_files` turns into a dataset (turbostat attaches to one instead)."""

TRACE_FORMATS: tuple[str, ...] = ("ftrace", "trace-cmd-report")
"""Kernel trace text that attaches to a dataset as its events table (``import TRACE --onto DATASET``)."""

EXPORT_FORMATS: tuple[str, ...] = ("csv", "rt-tests-json", "hgrm")
"""Formats :func:`jitterscope.io.export_dataset` writes."""

EVENT_EXPORT_FORMATS: tuple[str, ...] = ("perfetto",)
"""Formats that write one event's window (``export --event N``): :func:`jitterscope.io.export_event_perfetto`."""
