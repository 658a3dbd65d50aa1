"""Where generalization succeeds and fails (claims C2, C3): accuracy on the exact sets and the pools
broken down by operand variable and side, by the part of the 2-var union set, over training (the
`restricted_by_side` quantity, read through `series`), and held-out pairs by residue class.

Everything starts from a per-sequence table (`sequence_table`): what was asked and whether the
model answered it; breakdowns are group-bys of it.
"""
from __future__ import annotations

import math

import pandas as pd
import torch

from ..core.config import TaskConfig
from ..core.data import VAR_RESTRICTED, Batch, eval_pools, make_split
from ..core.evaluation import batch_correct
from ..core.model import AssignAddTransformer

LITERAL_LABEL = "literal"
SIDES = ("lhs", "rhs")


def sequence_table(task: TaskConfig, batch: Batch, correct: torch.Tensor) -> pd.DataFrame:
    """One row per sequence: operands (variable name or 'literal'), values, answer, n1 − n2 mod N,
    whether the pair is held out, whether each operand sits in a position forbidden in training,
    and `correct`."""
    split = make_split(task)
    names = task.var_names
    n = task.modulus
    lhs_forbidden = torch.isin(batch.lhs_var, split.left_forbidden_vars)
    rhs_forbidden = torch.isin(batch.rhs_var, split.right_forbidden_vars)

    def label(var: torch.Tensor) -> list[str]:
        return [names[v] if v >= 0 else LITERAL_LABEL for v in var.tolist()]

    return pd.DataFrame({
        "lhs": label(batch.lhs_var), "rhs": label(batch.rhs_var),
        "lhs_val": batch.lhs_val.numpy(), "rhs_val": batch.rhs_val.numpy(),
        "answer": batch.answers.numpy(), "difference": ((batch.lhs_val - batch.rhs_val) % n).numpy(),
        "heldout_pair": (~split.train_mask[batch.lhs_val, batch.rhs_val]).numpy(),
        "lhs_forbidden": lhs_forbidden.numpy(), "rhs_forbidden": rhs_forbidden.numpy(),
        "correct": correct.numpy(),
    })


def evaluate_table(model: AssignAddTransformer, batch: Batch) -> pd.DataFrame:
    """`sequence_table` with the model's answers."""
    was_training = model.training
    model.eval()
    try:
        correct = batch_correct(model, batch)
    finally:
        model.train(was_training)
    return sequence_table(model.config.task, batch, correct)


def union_part(table: pd.DataFrame) -> pd.Series:
    """The three parts of the 2-var union exact set (book/protocol.md) a row belongs to."""
    n_forbidden = table["lhs_forbidden"].astype(int) + table["rhs_forbidden"].astype(int)
    labels = {0: "held-out pair, allowed variables", 1: "training pair, one operand forbidden",
              2: "training pair, both operands forbidden"}
    return n_forbidden.map(labels)


def accuracy_by(table: pd.DataFrame, keys) -> pd.DataFrame:
    """Accuracy, count and number of errors per group."""
    grouped = table.groupby(keys, sort=True)["correct"]
    out = pd.DataFrame({"accuracy": grouped.mean(), "n": grouped.size()})
    out["errors"] = out["n"] - grouped.sum()
    return out


def operand_rows(table: pd.DataFrame) -> pd.DataFrame:
    """One row per variable operand (a 2-var sequence gives two): variable, side, forbidden, correct
    (the sequence's), plus the other columns of the sequence."""
    parts = []
    for side in SIDES:
        rows = table[table[side] != LITERAL_LABEL]
        parts.append(rows.assign(variable=rows[side], side=side, forbidden=rows[f"{side}_forbidden"]))
    return pd.concat(parts, ignore_index=True)


def variable_side_accuracy(table: pd.DataFrame) -> pd.DataFrame:
    """Accuracy of the sequences in which each variable is the lhs / rhs operand: [variables × sides]."""
    long = operand_rows(table)
    wide = long.groupby(["variable", "side"])["correct"].mean().unstack("side")
    return wide.reindex(columns=list(SIDES))


def residue_accuracy(table: pd.DataFrame, by: str = "answer") -> pd.DataFrame:
    """Accuracy per residue class of the answer (n1 + n2 mod N) or of the difference (n1 − n2 mod N)."""
    if by not in ("answer", "difference"):
        raise ValueError(f"by must be 'answer' or 'difference', got {by!r}")
    return accuracy_by(table, by)


RESTRICTED_STATS = ("accuracy", "n", "errors")


def forbidden_operands(task: TaskConfig) -> list[tuple[str, str]]:
    """(variable, side) of every operand position training never uses (right-only variables on the left,
    left-only ones on the right), sorted as `accuracy_by` sorts its groups."""
    split, names = make_split(task), task.var_names
    return sorted([(names[v], "lhs") for v in split.left_forbidden_vars.tolist()]
                  + [(names[v], "rhs") for v in split.right_forbidden_vars.tolist()])


def restricted_column(pool: str, variable: str, side: str, stat: str) -> str:
    return f"{pool} {variable} ({side}) {stat}"


def restricted_columns(task: TaskConfig) -> tuple[str, ...]:
    """The values of `restricted_by_side`: each var-restricted pool × forbidden (variable, side) × statistic."""
    return tuple(restricted_column(pool, variable, side, stat) for pool in VAR_RESTRICTED
                 for variable, side in forbidden_operands(task) for stat in RESTRICTED_STATS)


def restricted_by_side(model: AssignAddTransformer) -> dict[str, float]:
    """Accuracy, count and errors of the variable operands in a forbidden position, per var-restricted pool and
    (variable, side) (`restricted_columns`); a combination a pool does not hold has n = 0 and accuracy NaN."""
    task = model.config.task
    out = {}
    for pool in VAR_RESTRICTED:
        long = operand_rows(evaluate_table(model, eval_pools(task)[pool]))
        table = accuracy_by(long[long["forbidden"]], ["variable", "side"])
        for variable, side in forbidden_operands(task):
            held = (variable, side) in table.index
            for stat in RESTRICTED_STATS:
                value = table.loc[(variable, side), stat] if held else (math.nan if stat == "accuracy" else 0)
                out[restricted_column(pool, variable, side, stat)] = float(value)
    return out


def restricted_long(frame: pd.DataFrame, task: TaskConfig) -> pd.DataFrame:
    """A `series(run, "restricted_by_side", steps)` table as one row per step, pool and (variable, side) the pool
    holds: [step, pool, variable, side, accuracy, n, errors], ordered by step, pool, variable and side."""
    rows = [{"step": step, "pool": pool, "variable": variable, "side": side,
             **{stat: values[restricted_column(pool, variable, side, stat)] for stat in RESTRICTED_STATS}}
            for step, values in frame.iterrows() for pool in VAR_RESTRICTED
            for variable, side in forbidden_operands(task)]
    long = pd.DataFrame(rows, columns=["step", "pool", "variable", "side", *RESTRICTED_STATS])
    return long[long["n"] > 0].astype({"step": int, "n": int, "errors": int}).reset_index(drop=True)
