"""The composition chapter's phrases (report.composition_words) and the readings they come from
(report.composition_study): each phrase follows its numbers, and a reading that is not there gives a phrase, never
a missing name."""
import pandas as pd
from assignadd_core.analysis import odds
from assignadd_core.report import composition_study as study
from assignadd_core.report import composition_words as words
from assignadd_core.rules.stats import rate


def cells_table(outcomes: dict) -> pd.DataFrame:
    """{(init, data): (eager composed, compiled composed)} as a design's whole cells."""
    rows = [{"init": i, "data": d, "mode": mode, "composed": bool(c)}
            for (i, d), both in outcomes.items() for mode, c in zip(("eager", "compiled"), both)]
    return pd.DataFrame(rows)


def design_reading(replicated_p=None, shares=True):
    cells = cells_table({(1, 10): (1, 1), (1, 20): (1, 1), (2, 10): (0, 1), (2, 20): (0, 0)})
    per_init = cells.groupby("init")["composed"].agg(["sum", "count", "mean"]).rename(columns={"mean": "rate"})
    part = {"initialization": (0.67, 0.35, 0.91), "data order": (0.02, 0.0, 0.27), "the pair": (0.24, 0.06, 0.55),
            "a run's own chance": (0.02, 0.01, 0.08)}
    return {"cells": cells, "whole": 2, "n_replicated": 2, "fitted_on": "the replicated design",
            "replicated_p": replicated_p if replicated_p is not None else {"init": 0.0001, "data": 0.18, "cell": 0.0005},
            "p_values": {"init": 0.0002, "data": 0.34, "cell": 0.066}, "per_init": per_init.reset_index(),
            "per_data": cells.groupby("data")["composed"].agg(["sum", "count"]).reset_index(),
            "shares": part if shares else {}, "observed": part if shares else {}, "other_scales": [0.5, 25.0],
            "probabilities": pd.DataFrame({"init": [1, 2], "probability": [0.9, 0.3], "low": [0.6, 0.05],
                                           "high": [0.99, 0.7]}) if shares else None}


def test_initializations_split_often_from_rarely_and_find_the_data_orders_that_rescue():
    found = study.initializations(design_reading())
    assert found["high"] == [1] and found["low"] == [2] and found["rarely"] is True  # 1 of 4 runs
    assert found["where"][2] == {"both": [], "once": [10]} and found["rescuers"] == [10]


def test_r2_phrases_follow_the_tests_and_the_model():
    D = design_reading()
    found = words.r2(D, study.initializations(D), {"part": "a run's own chance", "scale": "observed",
                                                   "prior_scale": 25.0, "from": 0.17, "to": 0.10, "move": 0.07})
    assert found["rep_init"] == "shown (p = 0.0001)" and found["rep_data"] == "not shown (p = 0.18)"
    assert found["try_what"] == "try several initializations" and found["carries"] == "does not carry"
    assert found["low_often"] == "rarely" and found["rescuers"] == "only 10 does"
    assert found["low_where"] == "2 composes on data order 10 once"
    assert words._where(1029, [4315, 7157], [2460]) == "1029 composes on data orders 4315 and 7157 in both modes and on 2460 once"
    assert words._where(8680, [], []) == "8680 composes on no data order"
    assert found["prior_move"] == "0.07" and found["prior_most"].endswith("0.17 → 0.10 at 25")
    assert found["init_latent"] == "0.67 (0.35–0.91)" and found["own_observed"] == "0.02"
    neither = words.r2(design_reading({"init": 0.3, "data": 0.4, "cell": 0.6}), study.initializations(D), None)
    assert neither["try_what"] == "neither factor is shown to decide" and neither["carries"] == "may carry"
    assert neither["prior_move"] == "–"


def test_r2_phrases_without_a_fit_or_tests_are_phrases_too():
    D = {**design_reading(shares=False), "replicated_p": None, "p_values": None}
    found = words.r2(D, study.initializations(D), None)
    assert found["rep_cell"] == words.NOT_READ and found["init_latent"] == "–" and found["latent_shares"] == "none"


def test_the_largest_prior_move_is_read_from_the_shares_as_printed():
    # the review's case: 0.1651 -> 0.1012 moves 0.064 unrounded (0.06) but 0.17 -> 0.10 as the table prints it
    table = pd.DataFrame([{"prior_scale": s, "part": p, "latent": lat, "observed": obs}
                          for s, p, lat, obs in [(2.5, "init", 0.67, 0.44), (2.5, "own", 0.02, 0.1651),
                                                 (25.0, "init", 0.70, 0.45), (25.0, "own", 0.02, 0.1012),
                                                 (0.5, "init", 0.66, 0.43), (0.5, "own", 0.03, 0.16)]])
    move = study.prior_move(table)
    assert (move["part"], move["scale"], move["prior_scale"]) == ("own", "observed", 25.0)
    assert (move["from"], move["to"], move["move"]) == (0.17, 0.10, 0.07)


def flip_rows(cells_with_a_flip=3):
    return pd.DataFrame([
        {"kind": "nudge", "step": 0, "flips": 5, "runs": 24, "size": 1e-7, "cells": 8, "cells_with_a_flip": cells_with_a_flip},
        {"kind": "nudge", "step": 1000, "flips": 0, "runs": 16, "size": 1e-4, "cells": 8, "cells_with_a_flip": 0},
        {"kind": "gradient noise", "step": 0, "flips": 2, "runs": 16, "size": 1e-5, "cells": 8, "cells_with_a_flip": 8}])


def test_flip_phrases_say_whether_the_flips_gather_and_whether_the_two_rules_agree():
    M = {"eager": rate([True] * 50 + [False] * 14), "compiled": rate([True] * 51 + [False] * 13), "only_compiled": 2,
         "only_eager": 1, "p": 1.0, "flips": {"flips": 3, "runs": 64, "rate": 3 / 64, "low": 0.01, "high": 0.13}}
    basin = {"p": 0.75, "reading": "chaotic", "cells": 8, "mean_difference": 0.0,
             "by_runs": {"p": 0.64, "reading": "chaotic"}}
    found = words.flips(M, {"rows": flip_rows(), "basin": basin, "differ": 2}, (0.65, -1.54, 3.01))
    assert found["uneven"] == "are not spread evenly over" and found["fisher_same"] == "the same"
    assert found["at0_list"] == "5 of 24 at 1e-7 (in 3 of 8 cells)" and found["smallest_p"] == "0.25"
    assert found["agree_k"] == "61 of 64 cells" and found["mode_tested"] == "not shown (p = 1)"
    assert found["basin_tested"] == "not shown (p = 0.75)" and found["mode_effect"] == "+0.65 (-1.54 to +3.01)"
    other = {**basin, "by_runs": {"p": 0.01, "reading": "basin-like"}}
    found = words.flips(M, {"rows": flip_rows(8), "basin": other, "differ": 8}, (0.0, 0.0, 0.0))
    assert found["uneven"] == "are spread over all of" and found["fisher_same"] == "basin-like"
    empty = words.flips(None, {"rows": pd.DataFrame(), "basin": None, "differ": 0}, (float("nan"),) * 3)
    assert empty["basin_reading"] == words.NOT_READ and empty["at0_list"] == "none"


def test_mode_phrases_follow_what_each_mode_did():
    runs = pd.DataFrame([{"mode": m, "precision": "fp64" if m == "fp64" else "fp32", "composed": m == "fp64",
                          "one_var_train": 0.998 if m == "fp64" else 0.57, "composition": 2201 if m == "fp64" else None}
                         for m in ("eager", "compiled", "fp64")])
    distances = pd.DataFrame({"step": [1, 101, 1001, 3001], "compiled_vs_eager": [1.8e-7, 0.04, 0.34, 0.43],
                              "eager_vs_fp64": [2.7e-7, 0.05, 0.40, 0.56]})
    MS = {"runs": runs, "loss_equal": [], "differences": None, "replay": None, "distances": distances}
    found = words.modes(MS, 58, lambda c, s: study.distance_at(distances, c, s))
    assert found["fp32_k"] == "none of the 2 fp32 modes" and found["fp64_outcome"] == "composes"
    assert found["fp64_step"] == "2,201" and found["fp64_pace"] == "at least as fast"
    assert found["d_list"] == "4 % by step 101, 34 % by step 1,001 and 43 % by step 3,001"
    slower = distances.assign(eager_vs_fp64=[1e-7, 0.01, 0.1, 0.2])
    found = words.modes({**MS, "runs": runs.assign(composed=False), "distances": slower}, 58,
                        lambda c, s: study.distance_at(slower, c, s))
    assert found["fp64_outcome"] == "does not compose" and found["fp64_pace"] == "more slowly"
    assert found["loss_equal"] == "none" and found["grad_diff"] == "–"


def test_predictor_rescue_and_power_phrases():
    found = {"best": {"quantity": "m5_l1_value_prev_token", "step": 1701, "train_auc": 1.0}, "test_auc": 0.92,
             "interval": (0.80, 0.99), "train": range(32), "test": range(128), "last_step": 2001}
    phrases = words.predictor(found, 2101)
    assert phrases["best_quantity"] == "measure 5, layer-1 copying"  # a measure by its number and role
    assert phrases["perfectly"] == "but not perfectly" and phrases["earliest_side"] == "after"
    assert words.predictor({**found, "test_auc": 1.0}, 1501)["perfectly"] == "and perfectly"
    assert words.predictor(None, None)["best_quantity"] == "–"
    arms = {"arms": {"continue": None, "higher_lr": None}, "rescued": [], "steps": [10_000, 10_000]}
    saving = {"stopped": 101, "runs": 128, "steps_share": 0.5, "cpu_h": 5.7, "cpu_h_without": 11.5}
    phrases = words.rescue_and_saving(arms, saving)
    assert phrases["rescued_k"] == "none of the 2 interventions" and phrases["stopped_k"] == "101 of 128 runs"
    assert words.rescue_and_saving({**arms, "rescued": ["higher_lr"]}, saving)["rescued_k"] == "1 of 2 interventions"
    assert set(words.power(None).values()) == {"–"} and len(words.power(None)) == len(words.POWER_NAMES)


def test_design_phrases_name_the_latest_composition_of_the_replicates_too():
    main = {"main": {42: 0, 43: 0, 44: 0}, "stuck": [43], "continued": [43], "late": [], "composed": {42: 2701, 44: 5701},
            "steps": 40_000}
    kinds = {"at_0": [(1e-7, 3), (1e-2, 3)], "later": [(1e-4, 1000, 2)], "noise": [(1e-5, 2)]}
    found = words.design(main, kinds, (["CPU"], ["compiled"]), 12_000, 5, 120_000,
                         pd.DataFrame({"composition": [2701.0, 8901.0, None]}),
                         pd.DataFrame({"composition": [10101.0, 11701.0]}), {"design": 128, "replicates": 128, "flips": 136})
    assert found["design_latest"] == "8,901" and found["nudged_latest"] == "11,701"
    assert found["late_k"] == "not the one seed" and found["main_by"] == "by step 5,701"
    assert found["nudges_at_0"] == "1e-7 and 1e-2" and found["replicate_devices"] == "CPU, compiled"


def test_the_arms_have_display_names_and_their_settings_in_words():
    table = study.arm_settings()
    assert "fewer 2-var queries for a while" in table.index and "fewer_2var_queries" not in table.index
    assert table.loc["fewer 2-var queries for a while", "what it changes"].startswith("2-var rate r = 0.1 for 2,000 steps")


def test_a_sensitivity_move_and_a_distance_read_the_last_step_at_or_before():
    distances = pd.DataFrame({"step": [1, 101, 1001], "a_vs_b": [0.1, 0.2, 0.3]})
    assert study.distance_at(distances, "a_vs_b", 500) == 0.2 and study.distance_at(distances, "a_vs_b", 1001) == 0.3
    assert list(study.distance_table(distances).columns) == ["step 1", "step 1,001"]
    assert odds.SD_PRIOR_SCALE == 2.5  # the main scale the moves are read from
