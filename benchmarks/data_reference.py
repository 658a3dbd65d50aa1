"""The sequence generator as it was before it was made faster (commit 574d0d4), kept verbatim as the reference that
benchmarks/data_stream.py times the current one against (tests/test_data_golden.py pins the outputs themselves)."""
from __future__ import annotations

import torch

from assignadd_core.core.config import TaskConfig
from assignadd_core.core.data import LITERAL, ONE_VAR_LEFT, ONE_VAR_RIGHT, TWO_VAR, Batch, Vocab, make_split, type_weights


def build_sequences(task: TaskConfig, lhs_val, rhs_val, lhs_var, rhs_var, gen: torch.Generator) -> Batch:
    vocab = Vocab(task)
    b = lhs_val.shape[0]
    n_vars, prefix = task.n_vars, task.prefix_len
    slots = min(task.max_assignments, n_vars)
    has_l, has_r = lhs_var >= 0, rhs_var >= 0
    arange_slots = torch.arange(slots)

    n_assign = torch.randint(1, slots + 1, (b,), generator=gen)
    n_assign = torch.maximum(n_assign, has_l.long() + has_r.long())

    keys = torch.rand(b, n_vars, generator=gen)
    rows = torch.arange(b)
    keys[rows[has_l], lhs_var[has_l]] = -2.0
    keys[rows[has_r], rhs_var[has_r]] = -1.0
    variables = keys.argsort(dim=1)[:, :slots]
    values = torch.randint(0, task.modulus, (b, slots), generator=gen)
    values[:, 0] = torch.where(has_l, lhs_val, values[:, 0])
    rhs_slot = has_l.long()
    values[rows, rhs_slot] = torch.where(has_r, rhs_val, values[rows, rhs_slot])

    order_keys = torch.rand(b, slots, generator=gen)
    order_keys[arange_slots[None, :] >= n_assign[:, None]] = 2.0
    perm = order_keys.argsort(dim=1)
    variables, values = variables.gather(1, perm), values.gather(1, perm)

    max_pads = prefix - 2
    n_pads = prefix - 2 * n_assign
    gaps = (torch.rand(b, max_pads, generator=gen) * (n_assign[:, None] + 1)).long()
    real_pad = torch.arange(max_pads)[None, :] < n_pads[:, None]
    pads_before = ((gaps[:, None, :] <= arange_slots[None, :, None]) & real_pad[:, None, :]).sum(-1)
    start = 2 * arange_slots[None, :] + pads_before
    used = arange_slots[None, :] < n_assign[:, None]
    dump = prefix
    var_pos = torch.where(used, start, dump)
    val_pos = torch.where(used, start + 1, dump + 1)
    buffer = torch.full((b, prefix + 2), vocab.pad, dtype=torch.long)
    buffer.scatter_(1, var_pos, variables + vocab.var0)
    buffer.scatter_(1, val_pos, values)

    value_pos_by_slot = torch.empty_like(val_pos).scatter_(1, perm, val_pos)
    lhs_query, rhs_query = task.operand_positions
    lhs_src = torch.where(has_l, value_pos_by_slot[:, 0], lhs_query)
    rhs_src = torch.where(has_r, value_pos_by_slot[rows, rhs_slot], rhs_query)

    lhs_tok = torch.where(has_l, lhs_var + vocab.var0, lhs_val)
    rhs_tok = torch.where(has_r, rhs_var + vocab.var0, rhs_val)
    query = torch.stack([torch.full_like(lhs_tok, vocab.plus), lhs_tok, rhs_tok,
                         torch.full_like(lhs_tok, vocab.eq)], 1)
    tokens = torch.cat([buffer[:, :prefix], query], 1)
    return Batch(tokens=tokens, answers=(lhs_val + rhs_val) % task.modulus,
                 lhs_val=lhs_val, rhs_val=rhs_val, lhs_var=lhs_var, rhs_var=rhs_var,
                 lhs_src=lhs_src, rhs_src=rhs_src, n_assign=n_assign)


def _pick(rows: torch.Tensor, n: int, gen: torch.Generator) -> torch.Tensor:
    return rows[torch.randint(0, rows.shape[0], (n,), generator=gen)]


def training_rows(task: TaskConfig, n: int, gen: torch.Generator) -> Batch:
    """`sample_queries(task, n, gen)` (kind='train') as it was."""
    split = make_split(task)
    lit = torch.full((n,), LITERAL, dtype=torch.long)
    qtype = torch.multinomial(type_weights(task).float(), n, replacement=True, generator=gen)
    pairs = _pick(split.train_pairs, n, gen)
    if split.two_var_row_pairs.shape[0]:
        pairs = torch.where((qtype == TWO_VAR)[:, None], _pick(split.two_var_row_pairs, n, gen), pairs)
    left = _pick(split.left_vars, n, gen)
    right = _pick(split.right_vars, n, gen)
    two = _pick(split.allowed_var_pairs, n, gen)
    lhs_var = torch.where(qtype == ONE_VAR_LEFT, left, torch.where(qtype == TWO_VAR, two[:, 0], lit))
    rhs_var = torch.where(qtype == ONE_VAR_RIGHT, right, torch.where(qtype == TWO_VAR, two[:, 1], lit))
    return build_sequences(task, pairs[:, 0], pairs[:, 1], lhs_var, rhs_var, gen)
