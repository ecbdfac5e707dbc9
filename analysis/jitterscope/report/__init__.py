"""The PDF report: :func:`write_report`, the section registry and the sections
(:mod:`.sections`); :mod:`.methods`, the methods paragraph of a dataset.  See :mod:`.build` for how to add a section.
"""

import lazy_loader as _lazy

# Names load from their module on first use: importing the package is free, and the views
# (matplotlib) load only when a plot is asked for.
__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submod_attrs={
        "build": ["register_section", "write_report"],
        "methods": ["Sentence", "dataset_methods", "methods_latex", "methods_sentences", "methods_text"],
        "findings": ["FlagCheck", "RedFlag", "configuration_flags", "next_steps", "parse_cpu_list"],
        "sections.planted": ["planted_table"],
        "sections.provenance": ["simulation_spec_table"],
    },
)
