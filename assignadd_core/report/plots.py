"""Plotly set-up and figure builders shared by the chapters.

Each figure is one output with two representations (`BookRenderer`):

* `text/html`: a div and the script that draws it, without plotly.js and without MathJax. The book
  loads one copy of plotly.min.js (and of MathJax) per page from its _static folder, so pages stay small
  and render offline; the book renders this one (`book_mime`: it skips the other).
* `application/vnd.plotly.v1+json`: the figure itself, which JupyterLab (plotly's bundled extension)
  and VS Code draw natively, so a re-executed chapter opened there shows its figures; the HTML alone
  would be blank there ("Plotly is not defined").
"""
from __future__ import annotations

import hashlib
import itertools
import json
import html
import re

import plotly.io as pio
from plotly.io._base_renderers import MimetypeRenderer
import plotly.graph_objects as go
from plotly.subplots import make_subplots
import numpy as np

from . import palette
from ..analysis.sweep_records import DONE, finished
from ..book_mime import PLOTLY_MIME
from ..core.data import POOL_NAMES, VAR_RESTRICTED
from .names import MEASURE_LABELS, POOL_LABELS, label  # noqa: F401  (the chapters' names: plots.POOL_LABELS)
from .palette import GREY, INK, LIGHT, PAPER, PARTS, identity
from .names import display_text
from ..measure.measures import MEASURE_NAMES
from ..analysis.thresholds import mean_curve
from ..analysis.composition import auc, roc_curve

BOOK_RENDERER = "book"
# Sized by its container; no zoom on the mouse wheel or a touch pad (the page scrolls instead); a short toolbar
# (download, zoom, pan, reset): the selection and hover-mode buttons are for data exploration, not reading.
FIGURE_CONFIG = {"responsive": True, "scrollZoom": False, "displaylogo": False,
                 "modeBarButtonsToRemove": ["select2d", "lasso2d", "autoScale2d", "toggleSpikelines",
                                            "hoverClosestCartesian", "hoverCompareCartesian"]}


class BookRenderer(MimetypeRenderer):
    """HTML for the book (no plotly.js, no MathJax) plus the plotly mime bundle for Jupyter frontends.

    The figure's div id is the figure's number in this kernel and a hash of its content (plotly's
    default is a random UUID), so re-executing a chapter with the same inputs writes the same bytes."""

    def __init__(self):
        self._shown = itertools.count(1)

    def to_mimebundle(self, fig_dict):
        figure = book_defaults(_rounded(json.loads(pio.to_json(fig_dict, validate=False, remove_uids=False))))
        number = next(self._shown)
        title = figure.setdefault("layout", {}).get("title", {})
        title = title if isinstance(title, dict) else {"text": str(title)}
        caption = f"Figure {number}." + (f" {title['text']}" if title.get("text") else "")
        if title.get("text"):  # figures are numbered in reading order within their chapter
            figure["layout"]["title"] = {**title, "text": caption}
        digest = hashlib.sha256(json.dumps(figure, sort_keys=True).encode()).hexdigest()[:12]
        # the book shows the title as a wrapped caption above the figure: a plotly title is one line, cut off
        # on a narrow screen; Jupyter (the plotly mime type) keeps it in the figure
        page = {**figure, "layout": {k: v for k, v in figure["layout"].items() if k != "title"}}
        page["layout"]["margin"] = {**page["layout"].get("margin", {}), "t": 30}
        html = pio.to_html(_column_width(page), config=FIGURE_CONFIG, include_plotlyjs=False,
                           include_mathjax=False, full_html=False, default_width="100%", default_height=525,
                           validate=False, div_id=f"figure-{number}-{digest}", auto_play=False)
        html = f'<p class="figure-caption"><strong>{html_escape(caption)}</strong></p>\n{html}'
        width = figure.get("layout", {}).get("width")
        if width:  # no wider than the figure was drawn for, and no wider than the page's text column
            html = f'<div class="book-figure" style="max-width:{int(width)}px">{html}</div>'
        return {PLOTLY_MIME: {**figure, "config": dict(FIGURE_CONFIG)}, "text/html": html}


def html_escape(text: str) -> str:
    return html.escape(str(text), quote=False)


FIGURE_DIGITS = 6  # significant digits of every number a figure stores: what every CPU reproduces, mostly


def _rounded(value):
    """The figure's numbers to FIGURE_DIGITS significant digits (figure data differed between CPUs in the 7th)."""
    if isinstance(value, float):
        return float(f"{value:.{FIGURE_DIGITS}g}")
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


def _axis_key(letter: str, name: str) -> str:
    """'x' -> 'xaxis', 'x2' -> 'xaxis2': a trace's axis name as its layout key."""
    return f"{letter}axis{name[1:]}"


def _display_names(figure: dict) -> None:
    """Display names for the code keys in trace names, the title, axis titles and annotations (subplot titles)."""
    for trace in figure.get("data", []):
        if isinstance(trace.get("name"), str):
            trace["name"] = display_text(trace["name"])
        for axis in ("x", "y"):  # categories on an axis are tick labels a reader sees
            values = trace.get(axis)
            if isinstance(values, (list, tuple)) and values and all(isinstance(v, str) for v in values):
                trace[axis] = [display_text(v) for v in values]
    layout = figure.get("layout", {})
    for key, value in layout.items():
        if key == "title" or key.startswith(("xaxis", "yaxis")):
            title = value.get("title") if key != "title" else value
            if isinstance(title, dict) and isinstance(title.get("text"), str):
                title["text"] = display_text(title["text"])
            for listed in ("ticktext", "categoryarray"):  # the same categories as the traces' (renamed above)
                if key != "title" and isinstance(value.get(listed), (list, tuple)):
                    value[listed] = [display_text(t) for t in value[listed]]
    for note in layout.get("annotations", []):
        if isinstance(note.get("text"), str):
            note["text"] = display_text(note["text"])


def book_defaults(figure: dict) -> dict:
    """What every figure of the book gets unless it says otherwise: a legend below the plot (a side legend
    squeezes the plot on a phone), a titled colour bar with room of its own, and hover labels that name the trace
    and format its numbers."""
    layout = figure.setdefault("layout", {})
    if "orientation" not in layout.get("legend", {}):
        layout["legend"] = {**layout.get("legend", {}), "orientation": "h", "yanchor": "top", "y": -0.18,
                            "x": 0, "xanchor": "left"}
        layout["margin"] = {**layout.get("margin", {}), "b": max(layout.get("margin", {}).get("b", 0), 90)}
    _display_names(figure)
    for trace in figure.get("data", []):
        kind = trace.get("type", "scatter")
        if kind in ("heatmap", "contour") and trace.get("showscale", True):
            bar = trace.setdefault("colorbar", {})
            bar.setdefault("title", {}).setdefault("text", "value")
            bar["title"].setdefault("side", "right")
            bar.setdefault("thickness", 12)
            x_domain = layout.get(_axis_key("x", trace.get("xaxis", "x")), {}).get("domain")
            y_domain = layout.get(_axis_key("y", trace.get("yaxis", "y")), {}).get("domain")
            if x_domain and x_domain[1] < 0.99:  # a panel's colour bar beside its own panel, not the figure's edge
                bar.setdefault("x", x_domain[1] + 0.005)
                bar.setdefault("xanchor", "left")
            if y_domain and (y_domain[1] - y_domain[0]) < 0.99:
                bar.setdefault("y", (y_domain[0] + y_domain[1]) / 2)
                bar.setdefault("len", y_domain[1] - y_domain[0])
        if kind in ("scatter", "scattergl", "bar") and "hovertemplate" not in trace:
            name = trace.get("name") or ""
            trace["hovertemplate"] = "%{x}: %{y:.4g}" + f"<extra>{html_escape(name)}</extra>"
    return figure


def _column_width(figure: dict) -> dict:
    """The figure for the book's HTML: without a fixed width, so that plotly sizes it to its container
    (`responsive`), which the renderer limits to the figure's own width; the height is kept."""
    layout = {k: v for k, v in figure.get("layout", {}).items() if k != "width"}
    return {**figure, "layout": {**layout, "autosize": True}}


def setup_plotly() -> None:
    """Register and select the 'book' renderer (`BookRenderer`) and the white template."""
    pio.renderers[BOOK_RENDERER] = BookRenderer()
    pio.renderers.default = BOOK_RENDERER
    pio.templates.default = "plotly_white"


# ------------------------------------------------------------------ task, model and training phases
def _pool_style(pool: str) -> dict:
    return palette.pool_style(pool)


def pair_map_figure(train_mask, title: str = "Training operand pairs"):
    """Heat map of which ordered pairs (n1, n2) are used in training (1, light grey) or held out (0, black); the
    colour bar names the two."""
    mask = train_mask.int().tolist()
    fig = go.Figure(go.Heatmap(z=mask, zmin=0, zmax=1, colorscale=[[0, INK], [0.5, INK], [0.5, LIGHT], [1, LIGHT]],
                               colorbar={"tickvals": [0.25, 0.75], "ticktext": ["held out", "training"],
                                         "title": {"text": "pair"}},
                               hovertemplate="n1=%{y}, n2=%{x}: %{z} (1 = training)<extra></extra>"))
    fig.update_layout(title=title, width=560, height=560, xaxis_title="right operand n2",
                      yaxis_title="left operand n1", yaxis_autorange="reversed")
    return fig


def var_pair_figure(kinds, var_names, title: str = "Variable pairs as 2-var query operands in training"):
    """kinds[i][j] in {0 same, 1 allowed, 2 one operand forbidden, 3 both forbidden} for lhs i, rhs j."""
    labels = ["same variable", "seen in training", "one operand in a new position", "both in new positions"]
    two_var = palette.QUERY_TYPE[2]  # the var-restricted kinds in the 2-var pools' colour, darker = more restricted
    colors = [palette.tint(LIGHT, 0.75), LIGHT, palette.tint(two_var, 0.55), two_var]
    scale = [[(i + d) / 4, c] for i, c in enumerate(colors) for d in (0, 1)]  # one flat band per kind
    text = [[labels[k] for k in row] for row in kinds]
    fig = go.Figure(go.Heatmap(z=kinds, x=list(var_names), y=list(var_names), zmin=-0.5, zmax=3.5,
                               colorscale=scale, text=text, hovertemplate="+ %{y} %{x}: %{text}<extra></extra>",
                               colorbar=dict(tickvals=[0, 1, 2, 3], ticktext=labels)))
    fig.update_layout(title=title, width=700, height=480, xaxis_title="right operand variable",
                      yaxis_title="left operand variable", yaxis_autorange="reversed")
    return fig


def type_mix_figure(measured: dict[str, float], expected: dict[str, float],
                    title: str = "Query-type mix of the training stream"):
    names = list(measured)
    colours = [palette.QUERY_TYPE[int(n[0])] if n[:1].isdigit() else INK for n in names]  # "1-var (left)": 1-var
    fig = go.Figure([go.Bar(name="measured from the generator", x=names, y=[measured[n] for n in names],
                            marker={"color": colours}),
                     go.Bar(name="expected from the row counts (the authors' rows, drawn uniformly)", x=names,
                            y=[expected.get(n) for n in names],
                            marker={"color": [palette.tint(c, 0.6) for c in colours], "pattern_shape": "/",
                                    "pattern_fgcolor": colours})])
    fig.update_layout(title=title, barmode="group", xaxis_title="query type", yaxis_title="share of training rows",
                      yaxis_tickformat=".0%", height=420)
    return fig


def pool_curves_figure(metrics, title: str, max_step: int | None = None):
    """The nine pool accuracies of one run against training step."""
    fig = go.Figure([go.Scatter(x=metrics["step"], y=metrics[p], name=POOL_LABELS[p], mode="lines",
                                line=_pool_style(p)) for p in POOL_NAMES])
    fig.update_layout(title=title, xaxis_title="training step", yaxis_title="accuracy", height=480,
                      yaxis_range=[-0.02, 1.02], hovermode="x unified")
    if max_step:
        fig.update_xaxes(range=[0, max_step])
    return fig


def pool_grid_figure(metrics_by_run: dict, title: str = "Pool accuracies of every run"):
    """3 × 3 panels (one per pool), one line per run."""
    fig = make_subplots(rows=3, cols=3, subplot_titles=[POOL_LABELS[p] for p in POOL_NAMES],
                        shared_xaxes=True, shared_yaxes=True, vertical_spacing=0.08, horizontal_spacing=0.04)
    for r, (name, metrics) in enumerate(metrics_by_run.items()):
        for i, pool in enumerate(POOL_NAMES):
            fig.add_trace(go.Scatter(x=metrics["step"], y=metrics[pool], name=name, legendgroup=name,
                                     showlegend=i == 0, mode="lines",
                                     line=dict(color=identity(r), width=1.5)),
                          row=i // 3 + 1, col=i % 3 + 1)
    fig.update_layout(title=title, height=720)
    fig.update_yaxes(range=[-0.02, 1.02])
    for col in (1, 2, 3):
        fig.update_xaxes(title_text="training step", row=3, col=col)
    for row in (1, 2, 3):
        fig.update_yaxes(title_text="accuracy", row=row, col=1)
    return fig


def measures_figure(metrics, phases: dict, paper_steps: dict | None = None, title: str = "Progress measures"):
    """The progress measures against step, detected phase steps as vertical lines, the paper's windows shaded."""
    fig = go.Figure()
    for name in MEASURE_NAMES:
        rows = metrics[["step", name]].dropna()
        fig.add_trace(go.Scatter(x=rows["step"], y=rows[name], name=MEASURE_LABELS.get(name, name), mode="lines",
                                 line=palette.measure_style(name)))
    for (lo, hi) in (paper_steps or {}).values():
        fig.add_vrect(x0=lo, x1=hi, fillcolor=PAPER, opacity=palette.BAND_OPACITY, line_width=0)
    for key, dash, side in (("addition", "dot", "top left"), ("jump", "dash", "top right"),
                            ("refinement", "dashdot", "top right")):  # ours: ink, each labelled
        if phases.get(key) is not None:
            fig.add_vline(x=phases[key], line_dash=dash, line_color=INK, line_width=1.2,
                          annotation_text=f"{key} {phases[key]:,}", annotation_position=side)
    fig.update_layout(title=title, xaxis_title="training step", yaxis_title="measure (fraction)", height=500,
                      yaxis_range=[-0.02, 1.08])
    return fig


def exact_figure(exact_by_run: dict[str, dict[str, float]], paper: dict[str, float],
                 title: str = "Exact-set accuracy at the end of training"):
    """Grouped bars: each run's accuracy on the exhaustive sets, the paper's number as a marker line."""
    if not exact_by_run:
        raise ValueError("exact_figure needs at least one run")
    sets = list(next(iter(exact_by_run.values())))
    fig = go.Figure([go.Bar(name=run, x=sets, y=[exact[s] for s in sets], marker_color=identity(i))
                     for i, (run, exact) in enumerate(exact_by_run.items())])
    for i, s in enumerate(sets):
        if s in paper:
            fig.add_shape(type="line", x0=i - 0.45, x1=i + 0.45, y0=paper[s], y1=paper[s],
                          line=dict(color=PAPER, dash="dash", width=2))
            fig.add_annotation(x=s, y=paper[s], text=f"paper {paper[s]:.1%}", showarrow=False, yshift=10)
    fig.update_layout(title=title, barmode="group", xaxis_title="exact set", yaxis_title="accuracy",
                      yaxis_range=[0, 1.08], height=420)
    return fig


# ------------------------------------------------------------------ data-threshold sweeps (chapter 08)
def _named_vlines(fig, marks) -> None:
    """Vertical lines named in the legend (`marks`: (x, name, line style)): a label beside a line on a phone-wide plot
    would stretch the axis."""
    for x, name, line in marks:
        fig.add_vline(x=x, line=line)
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=line, name=name, hoverinfo="skip"))


def sweep_figure(status, field: str, title: str, x_label: str, y_label: str, paper_value: float | None = None,
                 level: float | None = None, crossing=None, fit=None, extra_lines: dict | None = None):
    """Accuracy against a swept value, one line per seed; not-run and failed points are marked, never filled.

    `status`: `sweep.grid_status` frame (columns field, seed, status, value, reason); `crossing` and
    `fit`: `analysis.thresholds` results, drawn when given; `extra_lines`: {name: (x, y)} drawn as thin
    dashed context lines on the same axes (e.g. the share of pairs a 2-var rate covers).
    """


    fig = go.Figure()
    for i, (seed, rows) in enumerate(status.sort_values(field).groupby("seed")):
        y = rows["value"].where(rows["status"] == DONE)  # NaN breaks the line: gaps stay gaps
        fig.add_trace(go.Scatter(x=rows[field], y=y, mode="lines+markers", name=f"seed {seed}",
                                 connectgaps=False, line={"color": identity(i)}))
    done = finished(status)
    if done["seed"].nunique() > 1:  # the curve the crossing is read from
        values, means = mean_curve(done[field], done["value"])
        fig.add_trace(go.Scatter(x=values, y=means, mode="lines", name="mean over seeds",
                                 line={"color": INK, "width": 2.5}, opacity=0.6))
    for j, (name, (xs, ys)) in enumerate((extra_lines or {}).items()):
        fig.add_trace(go.Scatter(x=list(xs), y=list(ys), mode="lines", name=name,
                                 line={"color": identity(j + 6), "width": 1.5,
                                       "dash": ("dash", "dot", "dashdot")[j % 3]}))
    for state, symbol, color, name in (("pending", "circle-open", GREY, "not run yet"),
                                       ("error", "circle-x-open", GREY, "not run yet (last try errored)"),
                                       ("failed", "x", INK, "impossible config (failed)")):
        rows = status[status["status"] == state]
        if len(rows):
            fig.add_trace(go.Scatter(x=rows[field], y=np.zeros(len(rows)) - 0.04, mode="markers", name=name,
                                     marker={"symbol": symbol, "color": color, "size": 9},
                                     text=[f"seed {s}: {r or state}" for s, r in zip(rows["seed"], rows["reason"])],
                                     hoverinfo="x+text"))
    if fit is not None and fit.ok:
        xs = np.linspace(done[field].min(), done[field].max(), 200)
        fig.add_trace(go.Scatter(x=xs, y=fit(xs), mode="lines", line={"color": INK, "width": 1, "dash": "dot"},
                                 name=f"logistic fit, midpoint {fit.midpoint:.3f}"))  # its interval: the printout
    if level is not None:
        fig.add_hline(y=level, line={"color": LIGHT, "dash": "dash", "width": 1},
                      annotation_text=f"level {level:g}", annotation_position="bottom right")
    # the vertical lines are named in the legend: a label beside a line on a phone-wide plot would stretch the axis
    marks = []
    if paper_value is not None:
        marks.append((paper_value, f"paper ≈ {paper_value:g}", {"color": PAPER, "dash": "dash", "width": 2}))
    if crossing is not None and crossing.value is not None:
        marks.append((crossing.value, f"mean curve crosses, {crossing.value:.3f} (rule before 2026-12)",
                      {"color": INK, "dash": "dashdot", "width": 1.5}))
    _named_vlines(fig, marks)
    fig.update_layout(title=title, xaxis_title=x_label, yaxis_title=y_label, yaxis_range=[-0.08, 1.05],
                      legend={"orientation": "h", "y": -0.2}, height=460)
    return fig


def threshold_fit_figure(table, field: str, x, curve, threshold: float | None, interval: tuple | None, title: str,
                         x_label: str, paper_value: float | None = None, left_out=None, limit: float | None = None):
    """C9's reading drawn: per grid value the share of composed runs at the level (`analysis.thresholds.
    success_by_value`, 95 % intervals), the logistic fit's curve over `x` and its midpoint with the seeds'
    resampled interval shaded. With `left_out` (`analysis.thresholds.leave_one_seed_out`), a second panel on the same
    axis draws the fit's midpoint and interval with each seed left out, those wider than `limit` in the colour of the
    verdict such a width gives (inconclusive)."""

    panels = left_out is not None and len(left_out) > 0
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.5, 0.5], vertical_spacing=0.04) if panels \
        else go.Figure()
    at = {"row": 1, "col": 1} if panels else {}
    fig.add_trace(go.Scatter(
        x=table[field], y=table["share"], mode="markers", name="share of composed runs at the level",
        marker={"color": identity(0), "size": 8},
        error_y={"type": "data", "symmetric": False, "array": table["high"] - table["share"],
                 "arrayminus": table["share"] - table["low"], "color": identity(0)},
        text=[f"{k} of {n} runs, {s} seeds" for k, n, s in zip(table["succeeded"], table["runs"], table["seeds"])],
        hoverinfo="x+y+text"), **at)
    fig.add_trace(go.Scatter(x=list(x), y=list(curve), mode="lines", line={"color": INK, "width": 1.5},
                             name="logistic fit"), **at)
    marks = []
    if threshold is not None:
        marks.append((threshold, f"fit's midpoint {threshold:.3f}", {"color": INK, "dash": "dot", "width": 1.5}))
    if paper_value is not None:
        marks.append((paper_value, f"paper ≈ {paper_value:g}", {"color": PAPER, "dash": "dash", "width": 2}))
    if panels:  # drawn before the band, so that the band shades both panels
        _left_out_panel(fig, left_out, limit)
    if interval is not None:
        fig.add_vrect(x0=max(interval[0], min(x)), x1=min(interval[1], max(x)), fillcolor=GREY,
                      opacity=palette.BAND_OPACITY, line_width=0)
        def bound(v: float) -> str:  # a resampled midpoint off the grid (all or no runs succeed) is infinite
            return f"{v:.3f}" if abs(v) != float("inf") else ("below the grid" if v < 0 else "above the grid")
        resampled = "" if panels else " (seeds resampled)"  # with the check below, the caption says so
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=f"95 % interval {bound(interval[0])} to"
                                 f" {bound(interval[1])}{resampled}", marker={"symbol": "square", "color": GREY,
                                                                             "size": 12, "opacity": 0.5}), **at)
    _named_vlines(fig, marks)
    fig.update_layout(title=title, legend={"orientation": "h", "y": -0.2} if not panels else
                      {"orientation": "h", "y": -0.1}, height=680 if panels else 460)
    fig.update_yaxes(title_text="share at the level (composed runs)", range=[-0.05, 1.05], **at)
    fig.update_xaxes(title_text=x_label, row=2 if panels else None, col=1 if panels else None)
    return fig


def _left_out_panel(fig, left_out, limit: float | None) -> None:
    """The second panel of `threshold_fit_figure`: one row per seed left out, its interval as a segment and its
    midpoint as a dot; intervals wider than `limit` in the inconclusive verdict's colour."""
    import plotly.graph_objects as go
    rows = left_out.sort_values("left_out")
    wide = rows["width"] > limit if limit is not None else rows["width"] != rows["width"]
    for is_wide, colour, name in ((False, INK, f"one seed left out, width ≤ {limit:g}"),
                                  (True, palette.VERDICT_COLORS["inconclusive"], f"wider than {limit:g}")):
        part = rows[wide == is_wide]
        if not len(part):
            continue
        labels = [f"without {int(s)}" for s in part["left_out"]]
        xs = [v for lo, hi in zip(part["low"], part["high"]) for v in (lo, hi, None)]
        ys = [v for y in labels for v in (y, y, None)]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line={"color": colour, "width": 3}, name=name,
                                 hoverinfo="skip"), row=2, col=1)
        fig.add_trace(go.Scatter(x=part["threshold"], y=labels, mode="markers", marker={"color": colour, "size": 7},
                                 showlegend=False, text=[f"width {w:.3f}" for w in part["width"]],
                                 hovertemplate="%{y}: midpoint %{x:.3f}, %{text}<extra></extra>"), row=2, col=1)
    labels = [f"without {int(s)}" for s in rows["left_out"]][::-1]  # every row named (no tick left out)
    fig.update_yaxes(categoryorder="array", categoryarray=labels, tickmode="array", tickvals=labels,
                     tickfont={"size": 10}, row=2, col=1)


# ------------------------------------------------------------------ circuits and theory (chapters 04, 07)
def _heatmap(z, x, y, zmid: float | None = 0.0, colorscale: str = palette.DIVERGING, showscale: bool = True,
             hover: str = "query %{y}, key %{x}: %{z:.3f}", scale_title: str = "score"):
    z = [[None if v != v else v for v in row] for row in (z.tolist() if hasattr(z, "tolist") else z)]  # NaN -> gap
    return go.Heatmap(z=z, x=list(x), y=list(y), zmid=zmid, colorscale=colorscale, showscale=showscale,
                      hovertemplate=hover + "<extra></extra>", colorbar={"title": {"text": scale_title}})


def qk_map_figure(matrix, x_labels, y_labels, title: str, x_title: str = "key", y_title: str = "query",
                  size: int = 520):
    """One QK (or any square) map as a heat map, query rows top to bottom, diverging around 0."""
    fig = go.Figure(_heatmap(matrix, x_labels, y_labels, scale_title="QK score"))
    fig.update_layout(title=title, width=size + 80, height=size, xaxis_title=x_title, yaxis_title=y_title,
                      yaxis_autorange="reversed")
    return fig


def _score_title(panel: str) -> str:
    """A map's colour-bar title from its panel title: an OV map's scores are "OV score", any other map's "QK score"."""
    return "OV score" if re.search(r"\bOV\b", str(panel)) else "QK score"


def qk_map_pair_figure(maps: dict, x_labels, y_labels, title: str, x_title: str = "key", y_title: str = "query",
                       scale_title: str | None = None):
    """Several maps of the same kind, at most three to a row, each with its own scale: every colour bar sits
    beside its own panel (plotly would stack them all at the figure's right edge), with room after it for the next
    panel's tick labels when they are long (token labels such as "15:="). Each colour bar is titled `scale_title`,
    or by default after its panel (`_score_title`: "OV score" for an OV map, "QK score" otherwise)."""
    names = list(maps)
    cols = min(3, len(names))
    rows = -(-len(names) // cols)
    longest = max((len(str(label)) for label in y_labels), default=0)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=names,
                        horizontal_spacing=0.16 + 0.02 * min(4, max(0, longest - 3)),
                        vertical_spacing=0.14 if rows > 1 else 0.0)
    for i, name in enumerate(names):
        row, col = i // cols + 1, i % cols + 1
        fig.add_trace(_heatmap(maps[name], x_labels, y_labels, scale_title=scale_title or _score_title(name)),
                      row=row, col=col)
        fig.update_xaxes(title_text=x_title, row=row, col=col)
        fig.update_yaxes(title_text=y_title if col == 1 else None, autorange="reversed", row=row, col=col)
        axis = "" if i == 0 else str(i + 1)
        x_domain, y_domain = fig.layout[f"xaxis{axis}"].domain, fig.layout[f"yaxis{axis}"].domain
        fig.data[-1].colorbar.update(x=x_domain[1] + 0.01, xanchor="left", y=sum(y_domain) / 2, yanchor="middle",
                                     len=y_domain[1] - y_domain[0], thickness=10)
    fig.update_layout(title=title, width=480 * cols, height=460 * rows)
    return fig


def attention_grid_figure(patterns, labels: list[list[str]], names: list[str], title: str):
    """patterns [example, layer, q, k]: one row per example, one column per layer."""
    n_ex, n_layers = patterns.shape[0], patterns.shape[1]
    titles = [f"{name} — layer {layer + 1}" for name in names for layer in range(n_layers)]
    fig = make_subplots(rows=n_ex, cols=n_layers, subplot_titles=titles, vertical_spacing=0.06,
                        horizontal_spacing=0.15)
    for e in range(n_ex):
        for layer in range(n_layers):
            fig.add_trace(_heatmap(patterns[e, layer], labels[e], labels[e], zmid=None, colorscale=palette.SEQUENTIAL,
                                   showscale=(e == 0 and layer == n_layers - 1), scale_title="attention",
                                   hover="query %{y} → key %{x}: %{z:.2f}"), row=e + 1, col=layer + 1)
            fig.update_yaxes(autorange="reversed", title_text="query position" if layer == 0 else None,
                             tickfont_size=8, row=e + 1, col=layer + 1)
            fig.update_xaxes(tickfont_size=8, title_text="key position" if e == n_ex - 1 else None,
                             row=e + 1, col=layer + 1)
    fig.update_layout(title=title, width=900, height=430 * n_ex)
    return fig


def eq_variable_scores_figure(steps, scores, var_names, title: str, window: tuple | None = None,
                              highlight: tuple = ()):
    """scores [step, variable, side]: the layer-1 score from `=` to each variable at the lhs and the rhs
    position, one line per variable; `highlight` variables (e.g. the position-restricted ones) in bold."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=["variable as left operand (position 13)",
                                                        "variable as right operand (position 14)"],
                        shared_yaxes=True)
    for side in range(2):
        for v, name in enumerate(var_names):
            bold = name in highlight
            fig.add_scatter(x=list(steps), y=[float(s[v, side]) for s in scores], mode="lines+markers",
                            name=name, legendgroup=name, showlegend=(side == 0),
                            line=dict(color=identity(v), width=3.5 if bold else 1.2,
                                      dash="solid" if bold else "dot"), row=1, col=side + 1)
        fig.update_xaxes(title_text="training step", row=1, col=side + 1)
        if window:
            fig.add_vrect(x0=window[0], x1=window[1], fillcolor=GREY, opacity=palette.BAND_OPACITY, line_width=0,
                          row=1, col=side + 1)
    fig.update_yaxes(title_text="layer-1 score from “=”", row=1, col=1)
    fig.update_layout(title=title, height=460, width=1000, hovermode="x unified")
    return fig


LONG_LABEL = 24  # category labels longer than this turn grouped bars sideways (`side_by_side_figure`)


def wrapped_label(text: str, width: int = 22) -> str:
    """A long category label in lines of about `width` characters (plotly's <br>), broken between words: tick
    labels of grouped bars stay readable when a phone rotates them. A label of at most LONG_LABEL characters stays
    whole."""
    if len(str(text)) <= LONG_LABEL:
        return str(text)
    lines, line = [], ""
    for word in str(text).split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "<br>".join([*lines, line])


def ablation_figure(table, title: str, y_title: str = "accuracy"):
    """Grouped bars: one group per pool (rows of `table`), one bar per column. With a "clean" column, that one is
    ink and the others (the ablated variants) a grey ramp (`palette.ABLATED`); otherwise each column an identity
    colour."""
    x = [wrapped_label(label(i)) for i in table.index]
    columns = list(table.columns)
    if "clean" in columns:
        ramp = iter(palette.ABLATED * len(columns))
        colours = [INK if col == "clean" else next(ramp) for col in columns]
    else:
        colours = [identity(i) for i in range(len(columns))]
    fig = go.Figure([go.Bar(name=label(col), x=x, y=table[col].tolist(), marker_color=colour)
                     for col, colour in zip(columns, colours)])
    fig.update_layout(title=title, barmode="group", xaxis_title="evaluation pool", yaxis_title=y_title,
                      yaxis_range=[0, 1.02], height=460)
    return fig


def gradient_identity_figure(table, metrics, jump: int | None, title: str):
    """Top: diagonal contrast of the projected negative gradient (and of W_QK2, and the isotropic
    U Uᵀ baseline) at each checkpoint; bottom: progress measures 3 and 5 from the metrics table."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.6, 0.4],
                        subplot_titles=["diagonal contrast on the variable copies W_E[v] OV1",
                                        "progress measures"])
    series = {"−∇L on W_QK2 (G)": ("grad_contrast", INK, "solid"),
              "W_QK2 itself (measure 3's map)": ("qk2_contrast", PARTS["lookup"], "solid"),
              "isotropic baseline U Uᵀ": ("gram_contrast", GREY, "dot")}
    for name, (col, color, dash) in series.items():
        fig.add_scatter(x=table["step"], y=table[col], name=name, mode="lines+markers",
                        line=dict(color=color, dash=dash), row=1, col=1)
    fig.add_hline(y=0, line_color=INK, line_width=1, row=1, col=1)
    lo, hi = table["step"].min(), table["step"].max()
    m = metrics[(metrics["step"] >= lo) & (metrics["step"] <= hi)]
    for col in ("m3_l2_var_identity_qk", "m5_l1_value_prev_token"):
        fig.add_scatter(x=m["step"], y=m[col], name=MEASURE_LABELS[col], mode="lines",
                        line={**palette.measure_style(col), "width": 1.5},
                        row=2, col=1)
    if jump is not None:
        for row in (1, 2):
            fig.add_vline(x=jump, line_dash="dash", line_color=INK, line_width=1.2, row=row, col=1)
    fig.update_yaxes(title_text="(diag − off-diag) / RMS", row=1, col=1)
    fig.update_yaxes(title_text="measure", range=[-0.02, 1.02], row=2, col=1)
    fig.update_xaxes(title_text="training step", row=2, col=1)
    fig.update_layout(title=title, height=640, hovermode="x unified")
    return fig


# ------------------------------------------------------------ shared addition, Fourier, generalization (03, 05, 06, 09)
_GROUP_COLORS = {"matched": PARTS["mlp"], "swapped": INK, "mismatched": GREY}  # the MLP input: matched or not


def cosine_histograms_figure(panels: dict, title: str, bins: int = 80):
    """panels: {panel title: {group: cosines}}; per panel one histogram per group (fraction of the
    group per bin, fixed bins on [-1, 1]), so groups of very different sizes compare directly.

    Binned here rather than by go.Histogram: the mismatched group holds ~12 M cosines at N = 59, and a
    histogram trace embeds every value in the page (~6.7 MB per million); 80 bars per group stay ~10 KB."""
    names = list(panels)  # one panel per row: three side by side do not fit the book's text column
    fig = make_subplots(rows=len(names), cols=1, subplot_titles=names, shared_xaxes=True, vertical_spacing=0.08)
    edges = np.linspace(-1, 1, bins + 1)
    centers = (edges[:-1] + edges[1:]) / 2
    for i, name in enumerate(names):
        for group, values in panels[name].items():
            counts, _ = np.histogram(np.clip(values, -1, 1), bins=edges)
            fig.add_bar(x=centers, y=counts / max(counts.sum(), 1), name=f"{group} (mean {np.mean(values):.2f})",
                        marker_color=_GROUP_COLORS.get(group), opacity=0.65, legendgroup=f"{i}{group}",
                        hovertemplate=f"{group}: cos %{{x:.2f}}, fraction %{{y:.3f}}<extra></extra>",
                        row=i + 1, col=1)
        fig.update_yaxes(title_text="fraction", row=i + 1, col=1)
    fig.update_xaxes(title_text="cosine similarity", range=[-1, 1.02], row=len(names), col=1)
    fig.update_layout(title=title, barmode="overlay", bargap=0, height=260 * len(names) + 120, width=720)
    return fig


_SERIES_PARTS = (("W_out", "mlp"), ("W_E", "embed"), ("W_U", "unembed"))  # a series named after a matrix: its part


def _part_colour(name: str, index: int) -> str:
    """The colour of the circuit part a series is named after (the MLP's output W_out before W_U), else an identity."""
    return next((PARTS[part] for key, part in _SERIES_PARTS if key in str(name)), identity(index))


def spectrum_figure(series: dict, title: str, key: list | None = None):
    """series: {name: power fraction per frequency 1..K}, each in the colour of the part it is named after
    (`_part_colour`); key frequencies marked below the axis."""
    fig = go.Figure()
    for i, (name, fractions) in enumerate(series.items()):
        fig.add_bar(x=list(range(1, len(fractions) + 1)), y=list(map(float, fractions)), name=name,
                    marker_color=_part_colour(name, i), hovertemplate=f"{name}: k=%{{x}}, %{{y:.3f}}<extra></extra>")
    if key:
        fig.add_scatter(x=list(key), y=[0] * len(key), mode="markers", name="key frequencies",
                        marker=dict(symbol="triangle-up", size=10, color=INK))
    fig.update_layout(title=title, barmode="group", xaxis_title="frequency k (cos / sin of 2πk·n/N)",
                      yaxis_title="share of non-constant power", height=420, xaxis=dict(dtick=1))
    return fig


def neuron_fit_figure(actual, fitted, title: str, labels: tuple = ("pre-activation", "single-frequency fit")):
    """A neuron's N × N pre-activation map (lhs n down, rhs m across) beside its fit, one colour scale."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=list(labels), horizontal_spacing=0.08)
    lim = float(np.abs(np.concatenate([np.ravel(actual), np.ravel(fitted)])).max())
    for i, z in enumerate((actual, fitted)):
        trace = _heatmap(np.round(np.asarray(z), 3), range(len(z[0])), range(len(z)), zmid=0.0, showscale=(i == 1),
                         hover="n=%{y}, m=%{x}: %{z:.2f}", scale_title="pre-activation")
        trace.update(zmin=-lim, zmax=lim)
        fig.add_trace(trace, row=1, col=i + 1)
        fig.update_xaxes(title_text="rhs operand m", row=1, col=i + 1)
        fig.update_yaxes(title_text="lhs operand n" if i == 0 else None, autorange="reversed", row=1, col=i + 1)
    fig.update_layout(title=title, width=1000, height=500)
    return fig


def neuron_r2_figure(r2, k, active, title: str, threshold: float = 0.7):
    """Left: histogram of every neuron's best single-frequency R² (active vs inactive neurons);
    right: how many active neurons pick each frequency."""
    r2, k, active = np.asarray(r2), np.asarray(k), np.asarray(active, dtype=bool)
    fig = make_subplots(rows=1, cols=2, subplot_titles=["explained variance of the best frequency",
                                                        "best frequency of the active neurons"])
    for mask, name, color in ((active, "active neurons", PARTS["mlp"]), (~active, "inactive neurons", LIGHT)):
        fig.add_histogram(x=r2[mask], xbins=dict(start=0, end=1.0001, size=0.025), name=name,
                          marker_color=color, opacity=0.8, row=1, col=1)
    fig.add_vline(x=threshold, line_dash="dash", line_color=INK, row=1, col=1)
    counts = np.bincount(k[active], minlength=int(k.max()) + 1 if len(k) else 1)
    present = [int(i) for i in np.flatnonzero(counts)]
    fig.add_bar(x=[str(i) for i in present], y=counts[present].tolist(), name="active neurons per frequency",
                marker_color=PARTS["mlp"], showlegend=False, row=1, col=2)
    fig.update_xaxes(title_text="R² of c + A cos(2πkn/N + α) + A' cos(2πkm/N + β)", row=1, col=1)
    fig.update_xaxes(title_text="frequency k", type="category", row=1, col=2)
    fig.update_yaxes(title_text="neurons", row=1, col=1)
    fig.update_yaxes(title_text="active neurons", row=1, col=2)
    fig.update_layout(title=title, barmode="overlay", height=420, width=1050)
    return fig


def variable_side_figure(table, forbidden: dict, title: str):
    """Accuracy per variable as the left / right operand (table: variables × ['lhs', 'rhs']);
    `forbidden` = {side: [variables never on that side in training]}, drawn hatched."""
    fig = go.Figure()
    for k, side in enumerate(table.columns):
        hatch = ["/" if v in forbidden.get(side, ()) else "" for v in table.index]
        fig.add_bar(x=list(table.index), y=table[side].tolist(), name=f"as {side} operand",
                    marker=dict(color=identity(k), pattern_shape=hatch),
                    hovertemplate=f"%{{x}} as {side}: %{{y:.4f}}<extra></extra>")
    low = float(table.min().min())
    fig.update_layout(title=title, barmode="group", xaxis_title="variable",
                      yaxis_title="accuracy (hatched: position never seen in training)",
                      yaxis_range=[max(0.0, low - 0.05), 1.005], height=420)
    return fig


def restricted_curves_figure(long, title: str, marks: dict | None = None):
    """long: [step, pool, variable, side, accuracy] (`generalization.restricted_long`); one panel per pool, one line
    per (variable, side); `marks` {label: step} drawn as dashed vertical lines."""
    pools = list(dict.fromkeys(long["pool"]))
    fig = make_subplots(rows=len(pools), cols=1, subplot_titles=[POOL_LABELS.get(p, p) for p in pools],
                        shared_xaxes=True, vertical_spacing=0.08)  # one pool per row: they fit the text column
    keys = sorted(set(zip(long["variable"], long["side"])))
    colors = {key: identity(i) for i, key in enumerate(keys)}
    for i, pool in enumerate(pools):
        part = long[long["pool"] == pool]
        for key in keys:
            rows = part[(part["variable"] == key[0]) & (part["side"] == key[1])].sort_values("step")
            if len(rows):
                fig.add_scatter(x=rows["step"], y=rows["accuracy"], mode="lines+markers", name=f"{key[0]} as {key[1]}",
                                legendgroup=str(key), showlegend=(i == 0), line=dict(color=colors[key]),
                                row=i + 1, col=1)
        for label, step in (marks or {}).items():
            if step is not None:
                fig.add_vline(x=step, line_dash="dash", line_color=GREY, row=i + 1, col=1)
        fig.update_yaxes(title_text="accuracy", range=[-0.02, 1.02], row=i + 1, col=1)
    fig.update_xaxes(title_text="training step", row=len(pools), col=1)
    fig.update_layout(title=title, height=280 * len(pools) + 120, width=720, hovermode="x unified")
    return fig


def residue_figure(tables: dict, title: str, x_title: str):
    """tables: {name: DataFrame indexed by residue with an 'accuracy' column}; one bar series each."""
    fig = go.Figure()
    low = 1.0
    for k, (name, table) in enumerate(tables.items()):
        counted = "n" in table
        fig.add_bar(x=list(table.index), y=table["accuracy"].tolist(), name=name, marker_color=identity(k),
                    customdata=table["n"].tolist() if counted else None,
                    hovertemplate="residue %{x}: %{y:.4f}" + (" (n=%{customdata})" if counted else "")
                    + "<extra></extra>")
        low = min(low, float(table["accuracy"].min()))
    fig.update_layout(title=title, barmode="group", xaxis_title=x_title, yaxis_title="accuracy",
                      yaxis_range=[max(0.0, low - 0.05), 1.005], height=400, xaxis=dict(dtick=2))
    return fig


def side_by_side_figure(values: dict, title: str, y_title: str = "accuracy", y_range: tuple | None = (0, 1.02)):
    """values: {model name: {label: number}}; grouped bars, one group per label. Long labels (more than
    LONG_LABEL characters) turn the bars sideways, so the labels read across the page on any width."""
    fig = go.Figure()
    labels = [POOL_LABELS.get(k, k) for row in values.values() for k in row]
    sideways = any(len(text) > LONG_LABEL for text in labels)
    for i, (name, row) in enumerate(values.items()):
        shown = [wrapped_label(POOL_LABELS.get(k, k)) for k in row]
        numbers = [float(v) for v in row.values()]
        fig.add_bar(**({"y": shown, "x": numbers, "orientation": "h"} if sideways else {"x": shown, "y": numbers}),
                    name=name, marker_color=identity(i),
                    hovertemplate=f"{name}: %{{{'y' if sideways else 'x'}}} %{{{'x' if sideways else 'y'}:.4f}}"
                                             "<extra></extra>")
    value_axis = {"title_text": y_title, **({"range": list(y_range)} if y_range else {})}
    if sideways:
        fig.update_xaxes(**value_axis)
        fig.update_yaxes(title_text="measure", autorange="reversed")
        fig.update_layout(height=140 + 70 * len({k for row in values.values() for k in row}))
    else:
        fig.update_yaxes(**value_axis)
        fig.update_xaxes(title_text="measure")
        fig.update_layout(height=440)
    fig.update_layout(title=title, barmode="group")
    return fig


def lines_figure(x, series: dict, title: str, x_title: str, y_title: str, band: tuple | None = None):
    """One line per entry of `series` ({name: y values}) over a shared x; `band`: an x range shaded grey."""
    fig = go.Figure([go.Scatter(x=list(x), y=[float(v) for v in y], mode="lines+markers", name=name,
                                line={"color": identity(i)})
                     for i, (name, y) in enumerate(series.items())])
    if band is not None and None not in band:
        fig.add_vrect(x0=band[0], x1=band[1], fillcolor=GREY, opacity=palette.BAND_OPACITY, line_width=0)
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, height=440, hovermode="x unified")
    return fig


def scatter_labels_figure(x, y, labels, title: str, x_title: str, y_title: str):
    """Points with a text label each (e.g. numbers in an embedding PCA), equal axis scales."""
    fig = go.Figure(go.Scatter(x=list(map(float, x)), y=list(map(float, y)), mode="markers+text",
                               text=list(labels), textposition="top center", marker={"size": 7, "color": INK}))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title=y_title, height=520, width=560)
    fig.update_yaxes(scaleanchor="x", scaleratio=1)
    return fig


def phase_strip_figure(steps, paper_steps: dict, title: str):
    """One marker per run for each transition (rows of `steps`: runs; columns: transitions, NaN = not
    found), with the paper's step ranges as grey bars."""
    fig = go.Figure()
    transitions = [c for c in steps.columns]
    for i, (run, row) in enumerate(steps.iterrows()):
        found = [(t, row[t]) for t in transitions if row[t] == row[t] and row[t] is not None]
        fig.add_trace(go.Scatter(x=[float(v) for _, v in found], y=[t for t, _ in found], mode="markers", name=run,
                                 marker={"size": 11, "color": identity(i),
                                         "symbol": ("circle", "diamond", "square", "triangle-up")[i % 4]}))
    for t, (lo, hi) in paper_steps.items():
        if t in transitions:
            fig.add_trace(go.Scatter(x=[lo, hi], y=[t, t], mode="lines", line={"color": PAPER, "width": 14},
                                     opacity=0.35, name=f"paper: {t}", hoverinfo="name+x"))
    fig.update_layout(title=title, xaxis_title="training step", yaxis_title="transition", height=420,
                      yaxis={"categoryorder": "array", "categoryarray": transitions[::-1]})
    return fig


# ---------------------------------------------------------------------------- the composition study
def ecdf_figure(curves: dict, title: str, x_title: str, band: tuple | None = None, band_label: str = ""):
    """Empirical distribution functions ({name: (sorted x, share at or below)}) as steps; `band`: a grey x range."""
    fig = go.Figure([go.Scatter(x=list(x), y=list(y), mode="lines+markers", line_shape="hv", name=name,
                                line={"color": identity(i)})
                     for i, (name, (x, y)) in enumerate(curves.items())])
    if band is not None:
        fig.add_vrect(x0=band[0], x1=band[1], fillcolor=GREY, opacity=palette.BAND_OPACITY, line_width=0,
                      annotation_text=band_label, annotation_position="top left")
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title="share of composed runs", yaxis_range=[0, 1.05],
                      height=420)
    return fig


def outcome_grid_figure(table, inits, datas, title: str):
    """One cell per (initialization, data order) run: its final 1-var train accuracy; blank where not run."""
    z = np.full((len(inits), len(datas)), np.nan)
    for row in table.itertuples():
        if row.init in inits and row.data in datas:
            z[list(inits).index(row.init), list(datas).index(row.data)] = row.one_var_train
    trace = _heatmap(z, [f"data {d}" for d in datas], [f"init {i}" for i in inits], zmid=None, colorscale=palette.SEQUENTIAL,
                     hover="%{y}, %{x}: 1-var train %{z:.3f}", scale_title="1-var train")
    trace.update(zmin=0.5, zmax=1.0, texttemplate="%{text}",
                 text=[["" if np.isnan(v) else ("composed" if v >= 0.9 else "stuck") for v in r] for r in z])
    fig = go.Figure(trace)
    half = len(inits) / 2 - 0.5
    for position in (half,):  # composer | failer blocks
        fig.add_hline(y=position, line={"color": "white", "width": 3})
        fig.add_vline(x=position, line={"color": "white", "width": 3})
    fig.update_layout(title=title, height=480, yaxis={"autorange": "reversed"})
    return fig


def predictor_figure(per_step, features, labels, test_rows, chosen: dict, title: str):
    """Left: held-out AUC of the feature chosen at each step; right: its ROC curve at the chosen step."""

    fig = make_subplots(rows=1, cols=2, subplot_titles=("held-out AUC by step", f"ROC: {chosen['quantity']} at step"
                                                        f" {int(chosen['step']):,}"))
    fig.add_trace(go.Scatter(x=per_step["step"], y=per_step["test_auc"], mode="lines+markers", name="held-out AUC",
                             line={"color": INK}, text=per_step["quantity"],
                             hovertemplate="step %{x}: %{text}, AUC %{y:.3f}"), 1, 1)
    fig.add_trace(go.Scatter(x=per_step["step"], y=per_step["fit_auc"], mode="lines", name="fitting-half AUC",
                             line={"dash": "dot", "color": GREY}), 1, 1)
    scores = chosen["sign"] * features.loc[test_rows, (chosen["quantity"], chosen["step"])]
    fpr, tpr = roc_curve(scores, labels[test_rows])
    fig.add_trace(go.Scatter(x=fpr, y=tpr, mode="lines+markers", line_shape="hv", line={"color": identity(1)},
                             name=f"ROC (AUC {auc(scores, labels[test_rows]):.2f})"), 1, 2)
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line={"dash": "dash", "color": LIGHT},
                             showlegend=False), 1, 2)
    fig.update_xaxes(title_text="training step", row=1, col=1)
    fig.update_xaxes(title_text="false-positive rate", row=1, col=2)
    fig.update_yaxes(title_text="AUC", range=[0.4, 1.02], row=1, col=1)
    fig.update_yaxes(title_text="true-positive rate", row=1, col=2)
    fig.update_layout(title=title, height=440)
    return fig


def rescue_figure(arms: dict, branch_step: int, title: str):
    """1-var train accuracy of each arm ({name: metrics table}) from shortly before the branch point on."""
    fig = go.Figure()
    for i, (name, metrics) in enumerate(arms.items()):
        shown = metrics[metrics["step"] >= branch_step - 2000]
        fig.add_trace(go.Scatter(x=shown["step"], y=shown["1var_train"], mode="lines", name=label(name),
                                 line={"color": identity(i), "dash": "dot" if name == "continue" else "solid"}))
    fig.add_vline(x=branch_step, line={"color": INK, "dash": "dash"}, annotation_text="branch point")
    fig.add_hline(y=0.9, line={"color": GREY, "dash": "dot"})
    fig.update_layout(title=title, xaxis_title="training step", yaxis_title="1-var train accuracy",
                      yaxis_range=[0.4, 1.02], height=440)
    return fig


def composition_rate_figure(panels: dict, title: str):
    """One panel per sweep ({x label: (table from thresholds.composition_by_value, its field)}): the share of runs
    that composed at each grid value, with its 95 % interval."""
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=list(panels), shared_yaxes=True)
    for col, (label, (table, field)) in enumerate(panels.items(), start=1):
        fig.add_trace(go.Scatter(
            x=table[field], y=table["rate"], mode="markers", name=label, showlegend=False,
            text=[f"{k} of {n}" for k, n in zip(table["composed"], table["runs"])],
            hovertemplate="%{x:.3f}: %{text}", marker={"color": INK},
            error_y={"type": "data", "symmetric": False, "array": table["high"] - table["rate"],
                     "arrayminus": table["rate"] - table["low"], "color": INK}), 1, col)
        fig.update_xaxes(title_text=label, row=1, col=col)
    fig.update_yaxes(title_text="share composed", range=[-0.02, 1.05], row=1, col=1)
    fig.update_layout(title=title, height=420)
    return fig


def circuit_slider_figure(maps, var_names: list[str], token_labels: list[str], title: str, pools=None):
    """A slider over checkpoints (plotly frames, offline): layer 1's attention on one sequence (top left), layer
    2's variable QK map (top right) and, when `pools` is given (a `series(run, "pools", steps)` table), the
    evaluation pools' accuracies at that step (below). `maps`: a `series(run, "circuit_maps", steps)` table,
    one row per step. Every frame keeps the same colour ranges (attention 0 to 1, the QK map symmetric around 0 up
    to its largest score over all steps), so a colour reads the same at every step; nothing plays by itself."""
    n_vars, n_pos = len(var_names), len(token_labels)
    qk_columns = [f"qk_{i}_{j}" for i in range(n_vars) for j in range(n_vars)]
    # a run whose last step is also a kept checkpoint has it twice (that checkpoint and the final model): one frame
    maps = maps[~maps.index.duplicated(keep="last")]
    pools = None if pools is None else pools[~pools.index.duplicated(keep="last")]
    pool_names = [p for p in POOL_NAMES if pools is not None and p in pools.columns]
    bound = float(np.nanmax(np.abs(maps[qk_columns].to_numpy(dtype=float)))) or 1.0  # over every step

    def traces(step):
        row = maps.loc[step]
        qk = np.array([[row[f"qk_{i}_{j}"] for j in range(n_vars)] for i in range(n_vars)])
        pattern = np.array([[row[f"l1_{q}_{k}"] for k in range(n_pos)] for q in range(n_pos)])
        pattern[np.triu_indices(n_pos, 1)] = np.nan  # keys after the query: never attended
        shown = [_heatmap(pattern, token_labels, token_labels, zmid=None, colorscale=palette.SEQUENTIAL,
                          showscale=False, hover="query %{y}, key %{x}: %{z:.2f}").update(zmin=0.0, zmax=1.0),
                 _heatmap(qk, var_names, var_names, zmid=0.0, hover="query %{y}, key %{x}: %{z:.1f}",
                          scale_title="QK score").update(zmin=-bound, zmax=bound)]
        if pool_names:
            shown.append(go.Bar(y=[label(p) for p in pool_names], x=[float(pools.loc[step, p]) for p in pool_names],
                                orientation="h", marker_color=[palette.pool_style(p)["color"] for p in pool_names],
                                hovertemplate="%{y}: %{x:.3f}<extra></extra>", showlegend=False))
        return shown

    steps = [int(s) for s in maps.index]
    titles = ("layer 1: attention on the 2-var example", "layer 2: variable QK map")
    if pool_names:
        fig = make_subplots(rows=2, cols=2, specs=[[{}, {}], [{"colspan": 2}, None]], row_heights=[0.62, 0.38],
                            subplot_titles=(*titles, "accuracy on each evaluation pool"), horizontal_spacing=0.14,
                            vertical_spacing=0.16)
        places = [(1, 1), (1, 2), (2, 1)]
    else:
        fig = make_subplots(rows=1, cols=2, subplot_titles=titles, horizontal_spacing=0.14)
        places = [(1, 1), (1, 2)]
    for (row, col), trace in zip(places, traces(steps[-1])):  # the trained model first; the slider goes back
        fig.add_trace(trace, row, col)
    fig.frames = [go.Frame(data=traces(s), traces=list(range(len(places))), name=str(s)) for s in steps]
    fig.update_layout(title=title, height=860 if pool_names else 520, sliders=[{
        "active": len(steps) - 1, "currentvalue": {"prefix": "step "}, "pad": {"t": 60},
        "steps": [{"label": f"{s:,}", "method": "animate",
                   "args": [[str(s)], {"mode": "immediate", "frame": {"duration": 0, "redraw": True},
                                       "transition": {"duration": 0}}]} for s in steps]}])
    fig.update_yaxes(autorange="reversed", row=1)
    if pool_names:  # pools down the side, their names across: no slanted label runs into the slider below
        fig.update_xaxes(range=[0, 1.02], title_text="accuracy", row=2, col=1)
        fig.update_yaxes(autorange="reversed", row=2, col=1)
    return fig


def steering_figure(curves: dict, windows: dict, title: str):
    """One panel per seed ({seed label: {arm: metrics table}}): 1-var train accuracy of each arm against the step,
    the steering window ({seed label: (first, last)}) shaded."""
    names = list(curves)  # one panel a row: each keeps the column's whole width, on a phone too
    fig = make_subplots(rows=len(names), cols=1, subplot_titles=names, shared_xaxes=True, vertical_spacing=0.08)
    colors = {"twin": GREY, "steered": PARTS["lookup"], "sham": INK}  # steered: the lookup's identity component
    shown_legend = set()
    for row, name in enumerate(names, start=1):
        for arm_name, metrics in curves[name].items():
            fig.add_trace(go.Scatter(x=metrics["step"], y=metrics["1var_train"], mode="lines", name=arm_name,
                                     legendgroup=arm_name, showlegend=arm_name not in shown_legend,
                                     line={"color": colors.get(arm_name, identity(len(shown_legend) + 1)),
                                           "dash": "dot" if arm_name == "twin" else "solid"},
                                     hovertemplate=f"{arm_name}, step %{{x:,}}: %{{y:.3f}}<extra></extra>"), row, 1)
            shown_legend.add(arm_name)
        first, last = windows[name]
        fig.add_vrect(x0=first, x1=last, fillcolor=GREY, opacity=palette.BAND_OPACITY, line_width=0, row=row, col=1)
        fig.add_hline(y=0.9, line={"color": LIGHT, "dash": "dot"}, row=row, col=1)
        fig.update_yaxes(title_text="1-var train", range=[0.0, 1.02], row=row, col=1)
    fig.update_xaxes(title_text="training step", row=len(names), col=1)
    fig.update_layout(title=title, height=120 + 220 * len(names))
    return fig


def shape_curves_figure(curves: dict, title: str, max_step: int | None = None):
    """One panel per task or shape ({panel title: {seed label: metrics table}}): each seed's 1-var train accuracy
    (solid) and the mean of its three var-restricted pools (dotted), against step."""
    cols = 2 if len(curves) > 1 else 1
    rows = -(-len(curves) // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[wrapped_label(t, 34) for t in curves],
                        shared_yaxes=True, vertical_spacing=0.14, horizontal_spacing=0.06)
    seeds = sorted({seed for runs in curves.values() for seed in runs})
    restricted = list(VAR_RESTRICTED)
    for i, runs in enumerate(curves.values()):
        row, col = i // cols + 1, i % cols + 1
        for seed, metrics in runs.items():
            color = identity(seeds.index(seed))
            fig.add_trace(go.Scatter(x=metrics["step"], y=metrics["1var_train"], mode="lines", name=seed,
                                     legendgroup=seed, showlegend=i == 0, line={"color": color, "width": 1.6},
                                     hovertemplate=f"{seed}, step %{{x:,}}: 1-var train %{{y:.3f}}<extra></extra>"),
                          row, col)
            fig.add_trace(go.Scatter(x=metrics["step"], y=metrics[restricted].mean(axis=1), mode="lines",
                                     name=f"{seed}, var-restricted", legendgroup=seed, showlegend=False,
                                     line={"color": color, "width": 1.2, "dash": "dot"},
                                     hovertemplate=f"{seed}, step %{{x:,}}: var-restricted mean %{{y:.3f}}"
                                                   "<extra></extra>"), row, col)
        fig.update_xaxes(title_text="training step", range=[0, max_step] if max_step else None, row=row, col=col)
    for row in range(1, rows + 1):
        fig.update_yaxes(title_text="accuracy", range=[-0.02, 1.02], row=row, col=1)
    fig.update_layout(title=title, height=300 * rows + 120)
    return fig


ARM_STYLE = {"twin": (GREY, "circle-open"), "held run": (PARTS["lookup"], "diamond"), "sham": (INK, "x"),
             "double-held run": (PARTS["copy"], "square"), "double sham": (PARTS["embed"], "cross"),
             "clamp": (PARTS["lookup"], "diamond"), "wrong-pairs clamp": (INK, "x")}  # C10's and R3's arms


def onset_arms_figure(cells: dict, window: int, title: str, censor: int | None = None):
    """One row per cell ({cell label: {arm: steps from its copying onset to composing, None: never}}): each arm's
    time to compose as a marker, the hold's window [0, window] shaded; a run that never composed sits at `censor`
    (its budget after onset), an open marker there."""
    import plotly.graph_objects as go
    labels = list(cells)
    arms = list(dict.fromkeys(arm for c in cells.values() for arm in c))
    fig = go.Figure()
    for arm in arms:
        colour, symbol = ARM_STYLE.get(arm, (identity(len(fig.data)), "circle"))
        steps = [cells[label].get(arm) for label in labels]
        x = [censor if s is None else s for s in steps]
        fig.add_trace(go.Scatter(x=x, y=labels, mode="markers", name=arm, marker={"color": colour, "symbol": symbol,
                                                                                   "size": 10},
                                 customdata=["never" if s is None else f"{s:,}" for s in steps],
                                 hovertemplate=f"{arm}, %{{y}}: composed %{{customdata}} steps after onset<extra></extra>"))
    fig.add_vrect(x0=0, x1=window, fillcolor=GREY, opacity=palette.BAND_OPACITY, line_width=0)
    fig.update_layout(title=title, xaxis_title="steps after copying onset (shaded: the window)", yaxis_title="cell",
                      height=160 + 34 * len(labels), legend={"orientation": "h", "y": -0.25})
    fig.update_yaxes(autorange="reversed", type="category")
    return fig


ROUTE_TERMS = {"identity pattern (variable copy × variable copy)": ("variable", "variable", PARTS["lookup"], "solid"),
               "positional copy at \"=\" × variable copy": ("copied_positions", "variable", PARTS["copy"], "solid"),
               "every other term": (None, None, GREY, "dot")}


def route_terms_figure(table, arms: list[str], title: str):
    """R3's margin over training, one panel per arm (`table`: c10_route's checkpoint table with a "since" column, the
    steps after copying onset): the median over cells of the identity term, the positional-copy term and the rest."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots
    fig = make_subplots(rows=len(arms), cols=1, subplot_titles=arms, shared_xaxes=True, vertical_spacing=0.1)
    term_columns = [c for c in table.columns if c.startswith("q_") and "__k_" in c]
    for row, arm in enumerate(arms, start=1):
        mine = table[table["arm"] == arm]
        for name, (q, k, colour, dash) in ROUTE_TERMS.items():
            named = [f"q_{a}__k_{b}" for a, b, *_ in ROUTE_TERMS.values() if a]
            values = mine[f"q_{q}__k_{k}"] if q else mine[[c for c in term_columns if c not in named]].sum(axis=1)
            curve = values.groupby(mine["since"]).median()
            fig.add_trace(go.Scatter(x=curve.index, y=curve.values, mode="lines", name=name, legendgroup=name,
                                     showlegend=row == 1, line={"color": colour, "dash": dash},
                                     hovertemplate=f"{name}, %{{x:,}} steps after onset: %{{y:.2f}}<extra></extra>"),
                          row, 1)
        fig.update_yaxes(title_text="margin term", row=row, col=1)
    fig.update_xaxes(title_text="steps after copying onset", row=len(arms), col=1)
    fig.update_layout(title=title, height=140 + 230 * len(arms), legend={"orientation": "h", "y": -0.12})
    return fig
