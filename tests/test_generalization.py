"""Generalization breakdowns: per-sequence tables, union parts, variable × side, residues, over training
(the `restricted_by_side` quantity through `series`)."""
import pandas as pd
import pytest
import torch

from assignadd_core.analysis import generalization as gen
from assignadd_core.core.config import RunConfig
from assignadd_core.core.data import VAR_RESTRICTED, eval_pools, exact_sets, make_split
from assignadd_core.core.checkpoint import save_model
from assignadd_core.core.model import AssignAddTransformer
from assignadd_core.core.run_folder import Run
from assignadd_core.analysis.series import series

import handbuilt

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


def test_restricted_by_side_over_a_run(tmp_path):
    run = fake_run(tmp_path / "tiny")
    steps = run.checkpoint_steps()
    assert steps == [1, 61, 120]
    pools = {name: eval_pools(TINY.task)[name] for name in VAR_RESTRICTED}
    long = gen.restricted_long(series(run, "restricted_by_side", steps), TINY.task)
    assert set(long["step"]) == set(steps) and set(long["pool"]) == set(pools)
    assert long["accuracy"].between(0, 1).all()
    # every forbidden operand of the pools is counted once per step
    forbidden = sum(int(gen.operand_rows(table_of(b))["forbidden"].sum()) for b in pools.values())
    assert long.groupby("step")["n"].sum().eq(forbidden).all()
    # the final model's table agrees with the evaluation's own accuracy
    table = gen.evaluate_table(run.load_model(), pools["1var_var_restricted"])
    from assignadd_core.core.evaluation import batch_accuracy
    assert table["correct"].mean() == pytest.approx(batch_accuracy(run.load_model(), pools["1var_var_restricted"]))
    by_pair = gen.accuracy_by(table, ["lhs", "rhs"])
    assert by_pair["n"].sum() == len(table) and set(by_pair.index.names) == {"lhs", "rhs"}


def test_difference_is_lhs_minus_rhs():
    """A planted failure on n1 = n2 + 1 shows at difference 1 only (not at N - 1)."""
    union_batch = exact_sets(TINY.task)["2var_union"]
    n = TINY.task.modulus
    table = table_of(union_batch, (union_batch.lhs_val - union_batch.rhs_val) % n != 1)
    assert (table["difference"] == (table["lhs_val"] - table["rhs_val"]) % n).all()
    by_difference = gen.residue_accuracy(table, "difference")
    assert by_difference.loc[1, "accuracy"] == 0.0 and by_difference.loc[n - 1, "accuracy"] == 1.0
    assert (table["answer"] == (table["lhs_val"] + table["rhs_val"]) % n).all()


def test_operand_rows_mark_each_sides_own_restriction():
    """2var_var_restricted_1 has exactly one operand in a forbidden position per sequence, on either side."""
    table = table_of(eval_pools(TINY.task)["2var_var_restricted_1"])
    long = gen.operand_rows(table)
    assert int(long["forbidden"].sum()) == len(table)
    for side in gen.SIDES:
        part = long[long["side"] == side]
        assert 0 < int(part["forbidden"].sum()) < len(part)
        assert (part["forbidden"] == part[f"{side}_forbidden"]).all()
        assert (part["variable"] == part[side]).all()


def test_evaluate_table_on_a_model_of_known_accuracy():
    """The rigged solver is wrong exactly on n1 = n2; evaluate_table says so row by row, in eval mode,
    and gives the model back in the mode it came in."""
    rigged = handbuilt.exact_model(answer=handbuilt.wrong_on_doubles)
    batch = eval_pools(handbuilt.CONFIG.task)["2var_train"]
    rigged.train()
    table = gen.evaluate_table(rigged, batch)
    assert rigged.training
    assert (table["correct"] == (table["lhs_val"] != table["rhs_val"])).all()
    assert 0 < table["correct"].mean() < 1


def test_restricted_by_side_reads_each_checkpoint(tmp_path):
    """Checkpoint 1 is the rigged solver (wrong on n1 = n2), checkpoint 2 the solver, the final model a
    random one: each step's breakdown is that checkpoint's."""
    run = Run(tmp_path / "handbuilt")
    run.path.mkdir(parents=True)
    run.config_path.write_text(handbuilt.CONFIG.to_json())
    run.checkpoint_dir.mkdir()
    save_model(handbuilt.exact_model(answer=handbuilt.wrong_on_doubles), run.checkpoint_path(1))
    save_model(handbuilt.exact_model(), run.checkpoint_path(2))
    torch.manual_seed(0)
    save_model(AssignAddTransformer(handbuilt.CONFIG), run.model_path)
    pools = {name: eval_pools(handbuilt.CONFIG.task)[name] for name in VAR_RESTRICTED}
    long = gen.restricted_long(series(run, "restricted_by_side", [1, 2]), handbuilt.CONFIG.task)
    assert list(long.index) == list(range(len(long)))  # one plain index over every step and pool
    long = long.set_index(["step", "pool", "variable", "side"])
    for name, batch in pools.items():
        table = gen.sequence_table(handbuilt.CONFIG.task, batch, batch.lhs_val != batch.rhs_val)
        rows = gen.operand_rows(table)
        expected = gen.accuracy_by(rows[rows["forbidden"]], ["variable", "side"])
        assert (expected["accuracy"] < 1).any()  # the two checkpoints differ on this pool
        for (variable, side), row in expected.iterrows():
            assert long.loc[(1, name, variable, side), "accuracy"] == pytest.approx(row["accuracy"])
            assert long.loc[(2, name, variable, side), "accuracy"] == 1.0
            assert long.loc[(1, name, variable, side), "n"] == row["n"]
            assert long.loc[(1, name, variable, side), "errors"] == row["errors"]
        assert long.loc[(1, name)].index.tolist() == expected.index.tolist()  # the combinations the pool holds


def test_operand_rows_and_the_breakdowns_have_a_plain_index_and_both_sides():
    pools = eval_pools(TINY.task)
    rows = gen.operand_rows(table_of(pools["2var_train"][:40]))
    assert list(rows.index) == list(range(len(rows))) and len(rows) == 80  # two operands per 2-var sequence
    left_only = table_of(pools["1var_train"][:60])
    left_only = left_only[left_only["rhs"] == gen.LITERAL_LABEL]  # variables on the left only
    wide = gen.variable_side_accuracy(left_only)
    assert list(wide.columns) == ["lhs", "rhs"] and wide["rhs"].isna().all() and (wide["lhs"] == 1.0).all()


def test_residue_accuracy_defaults_to_the_answer_and_names_the_choices():
    table = table_of(eval_pools(TINY.task)["0var_train"][:50])
    assert gen.residue_accuracy(table).equals(gen.residue_accuracy(table, "answer"))
    assert gen.residue_accuracy(table).index.name == "answer"
    with pytest.raises(ValueError, match=r"^by must be 'answer' or 'difference', got 'sum'$"):
        gen.residue_accuracy(table, "sum")
