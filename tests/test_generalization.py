"""Generalization breakdowns: per-sequence tables, union parts, variable × side, residues, over training."""
import pandas as pd
import pytest
import torch

from assignadd_core.analysis import generalization as gen
from assignadd_core.config import RunConfig
from assignadd_core.data import eval_pools, exact_sets, make_split
from assignadd_core.checkpoint import save_model
from assignadd_core.model import AssignAddTransformer
from assignadd_core.runs import Run

TINY = RunConfig().replace(modulus=7, n_vars=5, n_left_only=1, n_right_only=1, d_model=16, d_mlp=32,
                           pool_size=300)


def table_of(batch, correct=None):
    correct = torch.ones(len(batch), dtype=torch.bool) if correct is None else correct
    return gen.sequence_table(TINY.task, batch, correct)


def test_forbidden_flags_follow_the_pools():
    pools = eval_pools(TINY.task)
    one = table_of(pools["1var_var_restricted"])
    assert ((one["lhs_forbidden"].astype(int) + one["rhs_forbidden"].astype(int)) == 1).all()
    assert (table_of(pools["2var_var_restricted_2"])[["lhs_forbidden", "rhs_forbidden"]]).all().all()
    train_table = table_of(pools["2var_train"])
    assert not train_table[["lhs_forbidden", "rhs_forbidden"]].any().any()
    assert not train_table["heldout_pair"].any()
    assert table_of(pools["0var_add_restricted"])["heldout_pair"].all()
    assert (table_of(pools["0var_train"])["lhs"] == gen.LITERAL_LABEL).all()


def test_union_parts_have_the_sizes_of_the_exact_set():
    split = make_split(TINY.task)
    union = table_of(exact_sets(TINY.task)["2var_union"])
    counts = union.assign(part=gen.union_part(union))["part"].value_counts()
    assert counts["held-out pair, allowed variables"] == len(split.heldout_pairs) * len(split.allowed_var_pairs)
    n_train = len(split.train_pairs)
    assert counts["training pair, one operand forbidden"] == n_train * len(split.one_forbidden_var_pairs)
    assert counts["training pair, both operands forbidden"] == n_train * len(split.both_forbidden_var_pairs)


def test_breakdowns_find_a_planted_failure():
    union_batch = exact_sets(TINY.task)["2var_union"]
    # plant: every sequence with `a` on the right is wrong, and every n1 = n2 sequence too
    a = 0
    wrong = (union_batch.rhs_var == a) | (union_batch.lhs_val == union_batch.rhs_val)
    table = table_of(union_batch, ~wrong)
    by_side = gen.variable_side_accuracy(table)
    assert list(by_side.columns) == ["lhs", "rhs"]
    assert by_side.loc["a", "rhs"] == 0.0
    assert by_side.loc["a", "lhs"] < 1.0  # only through the n1 = n2 rows
    by_difference = gen.residue_accuracy(table, "difference")
    assert by_difference.loc[0, "accuracy"] == 0.0 and (by_difference["accuracy"].iloc[1:] > 0).all()
    by_answer = gen.accuracy_by(table, "answer")
    assert by_answer["n"].sum() == len(table)
    assert ((by_answer["n"] * (1 - by_answer["accuracy"])).round() == by_answer["errors"]).all()
    with pytest.raises(ValueError):
        gen.residue_accuracy(table, "sum")


def test_operand_rows_count_every_variable_operand():
    pools = eval_pools(TINY.task)
    table = table_of(pools["1var_train"])
    assert len(gen.operand_rows(table)) == len(table)
    table = table_of(pools["2var_train"])
    assert len(gen.operand_rows(table)) == 2 * len(table)


def fake_run(path, steps=(1, 61, 120)):
    """A run directory with untrained checkpoints (the breakdown only needs loadable weights)."""
    run = Run(path)
    run.path.mkdir(parents=True)
    run.config_path.write_text(TINY.to_json())
    for i, step in enumerate(steps):
        torch.manual_seed(i)
        run.checkpoint_dir.mkdir(exist_ok=True)
        save_model(AssignAddTransformer(TINY), run.checkpoint_path(step))
    save_model(AssignAddTransformer(TINY), run.model_path)
    return run


def test_restricted_over_training_on_a_run(tmp_path):
    run = fake_run(tmp_path / "tiny")
    steps = run.checkpoint_steps()
    assert steps == [1, 61, 120]
    pools = {name: eval_pools(TINY.task)[name] for name in ("1var_var_restricted", "2var_var_restricted_1")}
    long = gen.restricted_over_training(run, steps, pools)
    assert set(long["step"]) == set(steps) and set(long["pool"]) == set(pools)
    assert long["accuracy"].between(0, 1).all()
    # every forbidden operand of the pools is counted once per step
    forbidden = sum(int(gen.operand_rows(table_of(b))["forbidden"].sum()) for b in pools.values())
    assert long.groupby("step")["n"].sum().eq(forbidden).all()
    # the final model's table agrees with the evaluation's own accuracy
    table = gen.evaluate_table(run.load_model(), pools["1var_var_restricted"])
    from assignadd_core.evaluation import batch_accuracy
    assert table["correct"].mean() == pytest.approx(batch_accuracy(run.load_model(), pools["1var_var_restricted"]))
    assert isinstance(gen.accuracy_by(table, ["lhs", "rhs"]), pd.DataFrame)
