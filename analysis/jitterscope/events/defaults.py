"""Defaults of event detection, in a module that imports nothing (the CLI's --help shows them)."""

ROBUST_SD = 10.0
"""Without ``--threshold``, a wake-up is late when its latency exceeds median + ROBUST_SD · 1.4826 · MAD."""

MIN_EXCESS_NS = 5_000
"""... and at least median + this (a constant or very tight base latency has a MAD near 0)."""

TRANSITION_WINDOW = 2
"""A frequency transition within ± this many wake-ups of an event's wake-ups is evidence for it."""

IDLE_C0_RATIO = 0.25
"""An event starts with an idle exit when the C0 residency of the interval before its first wake-up is below
this fraction of the thread's median C0 residency (MPERF advances only in C0)."""

LEVELS = ((100_000, "100 µs"), (1_000_000, "1 ms"))
"""Latency levels (ns, label) whose event counts and rates the findings report; one interval is added."""

MAX_DEFAULT_THRESHOLD_NS = 100_000
"""The default threshold is at most the lowest level, so the counts above 100 µs are complete."""

DISPLAY_EVENTS = 20_000
"""The event raster draws at most this many marks: every event up to it, else the largest peak of each run of k
consecutive events (850,000 marks took 150 s to write into the PDF at 10^7 wake-ups; the figure says so)."""

MAX_DEFAULT_LATE = 100_000
"""Without ``--threshold``, at most this many wake-ups may be late: when the robust rule's threshold is exceeded
by more (a body mode such as idle exits in one wake-up of ten is not a spike), the threshold rises to the level
that many exceed, and the rule says so.  It also bounds the events' memory (one record per event) whatever the
dataset's size."""
