"""The figures of the composition chapter's crossed design: outcomes per cell and mode, each initialization's
probability of composing, the variance shares, the flip rates of the perturbations, and the mode study's
trajectories. Each takes plain tables (from `analysis.odds`, `mode_study`) and returns a plotly figure."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .palette import GREY, INK, OUTCOME_COLORS, SEQUENTIAL, identity, mode_style, pair_style


def _error(values, low, high) -> dict:
    values, low, high = (np.asarray(v, dtype=float) for v in (values, low, high))
    return {"type": "data", "symmetric": False, "array": high - values, "arrayminus": values - low}


def design_grid_figure(table, inits, datas, title: str):
    """One cell per (initialization, data order): which of its two modes composed (discrete colours)."""
    pairs = table.pivot_table(index=["init", "data"], columns="mode", values="composed", aggfunc="first")
    names = list(OUTCOME_COLORS)
    z, text = np.full((len(inits), len(datas)), np.nan), [["" for _ in datas] for _ in inits]
    for (init, data), row in pairs.iterrows():
        if init not in inits or data not in datas or row.isna().any():
            continue
        eager, compiled = bool(row.get("eager")), bool(row.get("compiled"))
        name = names[0] if eager and compiled else names[1] if compiled else names[2] if eager else names[3]
        i, j = list(inits).index(init), list(datas).index(data)
        z[i, j], text[i][j] = names.index(name), name
    colorscale = [[k / 3, color] for k, color in enumerate(OUTCOME_COLORS.values())]
    fig = go.Figure(go.Heatmap(z=[[None if np.isnan(v) else v for v in row] for row in z],
                               x=[f"data {d}" for d in datas], y=[f"init {i}" for i in inits], zmin=0, zmax=3,
                               colorscale=colorscale, showscale=False, text=text,
                               hovertemplate="%{y}, %{x}: %{text}<extra></extra>"))
    for name, color in OUTCOME_COLORS.items():  # a legend for the four outcomes
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name,
                                 marker={"color": color, "size": 12, "symbol": "square"}))
    fig.update_layout(title=title, height=520, yaxis={"autorange": "reversed"}, plot_bgcolor="white",
                      legend={"orientation": "h", "y": -0.12})
    return fig


def replicate_count_figure(table, inits, datas, title: str):
    """One cell per (initialization, data order): how many of its replicates composed (`analysis.odds.replicated_cells`
    rows), as a shade from none to all, with the count written in the cell (in a font that stays readable when the
    figure shrinks to a phone: the number alone, the title says of how many)."""
    counts = table.groupby(["init", "data"])["composed"].agg(["sum", "count"])
    z, text = np.full((len(inits), len(datas)), np.nan), [["" for _ in datas] for _ in inits]
    hover = [["" for _ in datas] for _ in inits]
    for (init, data), row in counts.iterrows():
        if init in inits and data in datas:
            i, j = list(inits).index(init), list(datas).index(data)
            z[i, j], text[i][j] = row["sum"] / row["count"], f"{int(row['sum'])}"
            hover[i][j] = f"{int(row['sum'])} of {int(row['count'])}"
    fig = go.Figure(go.Heatmap(z=[[None if np.isnan(v) else v for v in r] for r in z],
                               x=[str(d) for d in datas], y=[str(i) for i in inits], zmin=0, zmax=1,
                               colorscale=SEQUENTIAL, text=text, texttemplate="%{text}", textfont={"size": 13},
                               customdata=hover, colorbar={"title": "share composed", "tickformat": ".0%"},
                               hovertemplate="init %{y}, data %{x}: %{customdata} composed<extra></extra>"))
    fig.update_layout(title=title, height=520, plot_bgcolor="white",
                      xaxis={"title": "data order", "type": "category"},
                      yaxis={"title": "initialization", "type": "category", "autorange": "reversed"})
    return fig


def _runs_each(counts) -> str:  # "16 runs" or "16-32 runs": how many runs each observed rate reads
    low, high = int(min(counts)), int(max(counts))
    return f"{low} runs" if low == high else f"{low}–{high} runs"


def init_probability_figure(probabilities, rates, title: str):
    """Each initialization's probability of composing on a new data order (posterior median and 95 % interval),
    sorted, with its observed rate over the design's runs as an open marker."""
    order = probabilities.sort_values("probability").reset_index(drop=True)
    labels = [f"init {i}" for i in order["init"]]
    fig = go.Figure(go.Scatter(x=labels, y=order["probability"], mode="markers", name="model: new data order",
                               marker={"color": INK},
                               error_y={**_error(order["probability"], order["low"], order["high"]), "color": INK},
                               hovertemplate="%{x}: %{y:.2f}<extra>probability</extra>"))
    observed = rates.set_index("init").loc[order["init"]]
    fig.add_trace(go.Scatter(x=labels, y=observed["rate"], mode="markers",
                             name=f"observed ({_runs_each(observed['count'])} each)",
                             marker={"symbol": "circle-open", "size": 10, "color": GREY},
                             text=[f"{int(k)} of {int(n)}" for k, n in zip(observed["sum"], observed["count"])],
                             hovertemplate="%{x}: %{text}<extra>observed</extra>"))
    fig.update_layout(title=title, yaxis={"title": "probability of composing", "range": [-0.02, 1.05]}, height=420,
                      legend={"orientation": "h", "y": -0.2})
    return fig


def shares_figure(table, names: dict, title: str):
    """The variance shares (`analysis.odds.shares_table`: one row per part) on the latent and the observed scale,
    side by side: a bar per part and scale with its 95 % interval; `names` gives each part's label."""
    labels = [names[p] for p in table["part"]]
    fig = go.Figure()
    for scale, color in (("latent", INK), ("observed", GREY)):
        values = table[scale].to_numpy()
        fig.add_trace(go.Bar(x=labels, y=values, name=f"{scale} scale", marker={"color": color},
                             error_y={**_error(values, table[f"{scale}_low"], table[f"{scale}_high"]), "color": INK},
                             hovertemplate=f"%{{x}}: %{{y:.2f}}<extra>{scale} scale</extra>"))
    fig.update_layout(title=title, barmode="group", yaxis={"title": "share of the variance", "range": [0, 1]},
                      height=400, legend={"orientation": "h", "y": -0.2})
    return fig


def flips_figure(flips, between_modes: dict, title: str):
    """The flip rate against each cell's own eager run, per perturbation, with the rate between the eager and the
    compiled run of the same cells beside them: a horizontal bar per setting (every one labelled, its count written
    beside it), its exact interval (runs as the unit) and, where the table has it, the interval that resamples cells
    (grey), each drawn as a marker at the rate with its whiskers, so that the legend shows both."""
    names = [*flips["setting"], "eager vs compiled (every cell)"]
    rates = [*flips["rate"], between_modes["rate"]]
    lows, highs = [*flips["low"], between_modes["low"]], [*flips["high"], between_modes["high"]]
    counts = [f"{f} of {n}" for f, n in zip(flips["flips"], flips["runs"])] + \
        [f"{between_modes['flips']} of {between_modes['runs']}"]
    colors = [identity(1) if kind == "nudge" else identity(2) for kind in flips["kind"]] + [GREY]
    at = np.arange(len(names), dtype=float)
    fig = go.Figure(go.Bar(y=at, x=rates, orientation="h", marker={"color": colors}, text=counts,
                           textposition="outside", textangle=0, cliponaxis=False, showlegend=False,
                           hovertemplate="%{text} flipped<extra></extra>"))
    fig.add_trace(go.Scatter(y=at - 0.18, x=rates, name="exact 95 % interval (runs)", mode="markers",
                             marker={"symbol": "line-ns-open", "size": 9, "color": INK, "line": {"width": 2}},
                             error_x={**_error(rates, lows, highs), "color": INK, "width": 3},
                             hovertemplate="%{x:.0%}, runs as the unit<extra></extra>"))
    if "cell_low" in flips:
        cell = list(flips["rate"])
        fig.add_trace(go.Scatter(y=at[:len(cell)] + 0.18, x=cell, name="95 % interval, cells resampled",
                                 mode="markers", marker={"symbol": "line-ns-open", "size": 9, "color": GREY,
                                                         "line": {"width": 2}},
                                 error_x={**_error(cell, flips["cell_low"], flips["cell_high"]), "color": GREY,
                                          "width": 3}, hovertemplate="%{x:.0%}, cells as the unit<extra></extra>"))
    fig.update_layout(title=title, xaxis={"title": "share of runs whose outcome flips", "range": [0, 1]},
                      height=160 + 42 * len(names),
                      yaxis={"tickvals": list(at), "ticktext": names, "autorange": "reversed", "automargin": True},
                      legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 0})
    return fig


def mode_trajectories_figure(metrics: dict, distances, title: str, names: dict | None = None):
    """Top: 1-var train accuracy of each mode's run ({mode: metrics}, each mode in its own colour: palette.mode_style;
    `names`: the words for a mode); bottom: the relative weight distance between modes per eval step (log scale)."""
    names = names or {}
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=("1-var train accuracy", "relative weight distance"))
    for mode, table in metrics.items():
        fig.add_trace(go.Scatter(x=table["step"], y=table["1var_train"], mode="lines", name=names.get(mode, mode),
                                 line=mode_style(mode)), 1, 1)
    for column in (c for c in distances.columns if c != "step"):
        fig.add_trace(go.Scatter(x=distances["step"], y=distances[column], mode="lines",
                                 name=column.replace("_vs_", " vs "), line=pair_style(column)), 2, 1)
    fig.update_yaxes(range=[0.3, 1.02], row=1, col=1)
    fig.update_yaxes(type="log", row=2, col=1)
    fig.update_xaxes(title_text="training step", row=2, col=1)
    fig.update_layout(title=title, height=620, legend={"orientation": "h", "y": -0.15})
    return fig
