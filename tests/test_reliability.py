"""Phase statistics over seeds, on synthetic curves with known transitions."""
import pytest

from assignadd_core.analysis import reliability
from assignadd_core.experiments.named_runs import seed_runs
from test_phases import synthetic


def test_phase_steps_and_statistics():
    runs = {"a": synthetic(jump=3000, refinement=9000), "b": synthetic(jump=5000, refinement=15000),
            "c": synthetic(jump=60000, refinement=80000)}  # never jumps within 40,000 steps
    steps = reliability.phase_steps(runs)
    assert steps["composed"].tolist() == [True, True, False]
    assert steps["all_three"].tolist() == [True, True, False]
    stats = reliability.step_statistics(steps)
    assert stats.loc["jump", "runs"] == 2
    assert abs(stats.loc["jump", "median"] - 4000) <= 200
    assert abs(stats.loc["jump", "min"] - 3000) <= 200 and abs(stats.loc["jump", "max"] - 5000) <= 200
    assert stats.loc["addition", "runs"] == 3


@pytest.mark.parametrize("k, n, low, high", [(9, 10, 0.555, 0.9975), (10, 10, 0.6915, 1.0), (0, 10, 0.0, 0.3085)])
def test_clopper_pearson_interval(k, n, low, high):
    rate = reliability.composition_rate(k, n)
    assert rate.value == k / n
    assert rate.low == pytest.approx(low, abs=1e-3) and rate.high == pytest.approx(high, abs=1e-3)
    assert f"{k} of {n}" in rate.describe()


def test_shortcut_rules_on_sequences_where_they_disagree():
    import handbuilt
    from assignadd_core.core.data import Vocab
    solver = handbuilt.exact_model()
    task = solver.config.task
    batch = reliability.shortcut_batch(task, 200)
    assert 0 < len(batch) <= 200
    answers = reliability.shortcut_answers(task, batch)
    for i, a in enumerate(reliability.SHORTCUTS[:4]):
        for b in reliability.SHORTCUTS[i + 1:4]:
            assert bool((answers[a] != answers[b]).all()), (a, b)
    # the rules read back from the tokens: the most recent value token and the literal
    vocab = Vocab(task)
    row = batch.tokens[0].tolist()
    values = [row[i] for i in range(1, task.prefix_len) if row[i - 1] >= vocab.var0]
    literal = row[13] if row[13] < task.modulus else row[14]
    assert int(answers["most recent value"][0]) == (values[-1] + literal) % task.modulus
    assert int(answers["first value"][0]) == (values[0] + literal) % task.modulus
    # the exact solver answers by the rule 'correct', every time
    table = reliability.shortcut_table(solver, 200)
    assert table["correct"] == 1.0 and table["most recent value"] == 0.0 and table["other"] == 0.0
    # a model that always gives twice the literal is caught by that rule
    twice = handbuilt.exact_model(answer=lambda a, b: (2 * b) % task.modulus)
    assert reliability.shortcut_table(twice, 200)["correct"] < 0.2


@pytest.fixture
def default_root(tmp_path, monkeypatch):
    """An empty default runs folder: a run written or looked up without its `root` would land here."""
    from assignadd_core.core import run_folder
    monkeypatch.setattr(run_folder, "DEFAULT_ROOT", tmp_path / "default")
    return tmp_path / "default"


def test_seed_runs_lists_missing_runs_and_never_trains_unless_asked(tmp_path, default_root):
    from assignadd_core.core.config import ConfigError
    from tiny import TINY
    overrides = {k: v for k, v in TINY.items() if k != "steps"}
    runs, missing = seed_runs(["a", "b"], [1, 2], 20, overrides, root=tmp_path)
    assert runs == {} and missing == ["a", "b"] and not any(tmp_path.iterdir())
    runs, missing = seed_runs(["a"], [1], 20, overrides, train_missing=True, root=tmp_path)
    assert list(runs) == ["a"] and missing == []
    runs, missing = seed_runs(["a", "b"], [1, 2], 20, overrides, root=tmp_path)
    assert list(runs) == ["a"] and missing == ["b"]
    # a run with the same name but other settings is not this config's run
    assert seed_runs(["a"], [1], 30, overrides, root=tmp_path) == ({}, ["a"])
    with pytest.raises(ConfigError):
        seed_runs(["a", "b"], [1], 20, overrides, root=tmp_path)


# ---------------------------------------------------------------------------- edge cases and exact values
def test_a_run_with_a_jump_but_no_final_rise_composed_without_all_three():
    steps = reliability.phase_steps({"a": synthetic(jump=3000, refinement=9000), "d": synthetic(refine=False)})
    assert steps["composed"].tolist() == [True, True] and steps["all_three"].tolist() == [True, False]
    assert steps["last_step"].tolist() == [39901, 39901]


def test_step_statistics_of_a_transition_no_run_reached_and_of_non_numbers():
    import pandas as pd
    steps = pd.DataFrame({k: [None, None] for k in reliability.TRANSITIONS}, index=["a", "b"])
    steps["jump"] = [3000, "5,300–5,400"]  # a text entry (as the paper's row) is not a measured step
    stats = reliability.step_statistics(steps)
    assert stats.loc["jump"].to_dict() == {"runs": 1, "median": 3000.0, "min": 3000, "max": 3000}
    none = stats.loc["refinement"]
    assert none["runs"] == 0 and none[["median", "min", "max"]].isna().all()


def test_a_rate_of_no_runs():
    import math
    rate = reliability.composition_rate(0, 0)
    assert (rate.successes, rate.trials) == (0, 0) and math.isnan(rate.low) and math.isnan(rate.high)
    assert math.isnan(rate.value) and rate.describe() == "no runs"
    one = reliability.composition_rate(1, 1)  # one trial is a rate, not "no runs"
    assert (one.successes, one.trials, one.high) == (1, 1, 1.0) and one.low == pytest.approx(0.025)
    assert one.describe() == "1 of 1 (100%; 95 % interval 3%–100%)"  # 2.5 % shown rounded


def test_the_interval_level_is_used():
    """Clopper–Pearson: the bounds are beta quantiles, Beta(k, n-k+1) at (1-level)/2 and Beta(k+1, n-k) at
    (1+level)/2."""
    from scipy.stats import beta
    rate = reliability.composition_rate(5, 10, level=0.5)
    assert rate.low == pytest.approx(beta.ppf(0.25, 5, 6)) and rate.high == pytest.approx(beta.ppf(0.75, 6, 5))


def test_shortcut_answers_read_the_literal_from_the_query():
    """Every row: the literal is the number at position 13 or 14 (whichever is not a variable); variable 0
    counts as a variable."""
    import handbuilt
    task = handbuilt.exact_model().config.task
    batch = reliability.shortcut_batch(task, 300)
    assert bool((batch.lhs_var == 0).any())  # a row where the variable is the first one, on the left
    answers = reliability.shortcut_answers(task, batch)
    n = task.modulus
    for i, row in enumerate(batch.tokens.tolist()):
        literal = row[13] if row[13] < n else row[14]
        assert int(answers["literal alone"][i]) == literal and int(answers["literal twice"][i]) == 2 * literal % n
    assert all(answers[k].dtype == batch.answers.dtype for k in reliability.SHORTCUTS)


def test_shortcut_batch_is_seeded_and_only_1var_training_rows():
    import torch
    import handbuilt
    task = handbuilt.exact_model().config.task
    batch = reliability.shortcut_batch(task, 100, seed=3)
    assert torch.equal(batch.tokens, reliability.shortcut_batch(task, 100, seed=3).tokens)
    assert bool(((batch.lhs_var >= 0) ^ (batch.rhs_var >= 0)).all())  # one variable operand, one literal


def test_shortcut_table_counts_each_rule_and_the_rest():
    """A model that always answers 0: each rule's share is how often that rule's answer is 0, on the batch of
    the seed given; 'other' is where none is."""
    import handbuilt
    zero = handbuilt.exact_model(answer=lambda a, b: 0)
    task = zero.config.task
    batch = reliability.shortcut_batch(task, 300, seed=3)
    answers = reliability.shortcut_answers(task, batch)
    table = reliability.shortcut_table(zero, 300, seed=3)
    assert table["n"] == len(batch)
    for rule in reliability.SHORTCUTS:
        assert table[rule] == pytest.approx(float((answers[rule] == 0).float().mean())), rule
    named = sum((answers[rule] == 0).long() for rule in reliability.SHORTCUTS) > 0
    assert table["other"] == pytest.approx(1 - float(named.float().mean())) and 0 < table["other"] < 1


def test_seed_runs_give_each_run_its_seed_steps_and_settings(tmp_path, default_root, monkeypatch):
    from assignadd_core.experiments import named_runs as runs_module
    from assignadd_core.core.config import ConfigError, RunConfig
    from tiny import TINY
    overrides = {k: v for k, v in TINY.items() if k != "steps"}
    config = RunConfig().replace(seed=3, steps=20, **overrides)
    root = tmp_path / "mine"
    assert runs_module.finished_run("x", config, root=root) is None and not root.exists()
    calls = []
    real = runs_module.train_or_load

    def recording(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(runs_module, "train_or_load", recording)
    run = runs_module.finished_run("x", config, train_missing=True, root=root)
    assert run.config == config and run.path.parent == root
    assert calls == [{"name": "x", "device": "cpu", "root": root}]  # on the CPU, with the default progress bar
    assert runs_module.finished_run("x", config, train_missing=True, device="meta", root=root) is not None
    assert calls[-1]["device"] == "meta"  # the device is passed on (the run is finished: nothing trains)
    runs, missing = seed_runs(["x"], [3], 20, overrides, root=root)
    assert missing == [] and runs["x"].config == config
    assert not default_root.exists()
    with pytest.raises(ConfigError, match=r"^runs and seeds must be non-empty lists of the same length, got \[\] and \[\]$"):
        seed_runs([], [], 20, overrides, root=tmp_path)


def test_eq_attention_by_query_on_the_exact_solver_and_a_rigged_head():
    """The hand-built solver's `=` attends to both operand positions in every pool; zeroing its layer-1
    QK leaves uniform attention, where the top 2 are no longer the operands and the top 1 is position 0."""
    import torch

    import handbuilt
    solver = handbuilt.exact_model()
    table = reliability.eq_attention_by_query(solver, rows=64)
    assert table["top 2 = both operands"].tolist() == [1.0, 1.0, 1.0]
    assert table.loc["0var_train", "top 1 = variable operand"] == 0.0  # no variable operand in 0-var rows
    one_var = table.loc[["1var_train", "1var_var_restricted"]]
    assert (one_var["top 1 = variable operand"] + one_var["top 1 = literal operand"]).tolist() == pytest.approx([1.0, 1.0])
    with torch.no_grad():
        solver.blocks[0].attn.W_Q.zero_()
    flat = reliability.eq_attention_by_query(solver, rows=64)
    assert flat["top 2 = both operands"].max() == 0.0 and flat["top 1 = variable operand"].max() == 0.0


def test_a_gradual_learner_composed_without_a_sharp_jump():
    """Variable assignment learned over ~4,000 steps (no one-interval rise of 0.1, like seed 51): composed,
    but no sharp jump and so not all three phases; a run whose 1-var accuracy ends under 0.9 did not compose."""
    from test_phases import sigmoid
    gradual = synthetic(jump=4000, refinement=15000)
    steps_axis = gradual["step"].to_numpy()
    for name in ("1var_train", "2var_train", "m3_l2_var_identity_qk"):
        gradual[name] = 0.4 + 0.59 * sigmoid(steps_axis, 4000, 800)
    stalled = synthetic(refine=False)
    stalled.loc[len(stalled) - 1, "1var_train"] = 0.89  # jumped at 5,300, but ends just under the level
    steps = reliability.phase_steps({"gradual": gradual, "stalled": stalled})
    assert steps["composed"].tolist() == [True, False]
    assert steps["sharp_jump"].tolist() == [False, True]
    assert steps["all_three"].tolist() == [False, False]


def test_the_sign_tests_power_counts_the_pairs_it_needs():
    from assignadd_core.rules.stats import sign_test_power
    eight = sign_test_power(8, 0.9, 0.05)
    assert eight["needed"] == 7  # 7 of 8: p = 9/256 = 0.035; 6 of 8: p = 37/256 = 0.145
    assert eight["power"] == pytest.approx(0.9 ** 8 + 8 * 0.9 ** 7 * 0.1)
    assert sign_test_power(4, 1.0, 0.05) == {"pairs": 4, "needed": None, "later": 1.0, "power": 0.0}  # p >= 1/16
    assert sign_test_power(8, 0.5, 0.05)["power"] < 0.05  # under the null: the test's size


def test_fishers_power_is_its_size_under_the_null_and_grows_with_the_gap():
    from assignadd_core.rules.stats import fisher_power
    assert fisher_power(12, 0.6, 32, 0.6, 0.05) < 0.05
    assert fisher_power(12, 0.95, 32, 0.6, 0.05) > fisher_power(12, 0.8, 32, 0.6, 0.05)
    assert fisher_power(3, 1.0, 32, 0.6, 0.05) < 0.01  # 3 of 3 rejects only where the 32 fall to 10 or fewer


def test_the_t_intervals_power_matches_a_simulation_and_is_its_size_at_no_gain():
    import numpy as np

    from assignadd_core.rules.stats import t_interval, t_interval_power
    rng = np.random.default_rng(0)
    draws = rng.normal(0.05, 0.1, size=(4000, 12))
    simulated = np.mean([t_interval(d)[1] > 0 for d in draws])
    assert abs(t_interval_power(12, 0.05, 0.1) - simulated) < 0.03
    assert t_interval_power(12, 0.0, 0.1) < 0.03  # at no gain: the one-sided half of a 95 % interval's size (0.025)
    assert t_interval_power(40, 0.05, 0.1) > t_interval_power(4, 0.05, 0.1)
    assert t_interval_power(1, 0.05, 0.1) == 0.0
