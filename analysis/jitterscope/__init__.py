"""jitterscope: timer wake-up latency and CPU frequency behaviour, captured and analysed.

Data flows one way: capture -> dataset -> derive -> accumulators -> results ->
figures/tables -> reports.  See docs/dataset-format.md for the dataset contract.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("jitterscope")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"
