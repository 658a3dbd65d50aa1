"""The training stream's fast generator: exactly the batches of `core.data` (`build_sequences`, `sample_queries` of
kind 'train', `stream_chunk`), bit for bit, several times faster (`benchmarks/data_stream.py` times the two).

Every random draw is the same torch call on the same generator, in the same order and shape (the rows depend on
nothing else); the work between the draws is done on numpy columns (one contiguous array per slot, pad or variable)
with branch-free arithmetic, and the two row sorts are replaced by a sorting network and by counting (see
`_first_variables` and `_ranks`). tests/test_data_golden.py pins both generators to the same bits; the training loop
(`training.train`), the stacks' batch source and the prefetch workers read their chunks from here.
"""
from __future__ import annotations

import functools
import sys
from dataclasses import dataclass

import numpy as np
import torch

from ..core import data
from ..core.config import OPERATIONS, TaskConfig
from ..core.data import (LITERAL, ONE_VAR_LEFT, ONE_VAR_RIGHT, TWO_VAR, Batch, Vocab, compact_dtype, make_split,
                         type_weights)

TORCH_SORT_STABLE_UP_TO = 16  # torch's CPU sort orders rows of at most 16 keys by insertion sort: ties keep their order
KEY_SCALE = 2.0 ** 24  # torch.rand's float32 draws are multiples of 2^-24, so key * 2^24 is an exact integer


@dataclass(frozen=True)
class _Layout:
    """Per-task constants of build_sequences."""

    slots: int  # assignments a prefix can hold
    pads: int  # PAD draws per row: prefix - 2, the PADs of a one-assignment prefix
    var0: int
    pad: int
    plus: int
    eq: int
    count_bits: int  # bits of one PAD count (at most `pads`)
    count_dtype: type | None  # integer type that packs one count per slot, None where none does
    tokens: type  # numpy dtype of the tokens as built


@functools.lru_cache(maxsize=64)
def _layout(task: TaskConfig) -> _Layout:
    vocab = Vocab(task)
    slots, pads = min(task.max_assignments, task.n_vars), task.prefix_len - 2
    bits = pads.bit_length()
    packed = np.int32 if bits * slots <= 31 else np.int64 if bits * slots <= 63 else None
    return _Layout(slots, pads, vocab.var0, vocab.pad, vocab.plus, vocab.eq, bits, packed,
                   torch.empty(0, dtype=compact_dtype(task)).numpy().dtype.type)


def _merge_exchange(n: int) -> list[tuple[int, int]]:
    """Batcher's merge-exchange sorting network for n keys (Knuth, TAOCP 5.2.2, Algorithm M): comparators (i, j),
    i < j, each putting the smaller of keys i and j at i."""
    pairs = []
    t = (n - 1).bit_length()
    p = 1 << (t - 1) if n > 1 else 0
    while p > 0:
        q, r, d = 1 << (t - 1), 0, p
        while d > 0:
            pairs += [(i, i + d) for i in range(n - d) if i & p == r]
            d, q, r = q - p, q >> 1, p
        p >>= 1
    return pairs


@functools.lru_cache(maxsize=64)
def _smallest_network(n: int, k: int) -> tuple[tuple[int, int, bool, bool], ...]:
    """The comparators of the n-key network that the k smallest outputs depend on, as (i, j, min needed, max needed)."""
    live, kept = set(range(k)), []
    for i, j in reversed(_merge_exchange(n)):
        if i in live or j in live:
            kept.append((i, j, i in live, j in live))
            live |= {i, j}
    return tuple(reversed(kept))


def _smallest(columns: list[np.ndarray], k: int) -> list[np.ndarray]:
    """The k smallest of n distinct integer columns, element by element, in increasing order (the columns are
    overwritten)."""
    columns, spare = list(columns), np.empty_like(columns[0])
    for i, j, low, high in _smallest_network(len(columns), k):
        if low and high:
            np.minimum(columns[i], columns[j], out=spare)
            np.maximum(columns[i], columns[j], out=columns[j])
            columns[i], spare = spare, columns[i]
        elif low:
            np.minimum(columns[i], columns[j], out=columns[i])
        else:
            np.maximum(columns[i], columns[j], out=columns[j])
    return columns[:k]


def _first_variables(keys: np.ndarray, slots: int) -> list[np.ndarray]:
    """Columns 0..slots-1 of `torch.argsort(keys, dim=1)` (keys [b, n] from torch.rand, the query's set to -2 and -1).

    Each key is packed with its column index into one int32 (key * 2^24 · 2^bits + index): distinct numbers whose
    order is the keys' with ties in index order, which is torch's order where its sort is stable. Their smallest
    come from a sorting network on whole columns. Where torch's sort is not stable (rows longer than 16), a row in
    which equal keys reach the first slots is sorted by torch itself.
    """
    b, n = keys.shape
    bits = max(n - 1, 1).bit_length()
    packed = np.empty((n, b), np.int32)
    np.multiply(keys.T, KEY_SCALE, out=packed, casting="unsafe")  # exact integers: the cast changes nothing
    packed <<= bits
    packed += np.arange(n, dtype=np.int32)[:, None]
    unstable = n > TORCH_SORT_STABLE_UP_TO
    first = _smallest(list(packed), min(slots + 1, n) if unstable else slots)
    variables = [column & ((1 << bits) - 1) for column in first[:slots]]
    if unstable:
        tie = np.zeros(b, bool)
        for a, c in zip(first[:-1], first[1:]):
            tie |= (a >> bits) == (c >> bits)
        rows = np.flatnonzero(tie)
        if rows.size:
            order = torch.from_numpy(keys[rows]).argsort(dim=1)[:, :slots].numpy()
            for slot, column in enumerate(variables):
                column[rows] = order[:, slot]
    return variables


def _ranks(keys: np.ndarray, used: list[np.ndarray]) -> list[np.ndarray]:
    """Where each slot's assignment goes: the inverse of `torch.argsort(keys, dim=1)` with the unused slots' keys set
    to 2.0, as one column per slot. Counted pairwise: slot s precedes slot t > s when its key is not larger (ties in
    index order, as torch's sort keeps them in rows of up to 16) or t is unused; a longer row in which two used slots'
    keys tie is sorted by torch itself."""
    b, n = keys.shape
    columns = [np.ascontiguousarray(keys[:, s]) for s in range(n)]
    unused = [~u for u in used]
    rank = [np.full(b, n - 1 - s, np.int32) for s in range(n)]  # n - 1 - s: the later slots, before counting
    for s in range(n):
        for t in range(s + 1, n):
            before = (columns[s] <= columns[t]) | unused[t]
            rank[t] += before
            rank[s] -= before
    if n > TORCH_SORT_STABLE_UP_TO:
        tie = np.zeros(b, bool)
        for s in range(n):
            for t in range(s + 1, n):
                tie |= (columns[s] == columns[t]) & used[t]
        rows = np.flatnonzero(tie)
        if rows.size:
            filled = torch.from_numpy(np.where(np.stack([u[rows] for u in used], 1), keys[rows], np.float32(2.0)))
            perm = filled.argsort(dim=1)
            inverse = torch.empty_like(perm).scatter_(1, perm, torch.arange(n).expand_as(perm)).numpy()
            for slot, column in enumerate(rank):
                column[rows] = inverse[:, slot]
    return rank


def _pads_before(draws: np.ndarray, n_assign: np.ndarray, prefix: int, rank: list[np.ndarray], layout: _Layout
                 ) -> list[np.ndarray]:
    """For each slot, the PADs before its assignment: of the row's first prefix - 2n PAD draws u, those whose gap
    floor(u · (n + 1)) is at most the slot's rank. Counted for all ranks at once where the counts fit one integer
    (a field of count_bits bits per rank: a PAD in gap g adds 1 to the fields of ranks >= g), else rank by rank."""
    n_pads = prefix - 2 * n_assign
    n_gaps = (n_assign + 1).astype(np.float32)
    gaps = (np.multiply(draws[:, p], n_gaps, out=np.empty(len(n_assign), np.int32), casting="unsafe")
            for p in range(layout.pads))  # torch's (u * (n + 1)).long(): a float32 product, truncated
    w, slots = layout.count_bits, layout.slots
    if layout.count_dtype is not None:
        fields = sum(1 << (w * i) for i in range(slots))
        adds = np.array([fields & (-1 << (w * g)) for g in range(slots + 2)], layout.count_dtype)
        counts = np.zeros(len(n_assign), layout.count_dtype)
        for p, gap in enumerate(gaps):
            counts += adds.take(gap) * (n_pads > p)
        return [((counts >> (w * r)) & ((1 << w) - 1)).astype(np.int32) for r in rank]
    before = [np.zeros(len(n_assign), np.int32) for _ in rank]
    for p, gap in enumerate(gaps):
        gap[n_pads <= p] = slots + 1  # no PAD in this row: before no slot
        for count, r in zip(before, rank):
            count += gap <= r
    return before


def _select(condition: np.ndarray, a, b):
    """np.where(condition, a, b) for integers, as arithmetic: a branch per element costs more on random conditions."""
    return b + condition * (a - b)


def build_sequences(task: TaskConfig, lhs_val, rhs_val, lhs_var, rhs_var, gen: torch.Generator,
                    compact: bool = False) -> Batch:
    """`core.data.build_sequences`, the same batch bit for bit, faster."""
    layout = _layout(task)
    b, slots, prefix = lhs_val.shape[0], layout.slots, task.prefix_len
    lv, rv, lvar, rvar = (x.numpy() for x in (lhs_val, rhs_val, lhs_var, rhs_var))
    has_l, has_r = lvar >= 0, rvar >= 0

    n_assign = torch.randint(1, slots + 1, (b,), generator=gen)
    n = n_assign.numpy()
    np.maximum(n, has_l.astype(np.int64) + has_r, out=n)

    # Distinct variables, the query's first: the slots smallest of random keys, the query variables' forced to -2, -1.
    keys = torch.rand(b, task.n_vars, generator=gen).numpy()
    flat_keys, row_start = keys.reshape(-1), np.arange(b) * task.n_vars
    for has, var, key in ((has_l, lvar, -2.0), (has_r, rvar, -1.0)):
        at = row_start + np.maximum(var, 0)
        flat_keys[at] = np.where(has, np.float32(key), flat_keys[at])
    variables = _first_variables(keys, slots)
    draws = torch.randint(0, task.modulus, (b, slots), generator=gen).numpy()
    values = [draws[:, s] for s in range(slots)]
    if slots > 1:  # the rhs variable sorts right after the lhs one
        values[1] = _select(has_l & has_r, rv, values[1])
    values[0] = _select(has_l, lv, _select(has_r, rv, values[0]))

    # Shuffle the n real assignments (unused slots stay at the end); PADs fall into the gaps between them.
    used = [n > s for s in range(slots)]
    rank = _ranks(torch.rand(b, slots, generator=gen).numpy(), used)
    pads = _pads_before(torch.rand(b, layout.pads, generator=gen).numpy(), n, prefix, rank, layout)

    # Assignment i starts after the i before it and the PADs in gaps <= i. An unused slot (rank >= n: every PAD
    # before it) starts at or past the query: it is moved to the query's first two columns, written after it.
    start = [np.minimum(2 * r + p, prefix) for r, p in zip(rank, pads)]
    tokens = np.full((b, task.seq_len), layout.pad, layout.tokens)
    flat, row_start = tokens.reshape(-1), np.arange(b) * task.seq_len
    for slot in range(slots):
        at = start[slot] + row_start
        flat[at] = variables[slot] + layout.var0
        at += 1
        flat[at] = values[slot]
    lhs_query, rhs_query = task.operand_positions  # a literal operand is read from the query itself
    lhs_src = _select(has_l, start[0] + 1, lhs_query).astype(np.int64)
    rhs_start = _select(has_l, start[1], start[0]) if slots > 1 else start[0]
    rhs_src = _select(has_r, rhs_start + 1, rhs_query).astype(np.int64)
    tokens[:, prefix] = layout.plus
    tokens[:, prefix + 1] = _select(has_l, lvar + layout.var0, lv)
    tokens[:, prefix + 2] = _select(has_r, rvar + layout.var0, rv)
    tokens[:, prefix + 3] = layout.eq
    answers = OPERATIONS[task.operation](lv, rv, task.modulus)
    tokens, answers = torch.from_numpy(tokens), torch.from_numpy(answers)
    tokens, answers = (tokens, answers.to(tokens.dtype)) if compact else (tokens.long(), answers)
    return Batch(tokens=tokens, answers=answers, lhs_val=lhs_val, rhs_val=rhs_val, lhs_var=lhs_var, rhs_var=rhs_var,
                 lhs_src=torch.from_numpy(lhs_src), rhs_src=torch.from_numpy(rhs_src), n_assign=n_assign)


@functools.lru_cache(maxsize=64)
def _training_tables(task: TaskConfig) -> tuple:
    """What training rows are drawn from, each table as contiguous columns: the query-type weights, the training
    pairs, the kept 2-var rows' pairs, the left and the right variables, the allowed 2-var variable pairs."""
    split = make_split(task)

    def columns(rows: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(rows[:, i].contiguous() for i in range(rows.shape[1])) if rows.dim() == 2 else (rows,)

    return (type_weights(task).float(), *(columns(rows) for rows in (
        split.train_pairs, split.two_var_row_pairs, split.left_vars, split.right_vars, split.allowed_var_pairs)))


def _pick_columns(columns: tuple[torch.Tensor, ...], n: int, gen: torch.Generator) -> list[torch.Tensor]:
    """`_pick` of a table given as columns: the same draws, each column of the picked rows."""
    index = torch.randint(0, columns[0].shape[0], (n,), generator=gen)
    return [column.index_select(0, index) for column in columns]


def training_rows(task: TaskConfig, n: int, gen: torch.Generator, compact: bool = False) -> Batch:
    """`core.data.sample_queries(task, n, gen, compact=compact)` (kind 'train'): the same rows, faster (each table as
    contiguous columns, selects as arithmetic)."""
    weights, pairs, two_var_row_pairs, left_vars, right_vars, var_pairs = _training_tables(task)
    qtype = torch.multinomial(weights, n, replacement=True, generator=gen)
    lhs_val, rhs_val = _pick_columns(pairs, n, gen)
    is_two = qtype == TWO_VAR
    if two_var_row_pairs[0].shape[0]:  # a 2-var query's pair: in proportion to its kept rows
        two_lhs, two_rhs = _pick_columns(two_var_row_pairs, n, gen)
        lhs_val += (two_lhs - lhs_val) * is_two
        rhs_val += (two_rhs - rhs_val) * is_two
    left, = _pick_columns(left_vars, n, gen)
    right, = _pick_columns(right_vars, n, gen)
    two_left, two_right = _pick_columns(var_pairs, n, gen)
    lhs_var = LITERAL + (left - LITERAL) * (qtype == ONE_VAR_LEFT) + (two_left - LITERAL) * is_two
    rhs_var = LITERAL + (right - LITERAL) * (qtype == ONE_VAR_RIGHT) + (two_right - LITERAL) * is_two
    return build_sequences(task, lhs_val, rhs_val, lhs_var, rhs_var, gen, compact)


def stream_chunk(task: TaskConfig, batch_size: int, seed: int, index: int, chunk_steps: int = 100
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """`core.data.stream_chunk`: the same chunk of the training stream, faster (the reference's own, for a task whose
    sequences `core.data` builds otherwise: `agrees`)."""
    if not agrees(task):
        return data.stream_chunk(task, batch_size, seed, index, chunk_steps)
    gen = torch.Generator().manual_seed((seed * 1_000_003 + index * 7_919 + 17) % (2**63))
    rows = training_rows(task, chunk_steps * batch_size, gen, compact=True)
    return rows.tokens, rows.answers


@functools.lru_cache(maxsize=64)
def agrees(task: TaskConfig) -> bool:
    """Whether this generator builds `task`'s training rows as `core.data` does, checked once per task on a few
    rows: a fork that changes `core.data`'s sequences trains on its own batches (from the reference, slower) until
    this generator is changed too, and is told so in one line."""
    rows = [build(task, 64, torch.Generator().manual_seed(5), compact=True)
            for build in (training_rows, data.sample_queries)]
    same = all(torch.equal(getattr(rows[0], f), getattr(rows[1], f)) for f in ("tokens", "answers", "lhs_src"))
    if not same:
        print("warning: experiments.fast_data builds other training rows than core.data for this task; its"
              " training stream is built by core.data (slower)", file=sys.stderr)
    return same
