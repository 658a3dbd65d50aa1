"""The composition study's and the thresholds' new figures draw what they are given (none silently plots nothing)."""
import numpy as np
import pandas as pd

from assignadd_core.report import plots
from assignadd_core.analysis import composition as comp


def test_ecdf_and_rescue_figures_carry_every_curve():
    fig = plots.ecdf_figure({"a": comp.ecdf([2700, 3000, 5700]), "b": comp.ecdf([4000])}, "t", "x", band=(5300, 5400))
    assert [len(t.x) for t in fig.data] == [3, 1] and fig.layout.shapes[0].x0 == 5300
    arms = {"continue": pd.DataFrame({"step": [38001, 40000, 45000], "1var_train": [0.57, 0.57, 0.58]}),
            "lr": pd.DataFrame({"step": [40000, 45000], "1var_train": [0.57, 0.99]})}
    fig = plots.rescue_figure(arms, 40000, "t")
    assert [t.name for t in fig.data] == ["continue unchanged", "lr"]  # an arm by its display name and list(fig.data[1].y) == [0.57, 0.99]


def test_outcome_grid_places_each_run_in_its_cell():
    table = pd.DataFrame({"init": [42, 43], "data": [44, 42], "one_var_train": [1.0, 0.55]})
    fig = plots.outcome_grid_figure(table, (42, 44, 43, 45), (42, 44, 43, 45), "t")
    z = np.array(fig.data[0].z, dtype=float)
    assert z[0, 1] == 1.0 and z[2, 0] == 0.55 and np.isnan(z).sum() == 14
    assert fig.data[0].text[0][1] == "composed" and fig.data[0].text[2][0] == "stuck"


def test_predictor_and_composition_rate_figures():
    labels = pd.Series([True, True, False, False], index=list("abcd"))
    features = pd.DataFrame({("loss", 101): [0.1, 0.2, 0.8, 0.9]}, index=list("abcd"))
    features.columns = pd.MultiIndex.from_tuples(features.columns)
    per_step = pd.DataFrame({"step": [101], "quantity": ["loss"], "fit_auc": [1.0], "test_auc": [1.0], "sign": [-1.0]})
    fig = plots.predictor_figure(per_step, features, labels, list("abcd"), per_step.iloc[0].to_dict(), "t")
    assert "AUC 1.00" in fig.data[2].name
    rates = pd.DataFrame({"f": [0.1, 0.2], "composed": [1, 2], "runs": [2, 2], "rate": [0.5, 1.0],
                          "low": [0.01, 0.16], "high": [0.99, 1.0]})
    fig = plots.composition_rate_figure({"f": (rates, "f"), "r": (rates.rename(columns={"f": "r"}), "r")}, "t")
    assert len(fig.data) == 2 and list(fig.data[0].text) == ["1 of 2", "2 of 2"]


def test_circuit_slider_has_one_frame_per_step_and_both_maps():
    rows = {}
    for step, scale in ((101, 0.0), (201, 1.0)):
        row = {f"qk_{i}_{j}": scale * (i == j) for i in range(12) for j in range(12)}
        row.update({f"l1_{q}_{k}": 1.0 / (q + 1) for q in range(16) for k in range(16)})
        rows[step] = row
    maps = pd.DataFrame.from_dict(rows, orient="index")
    fig = plots.circuit_slider_figure(maps, list("abcdefghijkl"), [f"{p}:t" for p in range(16)], "t")
    assert [f.name for f in fig.frames] == ["101", "201"] and len(fig.layout.sliders[0].steps) == 2
    last_qk = np.array(fig.frames[1].data[1].z, dtype=float)
    assert np.allclose(np.diag(last_qk), 1.0) and np.isnan(np.array(fig.frames[1].data[0].z, dtype=float)[0, 1])


def test_circuit_slider_shows_each_steps_pool_accuracies_when_given():
    rows = {step: {**{f"qk_{i}_{j}": float(i == j) for i in range(12) for j in range(12)},
                   **{f"l1_{q}_{k}": 0.5 for q in range(16) for k in range(16)}} for step in (1, 501)}
    maps = pd.DataFrame.from_dict(rows, orient="index")
    pools = pd.DataFrame({"1var_train": [0.1, 0.9], "2var_train": [0.0, 0.4]}, index=[1, 501])
    fig = plots.circuit_slider_figure(maps, list("abcdefghijkl"), [f"{p}:t" for p in range(16)], "t", pools=pools)
    assert len(fig.data) == 3 and all(len(f.data) == 3 for f in fig.frames)
    assert list(fig.frames[1].data[2].x) == [0.9, 0.4] and "_" not in "".join(fig.frames[1].data[2].y)
    assert list(fig.data[2].x) == [0.9, 0.4] and fig.layout.sliders[0].active == 1  # it opens on the last step


def test_circuit_slider_keeps_one_frame_for_a_step_given_twice():
    """The last checkpoint and the final model share the run's last step: one frame, the final model's numbers."""
    rows = [{**{f"qk_{i}_{j}": float(i == j) * k for i in range(12) for j in range(12)},
             **{f"l1_{q}_{kk}": 0.5 for q in range(16) for kk in range(16)}} for k in (1, 2, 3)]
    maps = pd.DataFrame(rows, index=[1, 501, 501])
    pools = pd.DataFrame({"1var_train": [0.1, 0.5, 0.9]}, index=[1, 501, 501])
    fig = plots.circuit_slider_figure(maps, list("abcdefghijkl"), [f"{p}:t" for p in range(16)], "t", pools=pools)
    assert [f.name for f in fig.frames] == ["1", "501"] and list(fig.frames[1].data[2].x) == [0.9]



def test_steering_figure_has_a_panel_per_seed_and_each_arm_once_in_the_legend():
    curve = pd.DataFrame({"step": [1, 101, 201], "1var_train": [0.1, 0.5, 0.95]})
    curves = {"seed 43": {"twin": curve, "steered": curve, "sham": curve}, "seed 45": {"twin": curve, "steered": curve}}
    fig = plots.steering_figure(curves, {"seed 43": (101, 201), "seed 45": (101, 201)}, "t")
    assert len(fig.data) == 5 and [t.name for t in fig.data if t.showlegend] == ["twin", "steered", "sham"]
    assert {t.yaxis for t in fig.data} == {"y", "y2"} and len(fig.layout.shapes) == 4  # a band and a level line each


def test_circuit_slider_keeps_each_maps_colour_range_over_every_step():
    """A colour means the same number at every step: the QK map's range is its largest score over all steps."""
    rows = {step: {**{f"qk_{i}_{j}": scale * (i == j) - 0.1 for i in range(12) for j in range(12)},
                   **{f"l1_{q}_{k}": 0.5 for q in range(16) for k in range(16)}} for step, scale in ((1, 0.2), (501, 3.0))}
    maps = pd.DataFrame.from_dict(rows, orient="index")
    fig = plots.circuit_slider_figure(maps, list("abcdefghijkl"), [f"{p}:t" for p in range(16)], "t")
    ranges = [[(trace.zmin, trace.zmax) for trace in frame.data] for frame in fig.frames]
    assert ranges[0] == ranges[1] == [(0.0, 1.0), (-2.9, 2.9)]
    assert (fig.data[1].zmin, fig.data[1].zmax) == (-2.9, 2.9)
