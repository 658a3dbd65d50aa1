"""The assign-and-add task: vocabulary, train/held-out split, vectorised sequence generation,
the nine evaluation pools and the two exact sets (SPEC §1, §2, §5).

Sequences are built for many rows at once from a seeded `torch.Generator`; there is no
per-sequence Python loop. Training batches come from a stateless stream: the batch of a step
depends only on (seed, step), so a resumed run sees exactly the data of an uninterrupted one.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, fields

import torch

from .config import ConfigError, TaskConfig

# Query types. 1-var comes in two flavours: the variable on the left or on the right.
ZERO_VAR, ONE_VAR_LEFT, ONE_VAR_RIGHT, TWO_VAR = 0, 1, 2, 3
QUERY_TYPE_NAMES = ("0-var", "1-var (left)", "1-var (right)", "2-var")

POOL_NAMES = (
    "0var_train", "0var_add_restricted",
    "1var_train", "1var_add_restricted", "1var_var_restricted",
    "2var_train", "2var_add_restricted", "2var_var_restricted_1", "2var_var_restricted_2",
)
EXACT_NAMES = ("0var_heldout", "2var_union")
LITERAL = -1  # marks an operand that is a number, not a variable


# ----------------------------------------------------------------------------- vocabulary
class Vocab:
    """Token ids: numbers 0..N-1, then `+`, `=`, `PAD`, then the variables a, b, ..."""

    def __init__(self, task: TaskConfig):
        self.task = task
        self.plus, self.eq, self.pad = task.modulus, task.modulus + 1, task.modulus + 2
        self.var0 = task.modulus + 3
        self.size = task.vocab_size
        names = [str(n) for n in range(task.modulus)] + ["+", "=", "PAD"] + list(task.var_names)
        self.names = tuple(names)
        self.ids = {name: i for i, name in enumerate(names)}

    def var_token(self, var: int) -> int:
        return self.var0 + var

    def encode(self, text: str) -> torch.Tensor:
        """'PAD a 40 + a 27 =' -> tensor of ids. Raises ConfigError on an unknown token."""
        out = []
        for word in text.split():
            if word not in self.ids:
                raise ConfigError(f"unknown token {word!r}; tokens are 0..{self.task.modulus - 1}, +, =, PAD,"
                                  f" {', '.join(self.task.var_names)}")
            out.append(self.ids[word])
        return torch.tensor(out, dtype=torch.long)

    def decode(self, tokens) -> str:
        return " ".join(self.names[int(t)] for t in tokens)


# ----------------------------------------------------------------------------- the split
@dataclass(frozen=True)
class Split:
    """Which operand pairs and which variable positions training may use."""

    train_pairs: torch.Tensor  # [P, 2] (lhs value, rhs value)
    heldout_pairs: torch.Tensor  # [N*N - P, 2]
    train_mask: torch.Tensor  # [N, N] bool: True where (n1, n2) is a training pair
    left_vars: torch.Tensor  # variables allowed as the left operand in training
    right_vars: torch.Tensor  # variables allowed as the right operand in training
    allowed_var_pairs: torch.Tensor  # [A, 2] ordered 2-var pairs seen in training (92 at the paper's settings)
    one_forbidden_var_pairs: torch.Tensor  # exactly one operand in a forbidden position (36)
    both_forbidden_var_pairs: torch.Tensor  # lhs right-only and rhs left-only (4)
    left_forbidden_vars: torch.Tensor  # right-only variables: never on the left in training
    right_forbidden_vars: torch.Tensor  # left-only variables: never on the right in training


@functools.lru_cache(maxsize=64)
def make_split(task: TaskConfig) -> Split:
    n, n_vars = task.modulus, task.n_vars
    gen = torch.Generator().manual_seed(task.split_seed)
    order = torch.randperm(n * n, generator=gen)
    train_ids = order[: task.n_train_pairs].sort().values
    train_mask = torch.zeros(n * n, dtype=torch.bool)
    train_mask[train_ids] = True
    pairs = torch.stack(torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij"), -1).reshape(-1, 2)
    train_pairs, heldout_pairs = pairs[train_mask], pairs[~train_mask]
    seen = torch.zeros(n, dtype=torch.bool)
    seen[train_pairs.flatten()] = True
    if not bool(seen.all()):
        missing = torch.nonzero(~seen).flatten().tolist()
        raise ConfigError(f"train_fraction={task.train_fraction} (split_seed={task.split_seed}) leaves number(s)"
                          f" {missing[:10]} out of every training pair; raise train_fraction")

    left_only = torch.arange(task.n_left_only)
    right_only = torch.arange(n_vars - task.n_right_only, n_vars)
    is_left_only = torch.zeros(n_vars, dtype=torch.bool)
    is_left_only[left_only] = True
    is_right_only = torch.zeros(n_vars, dtype=torch.bool)
    is_right_only[right_only] = True
    v1, v2 = torch.meshgrid(torch.arange(n_vars), torch.arange(n_vars), indexing="ij")
    v1, v2 = v1.flatten(), v2.flatten()
    distinct = v1 != v2
    bad_left, bad_right = is_right_only[v1], is_left_only[v2]
    var_pairs = torch.stack([v1, v2], -1)
    return Split(
        train_pairs=train_pairs,
        heldout_pairs=heldout_pairs,
        train_mask=train_mask.reshape(n, n),
        left_vars=torch.nonzero(~is_right_only).flatten(),
        right_vars=torch.nonzero(~is_left_only).flatten(),
        allowed_var_pairs=var_pairs[distinct & ~bad_left & ~bad_right],
        one_forbidden_var_pairs=var_pairs[distinct & (bad_left ^ bad_right)],
        both_forbidden_var_pairs=var_pairs[distinct & bad_left & bad_right],
        left_forbidden_vars=right_only,
        right_forbidden_vars=left_only,
    )


# ----------------------------------------------------------------------------- sequences
@dataclass
class Batch:
    """Sequences plus what was asked: handy for analysis (which position holds each operand value)."""

    tokens: torch.Tensor  # [B, seq_len]
    answers: torch.Tensor  # [B] (lhs_val + rhs_val) mod N
    lhs_val: torch.Tensor
    rhs_val: torch.Tensor
    lhs_var: torch.Tensor  # variable index, or LITERAL
    rhs_var: torch.Tensor
    lhs_src: torch.Tensor  # position holding the lhs value: its assigned value token, or 13 for a literal
    rhs_src: torch.Tensor
    n_assign: torch.Tensor  # assignments in the prefix

    def __len__(self) -> int:
        return self.tokens.shape[0]

    def __getitem__(self, index) -> "Batch":
        return Batch(**{f.name: getattr(self, f.name)[index] for f in fields(self)})

    @staticmethod
    def cat(batches: list["Batch"]) -> "Batch":
        return Batch(**{f.name: torch.cat([getattr(b, f.name) for b in batches]) for f in fields(Batch)})

    @property
    def query_type(self) -> torch.Tensor:
        has_l, has_r = self.lhs_var >= 0, self.rhs_var >= 0
        return torch.where(has_l & has_r, TWO_VAR,
                           torch.where(has_l, ONE_VAR_LEFT, torch.where(has_r, ONE_VAR_RIGHT, ZERO_VAR)))


def build_sequences(task: TaskConfig, lhs_val, rhs_val, lhs_var, rhs_var, gen: torch.Generator) -> Batch:
    """Wrap queries in random prefixes of assignments and PADs (SPEC §1), all rows at once.

    The query variables are assigned their operand values; the other assignments are distractors
    with distinct variables and uniform values, in shuffled order; each PAD falls uniformly into
    one of the n + 1 gaps around the n assignments.
    """
    vocab = Vocab(task)
    b = lhs_val.shape[0]
    n_vars, prefix = task.n_vars, task.prefix_len
    slots = min(task.max_assignments, n_vars)
    has_l, has_r = lhs_var >= 0, rhs_var >= 0
    arange_slots = torch.arange(slots)

    n_assign = torch.randint(1, slots + 1, (b,), generator=gen)
    n_assign = torch.maximum(n_assign, has_l.long() + has_r.long())

    # Distinct variables, the query's first: sort random keys with the query variables forced to the front.
    keys = torch.rand(b, n_vars, generator=gen)
    rows = torch.arange(b)
    keys[rows[has_l], lhs_var[has_l]] = -2.0
    keys[rows[has_r], rhs_var[has_r]] = -1.0
    variables = keys.argsort(dim=1)[:, :slots]
    values = torch.randint(0, task.modulus, (b, slots), generator=gen)
    values[:, 0] = torch.where(has_l, lhs_val, values[:, 0])
    rhs_slot = has_l.long()  # the rhs variable sorts right after the lhs one
    values[rows, rhs_slot] = torch.where(has_r, rhs_val, values[rows, rhs_slot])

    # Shuffle the n real assignments; unused slots stay at the end.
    order_keys = torch.rand(b, slots, generator=gen)
    order_keys[arange_slots[None, :] >= n_assign[:, None]] = 2.0
    perm = order_keys.argsort(dim=1)
    variables, values = variables.gather(1, perm), values.gather(1, perm)

    # PADs: each of the prefix - 2n PADs picks a gap 0..n; assignment i starts after the PADs in gaps <= i.
    max_pads = prefix - 2
    n_pads = prefix - 2 * n_assign
    gaps = (torch.rand(b, max_pads, generator=gen) * (n_assign[:, None] + 1)).long()
    real_pad = torch.arange(max_pads)[None, :] < n_pads[:, None]
    pads_before = ((gaps[:, None, :] <= arange_slots[None, :, None]) & real_pad[:, None, :]).sum(-1)
    start = 2 * arange_slots[None, :] + pads_before
    used = arange_slots[None, :] < n_assign[:, None]
    dump = prefix  # unused slots write into a scratch column that is cut off
    var_pos = torch.where(used, start, dump)
    val_pos = torch.where(used, start + 1, dump + 1)
    buffer = torch.full((b, prefix + 2), vocab.pad, dtype=torch.long)
    buffer.scatter_(1, var_pos, variables + vocab.var0)
    buffer.scatter_(1, val_pos, values)

    # Where each original slot's value ended up: slot 0 is the lhs variable (if any), then the rhs one.
    value_pos_by_slot = torch.empty_like(val_pos).scatter_(1, perm, val_pos)
    lhs_src = torch.where(has_l, value_pos_by_slot[:, 0], prefix + 1)
    rhs_src = torch.where(has_r, value_pos_by_slot[rows, rhs_slot], prefix + 2)

    lhs_tok = torch.where(has_l, lhs_var + vocab.var0, lhs_val)
    rhs_tok = torch.where(has_r, rhs_var + vocab.var0, rhs_val)
    query = torch.stack([torch.full_like(lhs_tok, vocab.plus), lhs_tok, rhs_tok,
                         torch.full_like(lhs_tok, vocab.eq)], 1)
    tokens = torch.cat([buffer[:, :prefix], query], 1)
    return Batch(tokens=tokens, answers=(lhs_val + rhs_val) % task.modulus,
                 lhs_val=lhs_val, rhs_val=rhs_val, lhs_var=lhs_var, rhs_var=rhs_var,
                 lhs_src=lhs_src, rhs_src=rhs_src, n_assign=n_assign)


def _pick(rows: torch.Tensor, n: int, gen: torch.Generator) -> torch.Tensor:
    """n uniform draws (with replacement) of the rows of a tensor."""
    return rows[torch.randint(0, rows.shape[0], (n,), generator=gen)]


def type_weights(task: TaskConfig) -> torch.Tensor:
    """Relative frequency of (0-var, 1-var left, 1-var right, 2-var) training rows.

    The authors sample uniformly over rows: per operand pair one 0-var row per variable, one 1-var
    row per allowed (variable, side) and one 2-var row per allowed left variable; each 2-var row is
    then kept with probability r. At the paper's settings that is 12 : 10 : 10 : 10 r, i.e.
    28.6 / 47.6 / 23.8 % for r = 1 (SPEC §2). The split of the 12 : 20 : 10 row counts over our
    per-pair rows is our reading of that mix.
    """
    v, left, right = task.n_vars, task.n_left_only, task.n_right_only
    return torch.tensor([v, v - right, v - left, (v - right) * float(task.two_var_rate)], dtype=torch.float64)


def sample_queries(task: TaskConfig, n: int, gen: torch.Generator, kind: str = "train") -> Batch:
    """n training rows (kind='train') or rows of one evaluation pool (kind = a POOL_NAMES entry)."""
    split = make_split(task)
    lit = torch.full((n,), LITERAL, dtype=torch.long)
    if kind == "train":
        qtype = torch.multinomial(type_weights(task).float(), n, replacement=True, generator=gen)
        pairs = _pick(split.train_pairs, n, gen)
        left = _pick(split.left_vars, n, gen)
        right = _pick(split.right_vars, n, gen)
        two = _pick(split.allowed_var_pairs, n, gen)
        lhs_var = torch.where(qtype == ONE_VAR_LEFT, left, torch.where(qtype == TWO_VAR, two[:, 0], lit))
        rhs_var = torch.where(qtype == ONE_VAR_RIGHT, right, torch.where(qtype == TWO_VAR, two[:, 1], lit))
        return build_sequences(task, pairs[:, 0], pairs[:, 1], lhs_var, rhs_var, gen)

    if kind not in POOL_NAMES:
        raise ConfigError(f"unknown pool {kind!r}; pools are {', '.join(POOL_NAMES)}")
    pair_set = split.heldout_pairs if "add_restricted" in kind else split.train_pairs
    if pair_set.shape[0] == 0:
        return build_sequences(task, *(torch.zeros(0, dtype=torch.long),) * 4, gen)
    pairs = _pick(pair_set, n, gen)
    if kind.startswith("0var"):
        lhs_var, rhs_var = lit, lit
    elif kind.startswith("1var"):
        if kind == "1var_var_restricted":  # a right-only variable on the left, or a left-only one on the right
            left_pool, right_pool = split.left_forbidden_vars, split.right_forbidden_vars
        else:
            left_pool, right_pool = split.left_vars, split.right_vars
        n_left_choices, n_right_choices = left_pool.shape[0], right_pool.shape[0]
        if n_left_choices + n_right_choices == 0:
            return build_sequences(task, *(torch.zeros(0, dtype=torch.long),) * 4, gen)
        # uniform over (variable, side) combinations
        choice = torch.randint(0, n_left_choices + n_right_choices, (n,), generator=gen)
        on_left = choice < n_left_choices
        var = torch.where(on_left, left_pool[choice.clamp(max=max(n_left_choices - 1, 0))] if n_left_choices else lit,
                          right_pool[(choice - n_left_choices).clamp(min=0)] if n_right_choices else lit)
        lhs_var, rhs_var = torch.where(on_left, var, lit), torch.where(on_left, lit, var)
    else:
        var_pairs = {"2var_var_restricted_1": split.one_forbidden_var_pairs,
                     "2var_var_restricted_2": split.both_forbidden_var_pairs}.get(kind, split.allowed_var_pairs)
        if var_pairs.shape[0] == 0:
            return build_sequences(task, *(torch.zeros(0, dtype=torch.long),) * 4, gen)
        two = _pick(var_pairs, n, gen)
        lhs_var, rhs_var = two[:, 0], two[:, 1]
    return build_sequences(task, pairs[:, 0], pairs[:, 1], lhs_var, rhs_var, gen)


@functools.lru_cache(maxsize=16)
def eval_pools(task: TaskConfig) -> dict[str, Batch]:
    """The nine fixed pools of `pool_size` sequences (empty when the split has no such sequence)."""
    pools = {}
    for i, name in enumerate(POOL_NAMES):
        gen = torch.Generator().manual_seed(task.eval_seed * 1000 + i)
        pools[name] = sample_queries(task, task.pool_size, gen, kind=name)
    return pools


@functools.lru_cache(maxsize=4)
def exact_sets(task: TaskConfig) -> dict[str, Batch]:
    """Exhaustive end-of-training sets: every held-out pair as 0-var, and the 2-var union (SPEC §5)."""
    split = make_split(task)
    gen = torch.Generator().manual_seed(task.eval_seed * 1000 + 999)
    held = split.heldout_pairs
    lit = torch.full((held.shape[0],), LITERAL, dtype=torch.long)
    zero = build_sequences(task, held[:, 0], held[:, 1], lit, lit, gen)

    def product(pairs: torch.Tensor, var_pairs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        p = pairs.repeat_interleave(var_pairs.shape[0], 0)
        v = var_pairs.repeat(pairs.shape[0], 1)
        return p, v

    parts = [product(held, split.allowed_var_pairs),
             product(split.train_pairs, split.one_forbidden_var_pairs),
             product(split.train_pairs, split.both_forbidden_var_pairs)]
    pairs = torch.cat([p for p, _ in parts])
    var_pairs = torch.cat([v for _, v in parts])
    union = build_sequences(task, pairs[:, 0], pairs[:, 1], var_pairs[:, 0], var_pairs[:, 1], gen)
    return {"0var_heldout": zero, "2var_union": union}


# ----------------------------------------------------------------------------- training stream
class TrainStream:
    """Training batches as a pure function of (seed, step): resumable without saving RNG state.

    Rows are generated `chunk_steps` batches at a time (vectorisation pays off on big chunks); each
    chunk has its own generator seeded from (seed, chunk index).
    """

    def __init__(self, task: TaskConfig, batch_size: int, seed: int, chunk_steps: int = 100):
        make_split(task)  # fail early on a bad split
        self.task, self.batch_size, self.seed, self.chunk_steps = task, batch_size, seed, chunk_steps
        self._chunk_index, self._chunk = None, None

    def _load_chunk(self, index: int) -> None:
        gen = torch.Generator().manual_seed((self.seed * 1_000_003 + index * 7_919 + 17) % (2**63))
        self._chunk = sample_queries(self.task, self.chunk_steps * self.batch_size, gen)
        self._chunk_index = index

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Tokens and answers of 1-indexed training step `step`."""
        index, offset = divmod(step - 1, self.chunk_steps)
        if index != self._chunk_index:
            self._load_chunk(index)
        lo = offset * self.batch_size
        return self._chunk.tokens[lo: lo + self.batch_size], self._chunk.answers[lo: lo + self.batch_size]
