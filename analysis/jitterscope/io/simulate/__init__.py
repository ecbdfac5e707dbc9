"""Synthetic datasets with planted, known effects (ground truth in the metadata).

Modules: :mod:`.simulation` (spec, generator, writer), :mod:`.effects` (what can be
planted), :mod:`.power` (the power-management stories), :mod:`.poll` (busy-poll datasets, kind ``poll``).
"""

import lazy_loader as _lazy

# Names load from their module on first use: importing the package is free, and the views
# (matplotlib) load only when a plot is asked for.
__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submod_attrs={
        "effects": [
            "Drops", "Effect", "IdleStates", "PStates", "PeriodicDisturbance", "SMIs", "SharedStalls", "Stalls",
        ],
        "poll": ["PeriodicIrq", "PollSpec", "PollSpecError", "poll_spec_from_options",
                 "simulate_poll"],
        "power": ["simulate_story"],
        "simulation": [
            "BaseLatency", "SimulationSpec", "SpecError", "load_spec", "simulate", "spec_from_options",
            "write_simulation",
        ],
    },
)
