"""The exceptions users see.  Each message says what is wrong and what to do.

The CLI turns any :class:`JitterscopeError` into one line on stderr and exit
status 1; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class JitterscopeError(Exception):
    """Base of every error meant for the user."""


class DatasetError(JitterscopeError):
    """A dataset cannot be opened or read (missing, not Parquet, truncated)."""


class SchemaError(DatasetError):
    """A dataset opens but breaks the contract (columns, types, metadata, invariants)."""


class UnsupportedVersionError(SchemaError):
    """A dataset written by a newer jitterscope than this one."""


class UnknownFormatError(JitterscopeError):
    """An input file is of no format jitterscope can import."""


class ImportFormatError(JitterscopeError):
    """An input file claims a format but is corrupt; the message names the line or byte."""


class AnalysisError(JitterscopeError):
    """Input valid, but the analysis cannot give a meaningful answer (too short, degenerate)."""


class CaptureError(JitterscopeError):
    """The capture binary could not be found or run."""
