"""The evaluation pools as data: the table of pool specs in `data.POOLS`.

Two kinds of check: the pools are bit-identical to those the committed metrics were computed with
(pinned digests), and each pool holds what its spec says, read back from the tokens.
"""
from __future__ import annotations

import hashlib
from dataclasses import fields

import pytest
import torch

from assignadd_core.report import plots
from assignadd_core.core.config import ConfigError, TaskConfig
from assignadd_core.core.data import (LITERAL, ONE_VAR_LEFT, ONE_VAR_RIGHT, POOL_NAMES, POOLS, TWO_VAR, ZERO_VAR, Batch,
                                 PoolSpec, Vocab, eval_pools, exact_sets, make_split, pool_spec, sample_queries)

pytestmark = pytest.mark.usefixtures("single_thread")

CONFIGS = {
    "paper": TaskConfig(),
    "small": TaskConfig(modulus=11, train_fraction=0.8, two_var_rate=0.3),
    "tiny": TaskConfig(modulus=7, n_vars=6, n_left_only=1, n_right_only=1, train_fraction=0.6,
                       two_var_rate=0.5, pool_size=50),
    # empty pools: no held-out pair, no kept 2-var row, no left-only variable
    "edge": TaskConfig(modulus=5, n_vars=4, n_left_only=0, n_right_only=1, train_fraction=1.0,
                       two_var_rate=0.0, pool_size=40),
    "no_restriction": TaskConfig(modulus=6, n_vars=5, n_left_only=0, n_right_only=0, train_fraction=0.75,
                                 two_var_rule="ablation_share_only", seq_len=12, pool_size=30, eval_seed=7),
}
# sha256 of every Batch field (name, shape, dtype, bytes) of the nine pools and of the two exact sets,
# recorded from the implementation before the table (pool meaning parsed from the name strings):
# the committed metrics were computed with these pools, so any change to them is a regression.
DIGESTS = {
    "paper": ("647e5f96d7e3f3314ea116bb2da999c2b3b6accc251a6cc18d4a0cfb6bd2bc7f",
              "ab900b14bec847770b9839f81314a9a9d1ec3325b91eaa47b34f897cfc47f1f7"),
    "small": ("a1327fb88aaf8c9e0cecabe362a8fd6035ceed3269f87759be3f019214415df4",
              "bc3c53d0e4cca995e0a4fc2da39f128eee00b1389e74eca0d264765607a6b921"),
    "tiny": ("fd7410c659cb88ab60a01bd03ccadb2320d54aaff85664098e9845cf5f7e701d",
             "d3f44b96595a4c0311581c2ec1e5b809913c870e99d29f3f098ac65b03319e0c"),
    "edge": ("c63aabe29c66d2e63f1970c2e6fada68569d676f4e8fd4c60f654367304907cf",
             "890d964242b434b895a6f5504ca0957b3d567bd121090870bb1ddf4cbaa54f12"),
    "no_restriction": ("5cd6ca811423251728deb68b297ef1e7006a82dd5eca767f703636bca83faba6",
                       "aff33d7c1c2a604d73e3fc0f28bac164edd631df93a4cd6c110b372d5d31a989"),
}


def digest(batches) -> str:
    h = hashlib.sha256()
    for batch in batches:
        for f in fields(Batch):
            t = getattr(batch, f.name)
            h.update(f"{f.name}{tuple(t.shape)}{t.dtype}".encode())
            h.update(t.contiguous().numpy().tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("name", CONFIGS)
def test_pools_and_exact_sets_are_bit_identical_to_the_committed_ones(name):
    task = CONFIGS[name]
    assert digest(eval_pools(task).values()) == DIGESTS[name][0], f"{name}: evaluation pools changed"
    assert digest(exact_sets(task).values()) == DIGESTS[name][1], f"{name}: exact sets changed"


# ---------------------------------------------------------------------------- each pool holds its spec
TASK = TaskConfig(modulus=7, n_vars=6, n_left_only=1, n_right_only=1, train_fraction=0.6, two_var_rate=0.5,
                  pool_size=400)
LEFT_ONLY, RIGHT_ONLY = {0}, {5}  # variable a only on the left in training, f only on the right


def operands(task: TaskConfig, tokens: torch.Tensor) -> list[tuple[int, int, int, int]]:
    """(lhs value, rhs value, lhs variable or LITERAL, rhs variable or LITERAL) of each sequence, from its tokens."""
    vocab, prefix = Vocab(task), task.prefix_len
    rows = []
    for row in tokens.tolist():
        assigned = {row[i]: row[i + 1] for i in range(prefix - 1) if row[i] >= vocab.var0}
        query = row[prefix + 1: prefix + 3]
        read = [(assigned[t], t - vocab.var0) if t >= vocab.var0 else (t, LITERAL) for t in query]
        rows.append((read[0][0], read[1][0], read[0][1], read[1][1]))
    return rows


def variables_fit(rule: str, lhs: int, rhs: int) -> bool:
    """The spec's variable rule, restated from the training restrictions (not from the Split's fields)."""
    bad_left, bad_right = lhs in RIGHT_ONLY, rhs in LEFT_ONLY
    one_var, side_bad = (lhs == LITERAL) != (rhs == LITERAL), bad_left or bad_right
    two_vars = LITERAL not in (lhs, rhs) and lhs != rhs
    return {"literal": lhs == rhs == LITERAL,
            "allowed": one_var and not side_bad,
            "forbidden": one_var and side_bad,
            "allowed_pairs": two_vars and not side_bad,
            "one_forbidden_pairs": two_vars and bad_left != bad_right,
            "both_forbidden_pairs": two_vars and bad_left and bad_right}[rule]


def allowed_pairs(kind: str) -> set[tuple[int, int]]:
    split = make_split(TASK)
    train = {(a, b) for a in range(TASK.modulus) for b in range(TASK.modulus) if bool(split.train_mask[a, b])}
    heldout = {(a, b) for a in range(TASK.modulus) for b in range(TASK.modulus)} - train
    kept = {tuple(p) for p in split.two_var_row_pairs.tolist()}
    assert kept < train and len(kept) > 0  # at r = 0.5 some training pairs have no kept 2-var row
    return {"train": train, "heldout": heldout, "two_var_rows": kept}[kind]


@pytest.mark.parametrize("spec", POOLS, ids=lambda s: s.name)
def test_each_pool_holds_what_its_spec_says(spec):
    pool = eval_pools(TASK)[spec.name]
    assert len(pool) == TASK.pool_size
    read = operands(TASK, pool.tokens)
    pairs = {(lv, rv) for lv, rv, _, _ in read}
    assert pairs <= allowed_pairs(spec.pairs), spec.name
    assert all((lvar != LITERAL) + (rvar != LITERAL) == spec.query for _, _, lvar, rvar in read), spec.name
    assert all(variables_fit(spec.variables, lvar, rvar) for _, _, lvar, rvar in read), spec.name
    # every combination the rule allows is drawn (the pool is not a subset of its rule)
    every = {(a, b) for a in [LITERAL, *range(TASK.n_vars)] for b in [LITERAL, *range(TASK.n_vars)]
             if variables_fit(spec.variables, a, b)}
    assert {(lvar, rvar) for _, _, lvar, rvar in read} == every, spec.name
    assert pool.answers.tolist() == [(lv + rv) % TASK.modulus for lv, rv, _, _ in read], spec.name
    types = {0: {ZERO_VAR}, 1: {ONE_VAR_LEFT, ONE_VAR_RIGHT}, 2: {TWO_VAR}}[spec.query]
    assert set(pool.query_type.tolist()) <= types, spec.name  # the generator's bookkeeping agrees


# ---------------------------------------------------------------------------- the table itself
def test_the_table_names_the_pools_in_metrics_order():
    assert POOL_NAMES == tuple(s.name for s in POOLS) and len(set(POOL_NAMES)) == 9
    assert all(pool_spec(s.name) is s for s in POOLS)
    assert len({s.label for s in POOLS}) == len(POOLS)


def test_unknown_pool_is_refused_with_the_pool_list():
    message = f"unknown pool 'nope'; pools are {', '.join(POOL_NAMES)}"
    with pytest.raises(ConfigError) as err:
        sample_queries(TASK, 4, torch.Generator().manual_seed(0), kind="nope")
    assert str(err.value) == message


@pytest.mark.parametrize("query, pairs, variables", [(1, "train", "literal"), (0, "train", "allowed"),
                                                     (2, "train", "forbidden"), (1, "test", "allowed")])
def test_a_spec_that_does_not_fit_its_query_fails_at_once(query, pairs, variables):
    with pytest.raises(ConfigError, match="do not fit"):
        PoolSpec("x", query, pairs, variables, "x")


def test_figures_read_labels_from_the_table_and_styles_from_the_palette():
    from assignadd_core.report import palette
    styles = {s.name: palette.pool_style(s.name) for s in POOLS}
    for s in POOLS:
        assert plots.POOL_LABELS[s.name] == s.label
        assert styles[s.name]["color"] == palette.QUERY_TYPE[s.query]  # one colour per query type
    assert len({(v["color"], v["dash"], v["width"]) for v in styles.values()}) == len(POOLS)  # each pool its own line
    assert styles["0var_add_restricted"]["dash"] == "dot" and styles["1var_var_restricted"]["dash"] == "dash"
