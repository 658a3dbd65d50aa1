"""How the book's pages get their figures: a myst-nb plugin and a Sphinx extension, both loaded by the book build.

* myst-nb plugin (entry point `myst_nb.mime_renderers`, see pyproject.toml): the book does not render the plotly mime
  bundle of a figure output. Each figure output carries `text/html` (what the book shows: a div and a script, plotly.js
  loaded by the page) and `application/vnd.plotly.v1+json` (what JupyterLab and VS Code draw; see
  `plots.BookRenderer`). myst-nb turns every mime type of an output into document nodes before it picks one by
  priority, and warns about a type it does not know, which fails the book's `-W` build; this plugin takes the plotly
  type, renders nothing for it and gives it no priority, so the HTML is picked.
* Sphinx extension (`setup`, listed in `_config.yml`): plotly.js (4.8 MB) and figure_fit.js are loaded only by the
  pages that hold a figure, deferred, so that they never hold up the page's first paint; the figures' own scripts
  (which call `Plotly.newPlot` where they stand in the page) wait for the document to be parsed, which is when a
  deferred script has run.

Kept free of heavy imports: Sphinx loads it.
"""
from __future__ import annotations

import re

PLOTLY_MIME = "application/vnd.plotly.v1+json"
FIGURE_MARK = 'class="plotly-graph-div"'
FIGURE_SCRIPTS = ("plotly.min.js", "figure_fit.js")  # in book/_static/; loaded, deferred, by the pages with a figure
# plotly's own script of a figure (pio.to_html): it draws the figure at once, so it needs plotly.js loaded before it
_FIGURE_SCRIPT = re.compile(r"<script(?: type=\"text/javascript\")?>(\s*window\.PLOTLYENV=window\.PLOTLYENV \|\| \{\};"
                            r".*?)</script>", re.DOTALL)
WAIT = 'document.addEventListener("DOMContentLoaded", function () {'


class PlotlyJsonForJupyterOnly:
    mime_priority_overrides = [("*", PLOTLY_MIME, None)]

    @staticmethod
    def handle_mime(renderer, data, inline):
        return [] if data.mime_type == PLOTLY_MIME else None


def deferred_figures(body: str) -> str:
    """The page's HTML with each figure's script run once the document is parsed (after the deferred plotly.js)."""
    return _FIGURE_SCRIPT.sub(lambda m: f"<script>{WAIT}{m.group(1)}}});</script>", body)


def has_figure(body: str) -> bool:
    return FIGURE_MARK in body


def figure_scripts(app, pagename, templatename, context, doctree) -> None:
    """`html-page-context`: a page with a figure loads FIGURE_SCRIPTS (deferred) and waits for them; others load
    neither."""
    body = context.get("body") or ""
    if not has_figure(body):
        return
    context["body"] = deferred_figures(body)
    for name in FIGURE_SCRIPTS:
        app.add_js_file(name, loading_method="defer")  # called here, Sphinx adds it to this page only


def setup(app):
    app.connect("html-page-context", figure_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
