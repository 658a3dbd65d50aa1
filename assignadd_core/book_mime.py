"""myst-nb plugin (entry point `myst_nb.mime_renderers`, see pyproject.toml): the book does not render the
plotly mime bundle of a figure output.

Each figure output carries `text/html` (what the book shows: a div and a script, plotly.js loaded once by
the page) and `application/vnd.plotly.v1+json` (what JupyterLab and VS Code draw; see
`plots.BookRenderer`). myst-nb turns every mime type of an output into document nodes before it picks one
by priority, and warns about a type it does not know, which fails the book's `-W` build; this plugin
takes the plotly type, renders nothing for it and gives it no priority, so the HTML is picked. Kept free
of heavy imports: Sphinx loads it.
"""
from __future__ import annotations

PLOTLY_MIME = "application/vnd.plotly.v1+json"


class PlotlyJsonForJupyterOnly:
    mime_priority_overrides = [("*", PLOTLY_MIME, None)]

    @staticmethod
    def handle_mime(renderer, data, inline):
        return [] if data.mime_type == PLOTLY_MIME else None
