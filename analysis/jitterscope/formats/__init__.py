"""Other formats in and out: :mod:`.importers` (cyclictest, jitterdebugger, oslat, rtla,
periodic_timer, turbostat), :mod:`.export` (CSV, rt-tests JSON, HdrHistogram), :mod:`.pack`
(one sorted, zstd-compressed, checksummed file).
"""

import lazy_loader as _lazy

# Names load from their module on first use: importing the package is free, and the views
# (matplotlib) load only when a plot is asked for.
__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submod_attrs={
        "names": ["EXPORT_FORMATS", "IMPORT_FORMATS"],
        "export": ["export_dataset"],
        "importers": ["FORMATS", "detect", "import_files"],
        "importers.cyclictest_json": ["parse_cmdline"],
        "importers.cyclictest_verbose": ["reconstruct", "resolve_intervals"],
        "importers.turbostat": ["read_timeline", "read_turbostat"],
        "pack": ["anonymize_metadata", "content_sha256", "pack_dataset", "sort_keys", "verify_pack"],
    },
)
