"""One palette for every figure: a pool, a part of the circuit or a role has one colour wherever it is drawn, every
trace says its colour (none left to plotly's default cycle, whose blue meant a different thing in each chapter), and
the book's figure HTML neither plays by itself nor zooms on a scroll."""
import re

import numpy as np
import pandas as pd
import plotly.colors
import pytest

from assignadd_core.report import front_page, palette, plots
from assignadd_core.core.data import POOL_NAMES
from assignadd_core.measure.measures import MEASURE_NAMES
from assignadd_core.core.run_folder import DEFAULT_ROOT

PALETTE = {c.lower() for c in (*palette.QUERY_TYPE.values(), *palette.PARTS.values(), palette.INK, palette.PAPER,
                               palette.GREY, palette.LIGHT, *palette.ABLATED, *palette.IDENTITY)}
PLOTLY_DEFAULTS = {c.lower() for c in plotly.colors.qualitative.Plotly + plotly.colors.qualitative.D3}


def metrics(steps=(1, 101, 201)) -> pd.DataFrame:
    rows = {"step": list(steps)}
    rows.update({p: np.linspace(0.0, 1.0, len(steps)) for p in POOL_NAMES})
    rows.update({m: np.linspace(0.0, 1.0, len(steps)) for m in MEASURE_NAMES})
    return pd.DataFrame(rows)


def colours(fig) -> list[str]:
    """Every colour a figure's traces and shapes name (lines, markers, bars; lists of colours too)."""
    found = []
    for trace in fig.to_dict()["data"]:
        for part in ("line", "marker"):
            value = trace.get(part, {}).get("color")
            found += value if isinstance(value, list) else [value]
    return [c for c in found if isinstance(c, str)]


def uncoloured(fig) -> list[str]:
    """Scatter and bar traces that leave their colour to plotly's default cycle."""
    return [t.get("name") for t in fig.to_dict()["data"] if t.get("type") in ("scatter", "bar")
            and not t.get("line", {}).get("color") and not t.get("marker", {}).get("color")]


FIGURES = {
    "pools": lambda: plots.pool_curves_figure(metrics(), "t"),
    "pool grid": lambda: plots.pool_grid_figure({"seed42": metrics(), "seed43": metrics()}),
    "measures": lambda: plots.measures_figure(metrics(), {"jump": 101, "refinement": 201}, {"jump": (90, 110)}),
    "exact": lambda: plots.exact_figure({"seed42": {"0var_heldout": 0.99, "2var_union": 0.9}}, {"0var_heldout": 0.994}),
    "type mix": lambda: plots.type_mix_figure({"0-var": 0.3, "1-var (left)": 0.2, "2-var": 0.5},
                                              {"0-var": 0.3, "1-var (left)": 0.2, "2-var": 0.5}),
    "ablation": lambda: plots.ablation_figure(pd.DataFrame({"clean": [1.0], "zero-ablated": [0.1]}, index=["1var_train"]),
                                              "t"),
    "spectrum": lambda: plots.spectrum_figure({"W_E (number rows)": [0.5, 0.5], "W_out W_U": [0.2, 0.8]}, "t", key=[1]),
    "neurons": lambda: plots.neuron_r2_figure([0.9, 0.2], [1, 2], [True, False], "t"),
    "cosines": lambda: plots.cosine_histograms_figure({"p": {"matched": [0.9], "swapped": [0.8], "mismatched": [0.0]}},
                                                      "t"),
    "steering": lambda: plots.steering_figure({"seed 43": {"twin": metrics(), "steered": metrics(), "sham": metrics()}},
                                              {"seed 43": (101, 201)}, "t"),
    "lines": lambda: plots.lines_figure([1, 2], {"a": [0, 1], "b": [1, 0]}, "t", "x", "y", band=(1, 2)),
}


@pytest.mark.parametrize("name", FIGURES)
def test_every_trace_takes_its_colour_from_the_palette(name):
    fig = FIGURES[name]()
    assert not uncoloured(fig), f"{name}: traces left to plotly's default colours: {uncoloured(fig)}"
    found = {c.lower() for c in colours(fig)}
    assert found and found <= PALETTE | {palette.tint(c, 0.6).lower() for c in palette.QUERY_TYPE.values()}, \
        f"{name}: colours not from the palette: {sorted(found - PALETTE)}"
    assert not found & PLOTLY_DEFAULTS


def test_a_pool_and_a_part_keep_their_colour_from_figure_to_figure():
    lines = {t.name: t.line.color for t in plots.pool_curves_figure(metrics(), "t").data}
    assert lines["0-var train"] == palette.QUERY_TYPE[0] == palette.pool_colour("0var_heldout")
    assert lines["2-var var-restricted (2)"] == palette.QUERY_TYPE[2] == palette.pool_colour("2var_union")
    measures = {t.name: t.line.color for t in plots.measures_figure(metrics(), {}, {}).data}
    assert measures["2 layer-1 previous-token QK"] == measures["5 layer-1 value → previous token"] == palette.PARTS["copy"]
    assert measures["1 addition module alone"] == palette.PARTS["mlp"]
    bars = {t.name: t.marker.color for t in plots.spectrum_figure({"W_E (rows)": [1.0], "W_out W_U": [1.0]}, "t").data}
    assert bars == {"W_E (rows)": palette.PARTS["embed"], "W_out W_U": palette.PARTS["mlp"]}  # W_out before W_U
    meaning = [*palette.QUERY_TYPE.values(), *palette.PARTS.values(), palette.INK, palette.PAPER]
    assert len(set(meaning)) == len(meaning)  # no two meanings share a colour


def test_the_hero_figure_draws_the_pools_in_their_colours():
    html = front_page.hero_html(DEFAULT_ROOT / "seed42" / "metrics.csv")
    assert f'"color":"{palette.QUERY_TYPE[0]}"' in html and f'"color":"{palette.QUERY_TYPE[1]}"' in html
    assert '"scrollZoom":false' in html


def test_a_tint_is_a_lighter_shade_and_identities_cycle():
    assert palette.tint("#D55E00", 0) == "#d55e00" and palette.tint("#D55E00", 1) == "#ffffff"
    assert palette.identity(0) == palette.identity(len(palette.IDENTITY))


def test_a_maps_colour_bar_names_what_it_scores():
    maps = {"layer 1 QK: number → variable": np.eye(2), "layer 1 OV: number · variable": np.eye(2)}
    fig = plots.qk_map_pair_figure(maps, ["a", "b"], ["a", "b"], "t")
    assert [t.colorbar.title.text for t in fig.data] == ["QK score", "OV score"]
    fig = plots.qk_map_pair_figure(maps, ["a", "b"], ["a", "b"], "t", scale_title="attention")
    assert {t.colorbar.title.text for t in fig.data} == {"attention"}


def test_the_books_figure_html_does_not_play_or_zoom_on_scroll():
    import plotly.graph_objects as go
    import plotly.io as pio
    plots.setup_plotly()
    fig = go.Figure(go.Scatter(x=[1, 2], y=[1, 2]), frames=[go.Frame(data=[go.Scatter(y=[2, 1])], name="1")])
    html = pio.renderers._build_mime_bundle(fig.to_dict())["text/html"]
    assert "Plotly.animate" not in html and "addFrames" in html  # the frames are there, the slider moves them
    config = re.search(r"Plotly\.newPlot\(.*?\{(\"responsive\".*?)\}\s*\)", html, re.S)
    assert config and '"scrollZoom": false' in config.group(1).replace('":false', '": false')


def test_the_numerical_modes_have_their_own_colours_not_a_seeds():
    from assignadd_core.report import plots_odds
    runs = {m: metrics() for m in ("eager", "compiled", "fp64", "compiled_mlp")}
    distances = pd.DataFrame({"step": [1, 101], "compiled_vs_eager": [1e-7, 0.1], "eager_vs_fp64": [1e-7, 0.2]})
    fig = plots_odds.mode_trajectories_figure(runs, distances, "t", names={"compiled_mlp": "the MLP compiled"})
    lines = {t.name: (t.line.color, t.line.dash) for t in fig.data}
    assert lines["eager"][0] == palette.MODE_COLORS["eager"] and lines["fp64"][0] == palette.MODE_COLORS["fp64"]
    assert lines["compiled"] == (palette.MODE_COLORS["compiled"], "solid")
    assert lines["the MLP compiled"] == (palette.MODE_COLORS["compiled"], "dash")  # a stage: compiled's colour
    assert lines["compiled vs eager"][0] == palette.MODE_COLORS["compiled"]
    assert lines["eager vs fp64"][0] == palette.MODE_COLORS["fp64"]
    assert not {palette.MODE_COLORS["compiled"], palette.MODE_COLORS["fp64"]} & set(palette.IDENTITY)
    modes = [*palette.MODE_COLORS.values(), *palette.QUERY_TYPE.values(), *palette.PARTS.values()]
    assert len(set(modes)) == len(modes)


def test_the_flips_figure_labels_every_bar_and_shows_its_legend_symbols():
    from assignadd_core.report import plots_odds
    flips = pd.DataFrame({"setting": [f"nudge 1e-0{k} at step 0" for k in range(1, 8)], "kind": ["nudge"] * 7,
                          "rate": [0.1] * 7, "low": [0.0] * 7, "high": [0.3] * 7, "flips": [1] * 7, "runs": [8] * 7,
                          "cell_low": [0.0] * 7, "cell_high": [0.4] * 7})
    fig = plots_odds.flips_figure(flips, {"rate": 0.05, "low": 0.0, "high": 0.1, "flips": 3, "runs": 64}, "t")
    bars = fig.data[0]
    assert bars.orientation == "h" and len(fig.layout.yaxis.ticktext) == len(bars.y) == 8  # a label per bar
    assert bars.textposition == "outside" and bars.textangle == 0  # counts beside the bars, upright
    for trace in fig.data[1:]:  # the intervals' legend symbols are drawn, not 1-px transparent markers
        assert trace.showlegend is not False and trace.marker.size >= 6 and trace.marker.color in (palette.INK, palette.GREY)


def test_the_rescue_figure_names_its_arms_in_words():
    fig = plots.rescue_figure({"fewer_2var_queries": metrics((39001, 40001, 41001)),
                               "redraw_layer1_qk": metrics((39001, 40001, 41001))}, 40000, "t")
    assert [t.name for t in fig.data] == ["fewer 2-var queries for a while", "layer-1 QK re-drawn"]


def test_the_replicate_grid_writes_its_counts_in_a_fixed_readable_font():
    from assignadd_core.report import plots_odds
    table = pd.DataFrame({"init": [1, 1, 2, 2], "data": [10, 10, 10, 10], "composed": [True, False, True, True]})
    fig = plots_odds.replicate_count_figure(table, [1, 2], [10], "t")
    assert fig.data[0].textfont.size >= 12 and [row[0] for row in fig.data[0].text] == ["1", "2"]
