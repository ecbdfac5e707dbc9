"""Defaults of the power-management analysis, in a module that imports nothing (the CLI's --help shows them)."""

DEFAULT_THRESHOLD = 0.05
"""Relative step between two levels that counts as a transition (5 %)."""

DEFAULT_MIN_DWELL = 3
"""Wake-ups a level must be held to count as a level."""

DEFAULT_C0_EDGES = (0.0, 0.05, 0.5, 1.0)
"""C0-residency bin edges (fractions of the interval spent awake)."""
