"""jitterscope: timer wake-up latency and CPU frequency behaviour, captured and analysed.

Data flows one way: capture -> dataset -> derive -> accumulators -> results ->
figures/tables -> reports.  See docs/dataset-format.md for the dataset contract.
Each feature is a package whose ``__init__`` is its public face: dataset,
derive, summary, spectrum, power, tails, compare, simulate, formats, render,
report; ``format`` writes numbers, ``errors`` names what goes wrong, ``capture``
runs the native binary, ``cli`` is the ``jitterscope`` command.
"""

# The one place the version is written: pyproject.toml reads it from here (scikit-build-core's regex
# provider), so `jitterscope --version` needs no importlib.metadata look-up at start-up.
__version__ = "0.1.0"
