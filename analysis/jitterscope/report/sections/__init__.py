"""Report sections: one module per topic, each registering with ``report.register_section``.

A section module comes after its analysis and its plots in the data flow, so it
may import both (and :mod:`jitterscope.report`); nothing imports a section
module except the report, through ``report.SECTION_MODULES``.  See the
docstring of :mod:`jitterscope.report` for how to add one.
"""
