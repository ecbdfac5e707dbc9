"""Rendering shared by every report: :mod:`.table` (the Table and its text, CSV, JSON and
LaTeX writers), :mod:`.style` (plot style, colours, note pages; matplotlib) and
:mod:`.pages` (PDF pages and page helpers; matplotlib) and :mod:`.paper` (figures refitted to a
journal's column or page width) and :mod:`.layout` (the text layout check of a drawn figure) and
:mod:`.captions` (its units, n and empty-panel notes).
"""

import lazy_loader as _lazy

# Names load from their module on first use: importing the package is free, and the views
# (matplotlib) load only when a plot is asked for.
__getattr__, __dir__, __all__ = _lazy.attach(
    __name__,
    submod_attrs={
        "captions": ["caption_problems", "figure_titles", "has_data"],
        "layout": ["MAX_LEGEND_ENTRIES", "MAX_TITLE_LINES", "data_covers", "layout_problems", "legend_off_data",
                   "legends_off_data", "long_titles", "text_boxes", "tidy_layout"],
        "paper": ["FIGURE_WIDTHS_IN", "PNG_DPI", "fit_for_paper"],
        "pages": [
            "CHARS_PER_LINE", "LINES_PER_PAGE", "PAGE_SIZE_IN", "Page", "REPORT_RC", "new_page", "note_page",
            "pdf_document", "source_date", "text_pages", "write_pdf",
        ],
        "style": [
            "capped_legend", "colour", "linear_then_log_axis", "literal_text", "major_labels_only", "plain_log_axis",
            "plot_envelope", "plot_note",
            "plot_text_page", "stairs", "VERDICT_STYLES", "VerdictStyle", "verdict_label", "verdict_style",
            "EMPTY_NOTE_GID", "empty_panel_note", "OKABE_ITO", "LINE_STYLES",
        ],
        "table": [
            "P_VALUE", "tables_text",
            "Table", "format_cell", "key_value_table", "latex_escape", "text_header_lines", "to_csv", "to_json_text",
            "to_latex", "to_text", "LATEX_PREAMBLE", "latex_breakable",
        ],
    },
)
