"""Plotly set-up and figure builders shared by the chapters.

Figures are emitted as HTML without plotly.js (the book ships one copy of plotly.min.js in its
_static folder), so pages stay small and render offline.
"""
from __future__ import annotations

import plotly.io as pio

BOOK_RENDERER = "book"


def setup_plotly() -> None:
    """Register and select the 'book' renderer: a <div> + script per figure, plotly.js loaded by the page."""
    from plotly.io._base_renderers import HtmlRenderer

    if BOOK_RENDERER not in pio.renderers:
        pio.renderers[BOOK_RENDERER] = HtmlRenderer(connected=False, global_init=False, full_html=False,
                                                    include_plotlyjs=False)
    pio.renderers.default = BOOK_RENDERER
    pio.templates.default = "plotly_white"
