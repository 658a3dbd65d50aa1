"""The generator's output, pinned bit for bit (book/protocol.md): every committed run's batches, pools and exact sets
depend on it, so both generators, `core.data`'s (what a batch is) and `experiments.fast_data`'s (the training stream's,
several times faster), must reproduce it exactly.

Each constant is a SHA-256 prefix of the generator's output (every field, with its dtype and shape) as the generator
of commit 574d0d4 produced it, for configs that reach every branch: the paper's task, r < 1, the f sweep's smallest
f, the share-only ablation, f = 1 (no held-out pair: empty pools), no left- or right-only variable (empty forbidden
sets), 4 variables (fewer than the prefix has slots), 24 and 26 variables and 18 slots (random keys sorted in rows
longer than 16), modulus 97 and 24 variables (exact sets sampled), sequences of 8, 9 and 40 tokens. Among these rows
are some whose random keys tie in a row longer than 16, where torch's sort is not stable (24 and 26 variables, 18
slots): a generator that breaks such ties another way fails here.
"""
from __future__ import annotations

import hashlib
from dataclasses import fields, replace

import numpy as np
import pytest
import torch

from assignadd_core.core.config import TaskConfig
from assignadd_core.core.data import Batch, TrainStream, compact_dtype, eval_pools, exact_sets, sample_queries, stream_chunk
from assignadd_core.experiments import fast_data
from assignadd_core.experiments.fast_data import (TORCH_SORT_STABLE_UP_TO, _first_variables, _layout, _merge_exchange,
                                                  _pads_before, _ranks, _smallest)

pytestmark = pytest.mark.usefixtures("single_thread")

TINY_TASK = dict(modulus=7, n_vars=4, n_left_only=1, n_right_only=1)
CONFIGS = {  # name: (task, batch size of its streams)
    "paper": (TaskConfig(), 512),
    "r0.2": (TaskConfig(two_var_rate=0.2), 64),
    "f0.0616": (TaskConfig(train_fraction=0.0616), 64),
    "share_only": (TaskConfig(two_var_rule="ablation_share_only", two_var_rate=0.5), 64),
    "f1": (TaskConfig(train_fraction=1.0, pool_size=300), 64),
    "no_sides": (TaskConfig(n_left_only=0, n_right_only=0, pool_size=300), 64),
    "vars4": (TaskConfig(**TINY_TASK, pool_size=300), 32),
    "len8": (TaskConfig(**TINY_TASK, seq_len=8, pool_size=300), 32),
    "len9": (TaskConfig(**TINY_TASK, seq_len=9, pool_size=300), 32),
    "vars24": (TaskConfig(n_vars=24, pool_size=500), 512),
    "vars26": (TaskConfig(n_vars=26, two_var_rate=0.5, split_seed=7, eval_seed=3, pool_size=300), 64),
    "mod97": (TaskConfig(modulus=97, pool_size=500), 64),
    "slots18": (TaskConfig(modulus=11, n_vars=20, seq_len=40, pool_size=300), 64),
}
STREAM_SEEDS, STREAM_STEPS = (0, 42), (1, 2, 100, 101, 250)  # chunks 0, 1 and 2, across both chunk boundaries


def digest(named: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for name, tensor in named.items():
        h.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)};".encode())
        h.update(tensor.contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def batch_fields(batch: Batch, prefix: str = "") -> dict[str, torch.Tensor]:
    return {prefix + f.name: getattr(batch, f.name) for f in fields(Batch)}


def stream_digest(task: TaskConfig, batch_size: int, chunks=stream_chunk) -> str:
    named = {}
    for seed in STREAM_SEEDS:
        stream = TrainStream(task, batch_size, seed, chunks=chunks)
        for step in STREAM_STEPS:
            named[f"{seed}/{step}/tokens"], named[f"{seed}/{step}/answers"] = stream.batch(step)
    return digest(named)


def sample_digest(task: TaskConfig, rows=sample_queries) -> str:
    """Every field of `sample_queries`' training rows (the stream keeps tokens and answers only)."""
    return digest(batch_fields(rows(task, 3000, torch.Generator().manual_seed(7))))


def pools_digest(task: TaskConfig) -> str:
    named = {}
    for name, pool in eval_pools.__wrapped__(task).items():
        named |= batch_fields(pool, name + "/")
    return digest(named)


def exact_digest(task: TaskConfig) -> str:
    named = {}
    for name, rows in exact_sets.__wrapped__(task).items():
        named |= batch_fields(rows, name + "/")
    return digest(named)


# name: (stream, training rows, pools, exact sets), from the generator of commit 574d0d4
GOLDEN = {
    'paper': ('f9ca8635b98aa0ab', 'acaaf783916685f6', 'e8bd8aedd4ce5668', 'f6bcbe1b1654f19c'),
    'r0.2': ('4890372a4ef2a0a9', '410cbb825feffc18', '12d1d4cb128cfa2e', 'f6bcbe1b1654f19c'),
    'f0.0616': ('dfbaa1d66a3c00c1', 'e5f97fbe7d78d7fa', 'af6d2e47521c5122', '957777e39f4d2a32'),
    'share_only': ('4c42f8aee22bc560', '10666b569873de5a', 'e8bd8aedd4ce5668', 'f6bcbe1b1654f19c'),
    'f1': ('71857e42c2322bab', '14139d2c01a2a65c', '4b554d928d8f71fd', 'e7a28fce2b8c4603'),
    'no_sides': ('671e4bbbb06c4650', '7bf4c0916359e2f0', 'af59e61cc48af437', 'cc21f09fa5153bb5'),
    'vars4': ('b2632da19a3c5f2b', '9240ffba51753088', 'f1b9b69496c38afa', 'cd0ef2fcbefee952'),
    'len8': ('9bf92fe4795a5163', '506fbb7a6d1a0207', 'a9b6828a993152c4', 'c2d2a57e6d0a6a24'),
    'len9': ('a4abf64cd3e1ae80', 'f24c83526f873013', 'a1432521141cd705', 'c19bfb409d458a8b'),
    'vars24': ('97880dd2d74cdd7d', '7f5a110a1a5e246a', '32d956ce0f5d2fe8', 'b3590fd8e13deb6b'),
    'vars26': ('9ab303fb7aad74b1', '4d551e7524889b10', 'd6ac133f0c19d7ef', '5c6f6ffa4f2cceb8'),
    'mod97': ('b90164923d4b8aa2', '8e3cf4b9242237c4', '587e4d77c2d105bc', 'd0b2dd3e747f49c9'),
    'slots18': ('927a3ec28cf63b6e', 'e0b52ef221de3eab', '3299d80f46444c62', '5f8b224f8f471772'),
}


@pytest.mark.parametrize("name", CONFIGS)
def test_training_batches_are_todays(name):
    task, batch_size = CONFIGS[name]
    assert (stream_digest(task, batch_size), sample_digest(task)) == GOLDEN[name][:2]
    assert (stream_digest(task, batch_size, fast_data.stream_chunk),
            sample_digest(task, fast_data.training_rows)) == GOLDEN[name][:2]


@pytest.mark.parametrize("name", CONFIGS)
def test_pools_and_exact_sets_are_todays(name):
    task, _ = CONFIGS[name]
    assert (pools_digest(task), exact_digest(task)) == GOLDEN[name][2:]


# ---------------------------------------------------------------------------- the pieces that replace torch's sorts
def test_merge_exchange_sorts_every_zero_one_input():
    """By the 0-1 principle a comparator network that sorts every 0/1 input sorts every input: checked whole up
    to 16 keys, the longest row torch sorts stably."""
    for n in range(1, 17):
        inputs = (np.arange(2**n)[:, None] >> np.arange(n)) & 1  # every 0/1 vector of length n, one per row
        columns = list(inputs.T.copy())
        for i, j in _merge_exchange(n):
            columns[i], columns[j] = np.minimum(columns[i], columns[j]), np.maximum(columns[i], columns[j])
        assert (np.diff(np.stack(columns, 1), axis=1) >= 0).all(), n


@pytest.mark.parametrize("n", [2, 3, 6, 12, 17, 24, 26])
def test_the_pruned_network_gives_the_smallest_in_order(n):
    rng = np.random.default_rng(n)
    values = rng.permutation(10 * n * 500)[: n * 500].reshape(500, n).astype(np.int32)  # distinct
    for k in {1, min(6, n), n}:
        smallest = _smallest(list(values.T.copy()), k)
        assert np.array_equal(np.stack(smallest, 1), np.sort(values, 1)[:, :k]), k


def tie_heavy_keys(b: int, n: int, seed: int) -> torch.Tensor:
    """Keys as build_sequences sorts them (multiples of 2^-24 in [0, 1)), from only 4 values: most rows tie."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 4, (b, n), generator=g).float() * 0.25


def test_torch_sorts_short_rows_stably():
    """What the packed sort relies on: torch's CPU argsort keeps equal keys in index order in rows of up to 16."""
    for n in range(1, TORCH_SORT_STABLE_UP_TO + 1):
        keys = tie_heavy_keys(4000, n, n)
        assert torch.equal(keys.argsort(dim=1), keys.argsort(dim=1, stable=True)), n


@pytest.mark.parametrize("n", [1, 2, 5, 12, 16, 17, 24, 26])
def test_first_variables_are_torchs_argsort_despite_ties(n):
    keys = tie_heavy_keys(3000, n, 100 + n)
    keys[:, 0], keys[::3, n - 1] = -2.0, -1.0  # the query variables' forced keys
    for slots in {1, min(6, n), n}:
        expected = keys.argsort(dim=1)[:, :slots]
        got = torch.from_numpy(np.stack(_first_variables(keys.numpy().copy(), slots), 1)).long()
        assert torch.equal(got, expected), slots


@pytest.mark.parametrize("slots", [1, 2, 6, 16, 18])
def test_ranks_are_the_inverse_of_torchs_argsort_despite_ties(slots):
    keys = tie_heavy_keys(3000, slots, 200 + slots)
    n_assign = torch.randint(1, slots + 1, (3000,), generator=torch.Generator().manual_seed(slots))
    used = torch.arange(slots) < n_assign[:, None]
    filled = torch.where(used, keys, 2.0)
    perm = filled.argsort(dim=1)
    rank = np.stack(_ranks(keys.numpy(), [u.numpy() for u in used.T.contiguous()]), 1)
    # where a used slot goes: the position of the slot in torch's order (unused slots' order is never read)
    got = torch.from_numpy(rank).long().gather(1, perm)
    assert torch.equal(torch.where(used, got, 0), torch.where(used, torch.arange(slots).expand_as(got), 0))


def test_both_pad_counts_agree():
    """The packed PAD count (one integer per row) and the rank-by-rank one, on the paper's layout."""
    task = TaskConfig()
    layout = _layout(task)
    g = torch.Generator().manual_seed(3)
    n_assign = torch.randint(1, layout.slots + 1, (5000,), generator=g).numpy()
    rank = [np.minimum(torch.randint(0, layout.slots, (5000,), generator=g).numpy(), n_assign - 1).astype(np.int32)
            for _ in range(layout.slots)]
    draws = torch.rand(5000, layout.pads, generator=g).numpy()
    packed = _pads_before(draws, n_assign, task.prefix_len, rank, layout)
    counted = _pads_before(draws, n_assign, task.prefix_len, rank, replace(layout, count_dtype=None))
    assert layout.count_dtype is not None and all(np.array_equal(a, b) for a, b in zip(packed, counted))
    gaps = (torch.from_numpy(draws) * torch.from_numpy(n_assign + 1)[:, None]).long()  # the first version's PADs
    real = torch.arange(layout.pads) < torch.from_numpy(task.prefix_len - 2 * n_assign)[:, None]
    for r, count in zip(rank, counted):
        assert np.array_equal(count, ((gaps <= torch.from_numpy(r)[:, None]) & real).sum(1).numpy())


@pytest.mark.parametrize("modulus, dtype", [(59, torch.uint8), (300, torch.int16)])
def test_compact_rows_are_the_same_numbers(modulus, dtype):
    task = TaskConfig(modulus=modulus, pool_size=10)
    for rows in (sample_queries, fast_data.training_rows):
        wide = rows(task, 500, torch.Generator().manual_seed(1))
        compact = rows(task, 500, torch.Generator().manual_seed(1), compact=True)
        assert compact_dtype(task) == compact.tokens.dtype == compact.answers.dtype == dtype
        assert wide.tokens.dtype == wide.answers.dtype == torch.long
        assert torch.equal(compact.tokens.long(), wide.tokens) and torch.equal(compact.answers.long(), wide.answers)


def test_a_fork_that_changes_the_reference_trains_on_its_own_batches(monkeypatch, capsys):
    """The fast generator checks itself against `core.data` once per task: where a fork builds its sequences another
    way, the training stream is the reference's, said in one line."""
    from assignadd_core.core import data
    task = TaskConfig(**TINY_TASK, pool_size=50)
    assert fast_data.agrees(task) and capsys.readouterr().err == ""
    real = data.build_sequences

    def reversed_prefix(task, *args, **kwargs):  # another sequence format: the prefix written backwards
        batch = real(task, *args, **kwargs)
        batch.tokens[:, :task.prefix_len] = batch.tokens[:, :task.prefix_len].flip(1)
        return batch
    monkeypatch.setattr(data, "build_sequences", reversed_prefix)
    fast_data.agrees.cache_clear()
    try:
        assert torch.equal(fast_data.stream_chunk(task, 8, 3, 0, 2)[0], data.stream_chunk(task, 8, 3, 0, 2)[0])
        assert "builds other training rows" in capsys.readouterr().err
    finally:
        fast_data.agrees.cache_clear()
