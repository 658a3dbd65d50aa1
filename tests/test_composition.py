"""The composition study's statistics on tables whose answers are known."""
import numpy as np
import pandas as pd
import pytest

from assignadd_core.analysis import composition as comp
from assignadd_core.rules.stats import Rate
from test_phases import synthetic


def factorial(decider: str) -> pd.DataFrame:
    composers, failers = (1, 2, 3, 4), (5, 6, 7, 8)
    rows = []
    for init in composers + failers:
        for data in composers + failers:
            ok = {"init": init in composers, "data": data in composers, "none": (init + data) % 2 == 0}[decider]
            rows.append({"key": f"{init}-{data}", "init": init, "data": data, "composed": ok})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("decider, answer", [("init", "the initialization"), ("data", "the data order"),
                                             ("none", "neither alone (their combination, or chance)")])
def test_the_factorial_names_what_decides(decider, answer):
    table = factorial(decider)
    result = comp.factorial_answer(table, (1, 2, 3, 4), (5, 6, 7, 8))
    assert result["answer"] == answer
    blocks = comp.factorial_blocks(table, (1, 2, 3, 4), (5, 6, 7, 8))
    assert blocks.shape == (2, 2) and all(c.trials == 16 for c in blocks.to_numpy().ravel())


def test_both_effects_and_a_reversed_effect_are_not_confused():
    table = factorial("init")
    table["composed"] = table["init"].isin((1, 2, 3, 4)) & table["data"].isin((1, 2, 3, 4))
    assert comp.factorial_answer(table, (1, 2, 3, 4), (5, 6, 7, 8))["answer"] == ("both the initialization and the"
                                                                                 " data order")
    reversed_ = factorial("init")
    reversed_["composed"] = ~reversed_["composed"]  # failers' inits compose: a difference, not "composers win"
    assert comp.factorial_answer(reversed_, (1, 2, 3, 4), (5, 6, 7, 8))["answer"].startswith("neither")


def test_counts_fisher_and_ecdf():
    assert comp.count([True, False, True]).describe().startswith("2 of 3 (67%; 95 % interval")
    assert comp.fisher(Rate(5, 10), Rate(35, 40)) < 0.05
    assert comp.fisher(Rate(5, 10), Rate(20, 40)) == pytest.approx(1.0)
    x, y = comp.ecdf([3000, None, 2700, 5700])
    assert x.tolist() == [2700, 3000, 5700] and y.tolist() == pytest.approx([1 / 3, 2 / 3, 1])


def test_auc_and_roc():
    assert comp.auc([0.9, 0.8, 0.1, 0.2], [True, True, False, False]) == 1.0
    assert comp.auc([0.5, 0.5], [True, False]) == 0.5
    assert np.isnan(comp.auc([0.1], [True]))
    fpr, tpr = comp.roc_curve([0.9, 0.8, 0.1, 0.2], [True, True, False, False])
    assert (fpr[0], tpr[0], fpr[-1], tpr[-1]) == (0.0, 0.0, 1.0, 1.0) and tpr[2] == 1.0 and fpr[2] == 0.0


def test_early_predictor_picks_the_separating_feature_and_its_earliest_step():
    rng = np.random.default_rng(0)
    labels = pd.Series([True] * 10 + [False] * 10, index=[f"r{i}" for i in range(20)])
    metrics = {}
    for i, key in enumerate(labels.index):
        steps = np.arange(1, 3002, 100)
        signal = (0.8 if labels[key] else 0.2) * (steps >= 1001)  # separates from step 1,001 on
        metrics[key] = pd.DataFrame({"step": steps, "good": signal + rng.normal(0, 0.01, len(steps)),
                                     "noise": rng.normal(0, 1, len(steps))})
    features = comp.feature_table(metrics, ["good", "noise"], [501, 1001, 2001])
    fit, test = labels.index[::2], labels.index[1::2]
    result = comp.early_predictor(features, labels, fit, test)
    assert result["best"]["quantity"] == "good" and result["best"]["step"] == 1001
    assert result["earliest"]["step"] == 1001 and result["earliest"]["test_auc"] == 1.0


def test_the_earliest_step_must_hold_to_the_end():
    """A step whose held-out AUC reaches the level once and falls again is not where prediction starts."""
    import pandas as pd
    labels = pd.Series([True, True, False, False, True, True, False, False], index=list("abcdefgh"))
    good = [0.9, 0.8, 0.1, 0.2, 0.9, 0.8, 0.1, 0.2]
    chance = [0.9, 0.1, 0.8, 0.2, 0.1, 0.9, 0.2, 0.8]  # separates the fitting half only
    features = pd.DataFrame({("q", 101): good, ("q", 201): chance, ("q", 301): good}, index=labels.index)
    features.columns = pd.MultiIndex.from_tuples(features.columns)
    result = comp.early_predictor(features, labels, list("abcd"), list("efgh"))
    assert result["per_step"]["test_auc"].tolist()[0] == 1.0 and result["earliest"]["step"] == 301


def test_study_table_reads_records_and_metrics():
    records = pd.DataFrame([{"key": "a", "status": "done", "seed": 43, "init_seed": 42.0, "1var_train": 0.99},
                            {"key": "b", "status": "done", "seed": 45, "init_seed": np.nan, "1var_train": 0.55},
                            {"key": "c", "status": "error", "seed": 46, "init_seed": np.nan, "1var_train": np.nan}])
    table = comp.study_table(records, {"a": synthetic(jump=3000)})
    assert table[["data", "init", "composed"]].values.tolist() == [[43, 42, True], [45, 45, False]]
    assert abs(table.loc[0, "jump"] - 3000) <= 200 and pd.isna(table.loc[1, "jump"])


def test_outcome_changes_pairs_the_seeds_both_settings_ran():
    near = pd.DataFrame({"data": [1, 2, 3, 4], "composed": [True, True, False, True]})
    paper = pd.DataFrame({"data": [1, 2, 3, 5], "composed": [True, False, True, False]})
    changes = comp.outcome_changes(near, paper)  # seeds 1-3 only
    assert (changes["near"].successes, changes["near"].trials) == (2, 3)
    assert (changes["paper"].successes, changes["paper"].trials) == (2, 3)
    assert changes["stuck_to_composed"] == 1 and changes["composed_to_stuck"] == 1
    assert changes["p"] == 1.0 and changes["moves"] == "no change shown"


def _paired(near_flags, paper_flags, steps=None):
    seeds = range(len(near_flags))
    near = pd.DataFrame({"data": seeds, "composed": near_flags, "composition": steps or [None] * len(near_flags)})
    return comp.outcome_changes(near, pd.DataFrame({"data": seeds, "composed": paper_flags}), by_step=12_000)


def test_a_setting_moves_the_rate_only_when_the_seeds_move_one_way():
    # six stuck seeds all compose under the other setting: p = 2 / 2**6 = 0.031
    raised = _paired([True] * 10, [True] * 4 + [False] * 6)
    assert raised["moves"] == "raises the rate" and abs(raised["p"] - 0.03125) < 1e-9
    lowered = _paired([False] * 6 + [True] * 4, [True] * 10)
    assert lowered["moves"] == "lowers the rate"
    # the null: as many seeds move each way, or too few move
    assert _paired([True, False] * 5, [False, True] * 5)["moves"] == "no change shown"
    assert _paired([True] * 5 + [False] * 5, [True] * 3 + [False] * 7)["moves"] == "no change shown"


def test_composed_by_a_step_counts_only_composed_runs_that_got_there_in_time():
    changes = _paired([True, True, True, False], [True, True, False, False], steps=[5_000, 12_000, 20_001, None])
    assert (changes["near_by_step"].successes, changes["near_by_step"].trials) == (2, 4)


def test_the_old_factorial_read_with_the_initialization_as_unit():
    inits = (1, 2, 3, 4, 5, 6, 7, 8)
    rows = [{"init": i, "data": d, "composed": i <= 4} for i in inits for d in inits if (inits.index(i) + inits.index(d)) % 2 == 0]
    out = comp.factorial_by_initialization(pd.DataFrame(rows), inits[:4], inits[4:])
    assert out["counts"]["composers"].successes == out["counts"]["composers"].trials == 12  # 4 x 3, no diagonal
    assert out["counts"]["failers"].successes == 0
    assert out["permutation_p"] == pytest.approx(2 / 70)  # only the two extreme labellings are as extreme
    assert out["mann_whitney_p"] == pytest.approx(2 / 70)
    same = comp.factorial_by_initialization(pd.DataFrame([{**r, "composed": True} for r in rows]), inits[:4], inits[4:])
    assert same["permutation_p"] == 1.0


def test_the_predictor_is_chosen_on_training_seeds_and_scored_on_new_ones():
    rng = np.random.default_rng(0)
    cols = pd.MultiIndex.from_tuples([("good", 101), ("noise", 101), ("good", 201)], names=["quantity", "step"])
    def frame(n, labels):
        data = np.column_stack([labels + rng.normal(0, 0.1, n), rng.normal(0, 1, n), labels + rng.normal(0, 0.1, n)])
        return pd.DataFrame(data, columns=cols)
    train_labels, test_labels = pd.Series(rng.random(40) < 0.5), pd.Series(rng.random(32) < 0.5)
    out = comp.predictor_on_new_seeds(frame(40, train_labels.to_numpy()), train_labels, frame(32, test_labels.to_numpy()),
                                      test_labels, pd.Series(np.repeat(np.arange(8), 4)), n_boot=200)
    assert out["best"]["quantity"] == "good" and out["best"]["step"] == 101  # earliest of the tied best
    assert out["test_auc"] == 1.0 and out["interval"] == (1.0, 1.0)


def test_mode_pairs_flip_tables_and_the_saving():
    from assignadd_core.analysis import odds
    rows = []
    for i, (eager, compiled) in enumerate([(True, True), (False, True), (False, False), (True, True)]):
        for mode, c in (("eager", eager), ("compiled", compiled)):
            rows.append({"init": i, "data": 10 + i, "mode": mode, "composed": c, "last_step": 4000 if c else 12000,
                         "step_budget": 12000, "wall_time_s": 100.0 if c else 300.0})
    table = pd.DataFrame(rows)
    out = odds.mode_comparison(table)
    assert (out["cells"], out["only_compiled"], out["only_eager"]) == (4, 1, 0) and out["flips"]["flips"] == 1
    saving = odds.early_stop_saving(table)
    assert saving["stopped"] == 5 and saving["cpu_h_without"] > saving["cpu_h"]
    perturbed = pd.DataFrame([{"init": 0, "data": 10, "composed": False, "jitter": 1e-4, "jitter_step": 0,
                               "grad_noise": 0.0}, {"init": 1, "data": 11, "composed": False, "jitter": 1e-4,
                               "jitter_step": 0, "grad_noise": 0.0},
                              {"init": 0, "data": 10, "composed": True, "jitter": 0.0, "jitter_step": 0,
                               "grad_noise": 1e-7}])
    flips = odds.flip_table(perturbed, table).set_index("setting")
    assert flips.loc["nudge 1e-04 at step 0", "flips"] == 1 and flips.loc["nudge 1e-04 at step 0", "runs"] == 2
    assert flips.loc["gradient noise 1e-07 every step", "flips"] == 0


def test_stream_overlap_tells_a_near_setting_from_another_data_order():
    from assignadd_core.core.config import TaskConfig
    task = TaskConfig(modulus=7, n_vars=4, n_left_only=1, n_right_only=1, pool_size=50)
    same = comp.stream_overlap(task, task, 3, range(1, 3), batch_size=16)
    assert same == {"same_layout": 1.0, "same_tokens": 1.0}
    near = comp.stream_overlap(TaskConfig(**{**task.__dict__, "train_fraction": 0.6}), task, 3, range(1, 3), 16)
    assert near["same_layout"] == 1.0 and near["same_tokens"] < 1.0  # another f: the same layout, other pairs
    from assignadd_core.core.data import TrainStream
    a, b = TrainStream(task, 16, 3).batch(1)[0], TrainStream(task, 16, 4).batch(1)[0]
    assert (a == b).float().mean() < near["same_tokens"]  # another seed shares far less


def test_study_table_of_a_sweep_not_run_yet_has_the_columns_and_no_rows():
    table = comp.study_table(pd.DataFrame(), {})  # results_frame of a sweep with no records: no columns at all
    assert table.empty and {"key", "data", "init", "composed", "composition"} <= set(table.columns)
    assert comp.count(table["composed"]).describe() == "no runs"
