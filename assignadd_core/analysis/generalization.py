"""Where generalization succeeds and fails (claims C2, C3): accuracy on the exact sets and the pools
broken down by operand variable and side, by the part of the 2-var union set, over training, and
held-out pairs by residue class.

Everything starts from a per-sequence table (`sequence_table`): what was asked and whether the
model answered it; breakdowns are group-bys of it.
"""
from __future__ import annotations

import pandas as pd
import torch

from ..config import TaskConfig
from ..data import Batch, make_split
from ..evaluation import batch_correct
from ..model import AssignAddTransformer

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


def restricted_over_training(run, steps: list[int], pools: dict[str, Batch]) -> pd.DataFrame:
    """For each checkpoint step: accuracy per (pool, variable, side) of the variable operands in a
    position forbidden in training (the var-restricted pools), long format
    [step, pool, variable, side, accuracy, n]."""
    frames = []
    for step in steps:
        model = run.load_model(step)
        for name, batch in pools.items():
            long = operand_rows(evaluate_table(model, batch))
            long = long[long["forbidden"]]
            acc = accuracy_by(long, ["variable", "side"]).reset_index()
            frames.append(acc.assign(step=step, pool=name))
    return pd.concat(frames, ignore_index=True)[["step", "pool", "variable", "side", "accuracy", "n", "errors"]]
