"""The assign-and-add task: vocabulary, train/held-out split, vectorised sequence generation,
the nine evaluation pools and the two exact sets (book/protocol.md).

Sequences are built for many rows at once from a seeded `torch.Generator`; there is no
per-sequence Python loop. Training batches come from a stateless stream: the batch of a step
depends only on (seed, step), so a resumed run sees exactly the data of an uninterrupted one.
`build_sequences` here is what a batch is; `experiments.fast_data` builds the same batches several times faster
for the training stream (tests/test_data_golden.py pins both to the same bits).
"""
from __future__ import annotations

import functools
import random
from dataclasses import dataclass, fields

import numpy as np
import torch

from .config import OPERATIONS, ConfigError, TaskConfig

# Query types. 1-var comes in two flavours: the variable on the left or on the right.
ZERO_VAR, ONE_VAR_LEFT, ONE_VAR_RIGHT, TWO_VAR = 0, 1, 2, 3
QUERY_TYPE_NAMES = ("0-var", "1-var (left)", "1-var (right)", "2-var")


# ----------------------------------------------------------------------------- evaluation pools, as data
@dataclass(frozen=True)
class PoolSpec:
    """One evaluation pool (book/protocol.md): what its queries ask (figures draw it by `palette.pool_style`)."""

    name: str
    query: int  # variable operands per query: 0, 1 or 2
    pairs: str  # operand pairs drawn from: a key of PAIR_SETS
    variables: str  # which variables, at which sides: a key of VARIABLE_RULES
    label: str

    def __post_init__(self) -> None:  # a mistyped table row fails at import, not in a chapter
        if self.pairs not in PAIR_SETS or VARIABLE_RULES.get(self.variables, (None,))[0] != self.query:
            raise ConfigError(f"pool {self.name!r}: pairs {self.pairs!r} or variables {self.variables!r}"
                              f" do not fit a {self.query}-var query")


# What a spec's words mean, as the fields of `Split` that sample_queries draws from.
PAIR_SETS = {"train": "train_pairs", "heldout": "heldout_pairs",
             "two_var_rows": "two_var_row_pairs"}  # two_var_rows: training pairs as 2-var training covers them
VARIABLE_RULES = {  # rule -> (query type, Split fields: (left, right) variables for 1-var, ordered pairs for 2-var)
    "literal": (0, ()),  # both operands are numbers
    "allowed": (1, ("left_vars", "right_vars")),  # one variable, on a side it takes in training
    "forbidden": (1, ("left_forbidden_vars", "right_forbidden_vars")),  # right-only on the left, left-only on the right
    "allowed_pairs": (2, ("allowed_var_pairs",)),  # an ordered variable pair seen in training
    "one_forbidden_pairs": (2, ("one_forbidden_var_pairs",)),  # exactly one operand in a never-seen position
    "both_forbidden_pairs": (2, ("both_forbidden_var_pairs",)),  # both operands in never-seen positions
}
# The nine pools, in the order of metrics.csv; each pool draws from its own generator seeded by its index.
POOLS = (
    PoolSpec("0var_train", 0, "train", "literal", "0-var train"),
    PoolSpec("0var_add_restricted", 0, "heldout", "literal", "0-var add-restricted"),
    PoolSpec("1var_train", 1, "train", "allowed", "1-var train"),
    PoolSpec("1var_add_restricted", 1, "heldout", "allowed", "1-var add-restricted"),
    PoolSpec("1var_var_restricted", 1, "train", "forbidden", "1-var var-restricted"),
    PoolSpec("2var_train", 2, "two_var_rows", "allowed_pairs", "2-var train"),
    PoolSpec("2var_add_restricted", 2, "heldout", "allowed_pairs", "2-var add-restricted"),
    PoolSpec("2var_var_restricted_1", 2, "two_var_rows", "one_forbidden_pairs", "2-var var-restricted (1)"),
    PoolSpec("2var_var_restricted_2", 2, "two_var_rows", "both_forbidden_pairs", "2-var var-restricted (2)"),
)
POOL_NAMES = tuple(spec.name for spec in POOLS)
# The var-restricted pools: a variable operand in a position training never uses (claim C3).
VAR_RESTRICTED = tuple(spec.name for spec in POOLS if "forbidden" in spec.variables)
_POOLS_BY_NAME = {spec.name: spec for spec in POOLS}


def pool_spec(name: str) -> PoolSpec:
    """The spec of pool `name`; an unknown name is a ConfigError that lists the pools."""
    if name not in _POOLS_BY_NAME:
        raise ConfigError(f"unknown pool {name!r}; pools are {', '.join(POOL_NAMES)}")
    return _POOLS_BY_NAME[name]


EXACT_NAMES = ("0var_heldout", "2var_union")
LITERAL = -1  # marks an operand that is a number, not a variable


# ----------------------------------------------------------------------------- vocabulary
class Vocab:
    """Token ids: numbers 0..N-1, then `+`, `=`, `PAD`, then the variables a, b, ..."""

    def __init__(self, task: TaskConfig):
        self.task, self.size = task, task.vocab_size
        self.plus, self.eq, self.pad, self.var0 = task.modulus, task.modulus + 1, task.modulus + 2, task.modulus + 3
        self.names = (*(str(n) for n in range(task.modulus)), "+", "=", "PAD", *task.var_names)
        self.ids = {name: i for i, name in enumerate(self.names)}

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
    two_var_row_pairs: torch.Tensor  # [K, 2] operand pair of each kept 2-var row (repeats: one per kept row)

    @property
    def two_var_pairs_covered(self) -> int:
        """Training pairs that appear in at least one 2-var training query."""
        return int(torch.unique(self.two_var_row_pairs, dim=0).shape[0]) if self.two_var_row_pairs.numel() else 0


def row_major_pairs(modulus: int) -> torch.Tensor:
    """All ordered operand pairs [(0,0), (0,1), ..., (N-1,N-1)] as an [N*N, 2] tensor."""
    grid = torch.meshgrid(torch.arange(modulus), torch.arange(modulus), indexing="ij")
    return torch.stack(grid, -1).reshape(-1, 2)


def authors_train_mask(task: TaskConfig) -> torch.Tensor:
    """[N*N] bool, row-major: the training pairs as the authors draw them.

    Python's `random.Random(split_seed).sample` of floor(f * N^2) pairs from the row-major pair list,
    so the held-out pairs are exactly the paper's (at f = 0.7 the first are (0,0), (0,5), (0,7), ...).
    """
    n = task.modulus
    pairs = [(n1, n2) for n1 in range(n) for n2 in range(n)]
    chosen = random.Random(task.split_seed).sample(pairs, task.n_train_pairs)
    mask = torch.zeros(n * n, dtype=torch.bool)
    mask[torch.tensor([n1 * n + n2 for n1, n2 in chosen], dtype=torch.long)] = True
    return mask


def two_var_row_index(task: TaskConfig, var: int, n1: int, n2: int) -> int:
    """The authors' index of the 2-var row (variable `var`, type 3, pair (n1, n2)) in their row table."""
    n = task.modulus
    return ((var * 4 + TWO_VAR) * n + n1) * n + n2


def kept_two_var_rows(task: TaskConfig, train_pairs: torch.Tensor, left_vars: torch.Tensor) -> torch.Tensor:
    """[K, 2]: the operand pair of every kept 2-var row (a pair repeats once per kept row).

    Under the paper's rule every training pair has one 2-var row per allowed left variable, kept iff
    `random.Random(split_seed + row index).random() < r`: a fixed choice per row, so r removes 2-var
    rows and with them the pairs whose rows are all dropped. Under the share-only ablation every
    row is kept and r acts on the mix alone (`type_weights`).
    """
    r = float(task.two_var_rate)
    rows = [(v, n1, n2) for v in left_vars.tolist() for n1, n2 in train_pairs.tolist()]
    if task.two_var_rule == "paper_rows" and r < 1.0:  # random() < 1 always holds: no draw needed at r = 1
        seed = task.split_seed
        rows = [row for row in rows if random.Random(seed + two_var_row_index(task, *row)).random() < r]
    return torch.tensor([[n1, n2] for _, n1, n2 in rows], dtype=torch.long).reshape(-1, 2)


@functools.lru_cache(maxsize=64)
def make_split(task: TaskConfig) -> Split:
    n, n_vars = task.modulus, task.n_vars
    train_mask = authors_train_mask(task)
    pairs = row_major_pairs(n)
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
    left_vars = torch.nonzero(~is_right_only).flatten()
    return Split(
        train_pairs=train_pairs,
        heldout_pairs=heldout_pairs,
        train_mask=train_mask.reshape(n, n),
        left_vars=left_vars,
        right_vars=torch.nonzero(~is_left_only).flatten(),
        allowed_var_pairs=var_pairs[distinct & ~bad_left & ~bad_right],
        one_forbidden_var_pairs=var_pairs[distinct & (bad_left ^ bad_right)],
        both_forbidden_var_pairs=var_pairs[distinct & bad_left & bad_right],
        left_forbidden_vars=right_only,
        right_forbidden_vars=left_only,
        two_var_row_pairs=kept_two_var_rows(task, train_pairs, left_vars),
    )


def split_summary(task: TaskConfig) -> dict:
    """What a config trains on, as plain data (the `split --json` interface)."""
    split = make_split(task)
    n = task.modulus
    held = split.heldout_pairs
    return {"train_pairs": int(split.train_pairs.shape[0]), "heldout_pairs": int(held.shape[0]),
            "heldout_sum": int((held[:, 0] * n + held[:, 1]).sum()) if held.numel() else 0,
            "heldout_first": held[:5].tolist(),
            "two_var_rows": int(split.two_var_row_pairs.shape[0]),
            "two_var_pairs_covered": split.two_var_pairs_covered,
            "mix": query_mix(task)}


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


def compact_dtype(task: TaskConfig) -> torch.dtype:
    """The smallest integer dtype that holds every token id (and so every answer): uint8 up to 256 tokens."""
    return torch.uint8 if task.vocab_size <= 256 else torch.int16 if task.vocab_size <= 2**15 else torch.int32


def build_sequences(task: TaskConfig, lhs_val, rhs_val, lhs_var, rhs_var, gen: torch.Generator,
                    compact: bool = False) -> Batch:
    """Wrap queries in random prefixes of assignments and PADs (book/protocol.md, 'The task'), all rows at once: what
    a batch is (`experiments.fast_data` builds the same batches, bit for bit, several times faster).

    The query variables are assigned their operand values; the other assignments are distractors with distinct
    variables and uniform values, in shuffled order; each PAD falls uniformly into one of the n + 1 gaps around the n
    assignments. `compact`: tokens and answers in `compact_dtype(task)` instead of int64 (the same numbers).
    """
    vocab = Vocab(task)
    b, prefix = lhs_val.shape[0], task.prefix_len
    slots = min(task.max_assignments, task.n_vars)
    has_l, has_r = lhs_var >= 0, rhs_var >= 0
    arange_slots, rows = torch.arange(slots), torch.arange(b)
    n_assign = torch.maximum(torch.randint(1, slots + 1, (b,), generator=gen), has_l.long() + has_r.long())

    # Distinct variables, the query's first: the smallest of random keys, the query variables' forced to -2, -1.
    keys = torch.rand(b, task.n_vars, generator=gen)
    keys[rows[has_l], lhs_var[has_l]] = -2.0
    keys[rows[has_r], rhs_var[has_r]] = -1.0
    variables = keys.argsort(dim=1)[:, :slots]
    values = torch.randint(0, task.modulus, (b, slots), generator=gen)
    values[:, 0] = torch.where(has_l, lhs_val, values[:, 0])
    rhs_slot = has_l.long()  # the rhs variable sorts right after the lhs one
    values[rows, rhs_slot] = torch.where(has_r, rhs_val, values[rows, rhs_slot])

    # Shuffle the n real assignments (unused slots stay at the end); PADs fall into the gaps between them.
    order_keys = torch.rand(b, slots, generator=gen)
    order_keys[arange_slots[None, :] >= n_assign[:, None]] = 2.0
    perm = order_keys.argsort(dim=1)
    variables, values = variables.gather(1, perm), values.gather(1, perm)
    gaps = (torch.rand(b, prefix - 2, generator=gen) * (n_assign[:, None] + 1)).long()
    real_pad = torch.arange(prefix - 2)[None, :] < (prefix - 2 * n_assign)[:, None]
    pads_before = ((gaps[:, None, :] <= arange_slots[None, :, None]) & real_pad[:, None, :]).sum(-1)

    # Assignment i starts after the i before it and the PADs in gaps <= i; unused slots are written past the prefix.
    start = 2 * arange_slots[None, :] + pads_before
    used = arange_slots[None, :] < n_assign[:, None]
    var_pos, val_pos = torch.where(used, start, prefix), torch.where(used, start + 1, prefix + 1)
    buffer = torch.full((b, prefix + 2), vocab.pad, dtype=torch.long)
    buffer.scatter_(1, var_pos, variables + vocab.var0)
    buffer.scatter_(1, val_pos, values)
    value_pos_by_slot = torch.empty_like(val_pos).scatter_(1, perm, val_pos)
    lhs_query, rhs_query = task.operand_positions  # a literal operand is read from the query itself
    lhs_src = torch.where(has_l, value_pos_by_slot[:, 0], lhs_query)
    rhs_src = torch.where(has_r, value_pos_by_slot[rows, rhs_slot], rhs_query)
    lhs_tok = torch.where(has_l, lhs_var + vocab.var0, lhs_val)
    rhs_tok = torch.where(has_r, rhs_var + vocab.var0, rhs_val)
    query = torch.stack([torch.full_like(lhs_tok, vocab.plus), lhs_tok, rhs_tok, torch.full_like(lhs_tok, vocab.eq)], 1)
    tokens = torch.cat([buffer[:, :prefix], query], 1)
    answers = OPERATIONS[task.operation](lhs_val, rhs_val, task.modulus)
    if compact:
        tokens, answers = tokens.to(compact_dtype(task)), answers.to(compact_dtype(task))
    return Batch(tokens=tokens, answers=answers, lhs_val=lhs_val, rhs_val=rhs_val, lhs_var=lhs_var, rhs_var=rhs_var,
                 lhs_src=lhs_src, rhs_src=rhs_src, n_assign=n_assign)


def _no_rows(task: TaskConfig, gen: torch.Generator) -> Batch:
    """An empty pool: the split has no sequence of its kind (e.g. no held-out pair at f = 1)."""
    return build_sequences(task, *(torch.zeros(0, dtype=torch.long),) * 4, gen)


def _pick(rows: torch.Tensor, n: int, gen: torch.Generator) -> torch.Tensor:
    """n uniform draws (with replacement) of the rows of a tensor."""
    return rows[torch.randint(0, rows.shape[0], (n,), generator=gen)]


def type_weights(task: TaskConfig) -> torch.Tensor:
    """Row counts of (0-var, 1-var left, 1-var right, 2-var) in the training table: batches draw rows
    uniformly, so these are the relative frequencies of the four query types.

    Per training pair there is one 0-var row per variable, one 1-var row per (variable, allowed side)
    and one 2-var row per allowed left variable: 12 : 10 : 10 : 10 at the paper's settings, i.e.
    28.6 / 47.6 / 23.8 % at r = 1. Under the paper's rule r thins the 2-var rows themselves (their
    count is that of the kept rows); under the share-only ablation the 2-var count is scaled by r.
    """
    v, left, right = task.n_vars, task.n_left_only, task.n_right_only
    split = make_split(task)
    n_pairs = split.train_pairs.shape[0]
    two_var = (float(split.two_var_row_pairs.shape[0]) if task.two_var_rule == "paper_rows"
               else (v - right) * n_pairs * float(task.two_var_rate))
    return torch.tensor([v * n_pairs, (v - right) * n_pairs, (v - left) * n_pairs, two_var], dtype=torch.float64)


def query_mix(task: TaskConfig) -> dict[str, float]:
    """Shares of 0-var, 1-var and 2-var queries in training, from the row counts."""
    w = type_weights(task)
    w = w / w.sum()
    return {"0var": float(w[ZERO_VAR]), "1var": float(w[ONE_VAR_LEFT] + w[ONE_VAR_RIGHT]), "2var": float(w[TWO_VAR])}


def _training_rows(task: TaskConfig, n: int, gen: torch.Generator, compact: bool) -> Batch:
    """n training rows: a query type by the row counts, then its pair and variables (the draws of every type are
    made for every row, so that the rows consume the generator the same way whatever their types)."""
    split = make_split(task)
    lit = torch.full((n,), LITERAL, dtype=torch.long)
    qtype = torch.multinomial(type_weights(task).float(), n, replacement=True, generator=gen)
    pairs = _pick(split.train_pairs, n, gen)
    if split.two_var_row_pairs.shape[0]:  # a 2-var query's pair: in proportion to its kept rows
        pairs = torch.where((qtype == TWO_VAR)[:, None], _pick(split.two_var_row_pairs, n, gen), pairs)
    left, right = _pick(split.left_vars, n, gen), _pick(split.right_vars, n, gen)
    two = _pick(split.allowed_var_pairs, n, gen)
    lhs_var = torch.where(qtype == ONE_VAR_LEFT, left, torch.where(qtype == TWO_VAR, two[:, 0], lit))
    rhs_var = torch.where(qtype == ONE_VAR_RIGHT, right, torch.where(qtype == TWO_VAR, two[:, 1], lit))
    return build_sequences(task, pairs[:, 0], pairs[:, 1], lhs_var, rhs_var, gen, compact)


def sample_queries(task: TaskConfig, n: int, gen: torch.Generator, kind: str = "train", compact: bool = False
                   ) -> Batch:
    """n training rows (kind='train') or rows of one evaluation pool (kind = a POOL_NAMES entry); `compact`: tokens
    and answers in `compact_dtype(task)` (build_sequences)."""
    if kind == "train":
        return _training_rows(task, n, gen, compact)
    split = make_split(task)
    lit = torch.full((n,), LITERAL, dtype=torch.long)
    spec = pool_spec(kind)
    pair_set = getattr(split, PAIR_SETS[spec.pairs])
    var_sets = [getattr(split, field) for field in VARIABLE_RULES[spec.variables][1]]
    if pair_set.shape[0] == 0:
        return _no_rows(task, gen)
    pairs = _pick(pair_set, n, gen)
    if spec.query == 0:
        lhs_var, rhs_var = lit, lit
    elif spec.query == 1:
        left_pool, right_pool = var_sets
        n_left_choices, n_right_choices = left_pool.shape[0], right_pool.shape[0]
        if n_left_choices + n_right_choices == 0:
            return _no_rows(task, gen)
        # uniform over (variable, side) combinations
        choice = torch.randint(0, n_left_choices + n_right_choices, (n,), generator=gen)
        on_left = choice < n_left_choices
        var = torch.where(on_left, left_pool[choice.clamp(max=max(n_left_choices - 1, 0))] if n_left_choices else lit,
                          right_pool[(choice - n_left_choices).clamp(min=0)] if n_right_choices else lit)
        lhs_var, rhs_var = torch.where(on_left, var, lit), torch.where(on_left, lit, var)
    else:
        var_pairs, = var_sets
        if var_pairs.shape[0] == 0:
            return _no_rows(task, gen)
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


# The largest exact set evaluated whole. Every set of the paper's sizes is smaller (its 2-var union is 193,580
# sequences at f = 0.7 and 309,124 at the f sweep's smallest f); a larger task's union (mod 97 or 24 variables:
# 0.5-1.9 million) is evaluated on a fixed uniform sample of this many, whose accuracy is within 0.0008 (one standard
# error at worst) of the whole set's. `exact_set_sizes` says which sets were sampled.
EXACT_SAMPLE_CAP = 400_000


def _union_factors(split) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The 2-var union as (operand pairs, variable pairs) whose products it is: held-out pairs with allowed variable
    pairs, and training pairs with variable pairs that have one or both variables forbidden."""
    return [(split.heldout_pairs, split.allowed_var_pairs),
            (split.train_pairs, split.one_forbidden_var_pairs),
            (split.train_pairs, split.both_forbidden_var_pairs)]


def exact_set_sizes(task: TaskConfig) -> dict[str, tuple[int, int]]:
    """{name: (sequences evaluated, sequences in the whole set)} of the exact sets."""
    split = make_split(task)
    union = sum(pairs.shape[0] * var_pairs.shape[0] for pairs, var_pairs in _union_factors(split))
    held = split.heldout_pairs.shape[0]
    return {"0var_heldout": (min(held, EXACT_SAMPLE_CAP), held), "2var_union": (min(union, EXACT_SAMPLE_CAP), union)}


@functools.lru_cache(maxsize=4)
def exact_sets(task: TaskConfig) -> dict[str, Batch]:
    """Exhaustive end-of-training sets: every held-out pair as 0-var, and the 2-var union (book/protocol.md); a
    set larger than EXACT_SAMPLE_CAP is a fixed uniform sample of that many of its sequences."""
    split = make_split(task)
    gen = torch.Generator().manual_seed(task.eval_seed * 1000 + 999)
    held = split.heldout_pairs
    lit = torch.full((held.shape[0],), LITERAL, dtype=torch.long)
    zero = build_sequences(task, held[:, 0], held[:, 1], lit, lit, gen)

    parts = [(pairs.repeat_interleave(var_pairs.shape[0], 0), var_pairs.repeat(pairs.shape[0], 1))
             for pairs, var_pairs in _union_factors(split)]  # every operand pair with every variable pair
    pairs = torch.cat([p for p, _ in parts])
    var_pairs = torch.cat([v for _, v in parts])
    if pairs.shape[0] > EXACT_SAMPLE_CAP:
        keep = torch.randperm(pairs.shape[0], generator=gen)[:EXACT_SAMPLE_CAP].sort().values
        pairs, var_pairs = pairs[keep], var_pairs[keep]
    union = build_sequences(task, pairs[:, 0], pairs[:, 1], var_pairs[:, 0], var_pairs[:, 1], gen)
    return {"0var_heldout": zero, "2var_union": union}


# ----------------------------------------------------------------------------- training stream
def stream_chunk(task: TaskConfig, batch_size: int, seed: int, index: int, chunk_steps: int = 100
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Tokens [chunk_steps * batch_size, seq_len] and answers of chunk `index` of the training stream `seed`, in
    `compact_dtype(task)`: steps index * chunk_steps + 1 ... (index + 1) * chunk_steps, one after the other."""
    gen = torch.Generator().manual_seed((seed * 1_000_003 + index * 7_919 + 17) % (2**63))
    rows = sample_queries(task, chunk_steps * batch_size, gen, compact=True)
    return rows.tokens, rows.answers


class TrainStream:
    """Training batches as a pure function of (seed, step): resumable without saving RNG state.

    Rows are generated `chunk_steps` batches at a time (vectorisation pays off on big chunks); each chunk has its own
    generator seeded from (seed, chunk index) (`stream_chunk`, or `chunks`: a function that builds the same chunks,
    e.g. `experiments.fast_data.stream_chunk`).
    """

    def __init__(self, task: TaskConfig, batch_size: int, seed: int, chunk_steps: int = 100, chunks=stream_chunk):
        make_split(task)  # fail early on a bad split
        self.task, self.batch_size, self.seed, self.chunk_steps, self.chunks = task, batch_size, seed, chunk_steps, chunks
        self._chunk_index, self._chunk = None, None

    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Tokens and answers (int64) of 1-indexed training step `step`."""
        index, offset = divmod(step - 1, self.chunk_steps)
        lo = offset * self.batch_size
        if index != self._chunk_index:
            self._chunk = self.chunks(self.task, self.batch_size, self.seed, index, self.chunk_steps)
            self._chunk_index = index
        tokens, answers = self._chunk
        return tokens[lo: lo + self.batch_size].long(), answers[lo: lo + self.batch_size].long()
