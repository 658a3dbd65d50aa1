"""Phase statistics over seeds, on synthetic curves with known transitions."""
import pytest

from assignadd_core.analysis import reliability
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
    import torch
    import handbuilt
    from assignadd_core.data import Vocab
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


def test_seed_runs_lists_missing_runs_and_never_trains_unless_asked(tmp_path):
    from assignadd_core.config import ConfigError
    from tiny import TINY
    overrides = {k: v for k, v in TINY.items() if k != "steps"}
    runs, missing = reliability.seed_runs(["a", "b"], [1, 2], 20, overrides, root=tmp_path)
    assert runs == {} and missing == ["a", "b"] and not any(tmp_path.iterdir())
    runs, missing = reliability.seed_runs(["a"], [1], 20, overrides, train_missing=True, root=tmp_path)
    assert list(runs) == ["a"] and missing == []
    runs, missing = reliability.seed_runs(["a", "b"], [1, 2], 20, overrides, root=tmp_path)
    assert list(runs) == ["a"] and missing == ["b"]
    # a run with the same name but other settings is not this config's run
    assert reliability.seed_runs(["a"], [1], 30, overrides, root=tmp_path) == ({}, ["a"])
    with pytest.raises(ConfigError):
        reliability.seed_runs(["a", "b"], [1], 20, overrides, root=tmp_path)
