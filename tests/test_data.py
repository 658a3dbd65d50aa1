"""Task generator invariants at the paper's config (data only, no training) (book/protocol.md).

Every check re-derives what it tests from the tokens (the sequence as the model sees it), never
from the generator's own bookkeeping, except where that bookkeeping is itself under test.
"""
from __future__ import annotations

import collections

import pytest
import torch

from assignadd_core.core.config import ConfigError, TaskConfig
from assignadd_core.core.data import (EXACT_NAMES, POOL_NAMES, TrainStream, Vocab, eval_pools, exact_sets,
                                 make_split, sample_queries, split_summary)

pytestmark = pytest.mark.usefixtures("single_thread")

PAPER = TaskConfig()
V = Vocab(PAPER)
LEFT_ONLY, RIGHT_ONLY = {"a", "b"}, {"k", "l"}


def parse(task: TaskConfig, tokens) -> dict:
    """Read one sequence as a person would; asserts the protocol's sequence layout on the way."""
    vocab = Vocab(task)
    words = vocab.decode(tokens).split()
    n, prefix = task.modulus, task.prefix_len
    assert len(words) == task.seq_len
    assert words[prefix] == "+" and words[-1] == "=", words
    assigned, var_positions, i = {}, [], 0
    while i < prefix:
        word = words[i]
        if word == "PAD":
            i += 1
            continue
        assert word in task.var_names, f"prefix token {word!r} at {i} is neither PAD nor a variable: {words}"
        assert i + 1 < prefix and words[i + 1].isdigit(), f"variable at {i} has no value: {words}"
        assert word not in assigned, f"variable {word} assigned twice: {words}"
        assigned[word] = int(words[i + 1])
        var_positions.append(i)
        i += 2
    lhs, rhs = words[prefix + 1], words[prefix + 2]

    def value(word):
        if word.isdigit():
            assert int(word) < n
            return int(word)
        assert word in assigned, f"query variable {word} is never assigned: {words}"
        return assigned[word]

    lv, rv = value(lhs), value(rhs)
    return {"lhs": lhs, "rhs": rhs, "lhs_val": lv, "rhs_val": rv, "answer": (lv + rv) % n,
            "assigned": assigned, "var_positions": var_positions,
            "lhs_is_var": not lhs.isdigit(), "rhs_is_var": not rhs.isdigit()}


def operands(task: TaskConfig, tokens: torch.Tensor):
    """Vectorised: (lhs value, rhs value, lhs var or -1, rhs var or -1) read back from the tokens."""
    vocab = Vocab(task)
    prefix = task.prefix_len
    out = []
    for col in (prefix + 1, prefix + 2):
        tok = tokens[:, col]
        is_var = tok >= vocab.var0
        match = tokens[:, :prefix] == tok[:, None]
        where = match.float().argmax(1)
        assigned_value = tokens.gather(1, (where + 1).clamp(max=prefix - 1)[:, None]).squeeze(1)
        assert bool((match.sum(1)[is_var] == 1).all()), "a query variable is not assigned exactly once"
        out.append((torch.where(is_var, assigned_value, tok), torch.where(is_var, tok - vocab.var0, -1)))
    (lv, lvar), (rv, rvar) = out
    return lv, rv, lvar, rvar


@pytest.fixture(scope="module")
def split():
    return make_split(PAPER)


@pytest.fixture(scope="module")
def train_sample():
    return sample_queries(PAPER, 120_000, torch.Generator().manual_seed(0))


# ---------------------------------------------------------------------------- vocabulary
def test_vocabulary_ids_follow_spec():
    assert V.size == 74
    assert [V.ids[w] for w in ("0", "58", "+", "=", "PAD", "a", "l")] == [0, 58, 59, 60, 61, 62, 73]


def test_spec_example_encodes_and_has_the_spec_answer():
    text = "PAD PAD a 40 PAD j 18 PAD PAD PAD k 9 + a 27 ="
    tokens = V.encode(text)
    assert tokens.tolist()[:4] == [61, 61, 62, 40] and V.decode(tokens) == text
    assert parse(PAPER, tokens)["answer"] == 8


def test_encode_decode_round_trip(train_sample):
    for row in train_sample.tokens[:200]:
        assert torch.equal(V.encode(V.decode(row)), row)


@pytest.mark.parametrize("word", ["x", "59", "?", "A"])
def test_unknown_token_is_refused(word):
    with pytest.raises(ConfigError) as excinfo:
        V.encode(f"PAD a 3 {word}")
    assert repr(word) in str(excinfo.value) and "\n" not in str(excinfo.value)


# ---------------------------------------------------------------------------- the split
def test_split_sizes(split):
    assert split.train_pairs.shape == (2436, 2) and split.heldout_pairs.shape == (1045, 2)
    train = {tuple(p) for p in split.train_pairs.tolist()}
    held = {tuple(p) for p in split.heldout_pairs.tolist()}
    assert not train & held and len(train | held) == 59 * 59
    assert all(bool(split.train_mask[a, b]) for a, b in train) and int(split.train_mask.sum()) == 2436
    # (n1, n2) and (n2, n1) are held out independently, so some pairs are split across the two sets
    assert any((b, a) in held for a, b in train)


def test_split_is_deterministic_and_seeded():
    assert torch.equal(make_split(TaskConfig()).train_pairs, make_split(TaskConfig(split_seed=42)).train_pairs)
    assert not torch.equal(make_split(TaskConfig(split_seed=7)).train_pairs, make_split(PAPER).train_pairs)


def test_variable_pair_sets(split):
    names = PAPER.var_names

    def named(pairs):
        return {(names[a], names[b]) for a, b in pairs.tolist()}

    allowed, one, both = (named(split.allowed_var_pairs), named(split.one_forbidden_var_pairs),
                          named(split.both_forbidden_var_pairs))
    assert (len(allowed), len(one), len(both)) == (92, 36, 4)
    for v1, v2 in allowed:
        assert v1 != v2 and v1 not in RIGHT_ONLY and v2 not in LEFT_ONLY
    for v1, v2 in one:
        assert v1 != v2 and (v1 in RIGHT_ONLY) != (v2 in LEFT_ONLY)
    assert both == {(x, y) for x in RIGHT_ONLY for y in LEFT_ONLY}
    assert len(allowed | one | both) == 12 * 11


# ---------------------------------------------------------------------------- training sequences
def test_training_sequences_are_well_formed_and_answered_correctly(train_sample):
    """Layout, distinct assignment variables and the answer, by decoding the prefix (3,000 rows)."""
    for i in range(3000):
        info = parse(PAPER, train_sample.tokens[i])
        assert info["answer"] == int(train_sample.answers[i])
        n = len(info["assigned"])
        assert 1 <= n <= 6 and n == int(train_sample.n_assign[i])
        if info["lhs_is_var"] and info["rhs_is_var"]:
            assert info["lhs"] != info["rhs"] and n >= 2


def test_batch_bookkeeping_matches_tokens(train_sample):
    lv, rv, lvar, rvar = operands(PAPER, train_sample.tokens)
    assert torch.equal(lv, train_sample.lhs_val) and torch.equal(rv, train_sample.rhs_val)
    assert torch.equal(lvar, train_sample.lhs_var) and torch.equal(rvar, train_sample.rhs_var)
    assert torch.equal((lv + rv) % 59, train_sample.answers)
    rows = torch.arange(len(train_sample))
    lhs_is_var, rhs_is_var = lvar >= 0, rvar >= 0
    # lhs_src / rhs_src: the position holding the operand value (assigned value, or the literal at 13 / 14)
    assert torch.equal(train_sample.tokens[rows, train_sample.lhs_src], lv)
    assert torch.equal(train_sample.tokens[rows, train_sample.rhs_src], rv)
    assert bool((train_sample.lhs_src[~lhs_is_var] == 13).all() and (train_sample.rhs_src[~rhs_is_var] == 14).all())
    assert bool((train_sample.lhs_src[lhs_is_var] < 12).all() and (train_sample.rhs_src[rhs_is_var] < 12).all())


def test_query_at_positions_12_to_15_and_prefix_has_no_query_tokens(train_sample):
    t = train_sample.tokens
    assert t.shape[1] == 16
    assert bool((t[:, 12] == V.plus).all() and (t[:, 15] == V.eq).all())
    operand_ok = (t[:, 13:15] < 59) | (t[:, 13:15] >= V.var0)
    assert bool(operand_ok.all())
    assert not bool(((t[:, :12] == V.plus) | (t[:, :12] == V.eq)).any())


def test_assignment_variables_are_distinct(train_sample):
    prefix = train_sample.tokens[:, :12]
    is_var = prefix >= V.var0
    counts = torch.zeros(len(prefix), 12, dtype=torch.long)
    counts.scatter_add_(1, torch.where(is_var, prefix - V.var0, 0), is_var.long())
    assert int(counts.max()) == 1
    assert torch.equal(counts.sum(1), train_sample.n_assign)


def test_training_uses_only_training_pairs_and_allowed_positions(split):
    """Through the training stream itself (what the trainer consumes), 20 steps of batch 512."""
    stream = TrainStream(PAPER, batch_size=512, seed=42)
    tokens = torch.cat([stream.batch(step)[0] for step in range(1, 21)])
    lv, rv, lvar, rvar = operands(PAPER, tokens)
    assert bool(split.train_mask[lv, rv].all()), "a training sequence uses a held-out operand pair"
    right_only = {PAPER.var_names.index(v) for v in RIGHT_ONLY}
    left_only = {PAPER.var_names.index(v) for v in LEFT_ONLY}
    assert not set(lvar.tolist()) & right_only, "k or l used as a left operand in training"
    assert not set(rvar.tolist()) & left_only, "a or b used as a right operand in training"
    # ... while the unrestricted variables and both sides are used
    assert set(lvar.tolist()) - {-1} == set(range(12)) - right_only
    assert set(rvar.tolist()) - {-1} == set(range(12)) - left_only


def query_types(task: TaskConfig, tokens: torch.Tensor) -> torch.Tensor:
    """0 = 0-var, 1 = var on the left, 2 = var on the right, 3 = 2-var."""
    var0 = Vocab(task).var0
    left, right = tokens[:, 13] >= var0, tokens[:, 14] >= var0
    return left.long() + 2 * right.long()


def test_query_type_mix(train_sample):
    share = torch.bincount(query_types(PAPER, train_sample.tokens), minlength=4).double() / len(train_sample)
    zero, left, right, two = share.tolist()
    assert abs(zero - 12 / 42) < 0.01 and abs(left + right - 20 / 42) < 0.01 and abs(two - 10 / 42) < 0.01
    assert abs(left - right) < 0.01  # half left, half right
    # i.e. about 28.6 / 47.6 / 23.8 %
    assert round(zero, 2) == 0.29 and round(left + right, 2) == 0.48 and round(two, 2) == 0.24


@pytest.mark.parametrize("rate", [0.0, 0.2, 0.5])
def test_ablation_two_var_rate_scales_the_two_var_share_only(rate):
    """The share-only ablation: 12 : 10 : 10 : 10 r rows, and every training pair still in 2-var queries."""
    task = TaskConfig(two_var_rate=rate, two_var_rule="ablation_share_only")
    batch = sample_queries(task, 40_000, torch.Generator().manual_seed(1))
    qtype = query_types(task, batch.tokens)
    share = torch.bincount(qtype, minlength=4).double() / len(batch)
    expected_two = 10 * rate / (32 + 10 * rate)
    assert abs(float(share[3]) - expected_two) < 0.01
    assert abs(float(share[0]) - 12 / (32 + 10 * rate)) < 0.01
    if rate == 0:
        assert int((qtype == 3).sum()) == 0
    else:
        assert make_split(task).two_var_pairs_covered == 2436


# ---------------------------------------------------------------------------- the authors' protocol, pinned
def test_heldout_pairs_are_the_authors():
    """Python's random.Random(42).sample over the row-major pair list, as the paper's code draws it."""
    summary = split_summary(PAPER)
    assert summary["train_pairs"] == 2436 and summary["heldout_pairs"] == 1045
    assert summary["heldout_first"] == [[0, 0], [0, 5], [0, 7], [0, 9], [0, 17]]
    assert summary["heldout_sum"] == 1_836_016


def test_heldout_pairs_at_another_train_fraction():
    summary = split_summary(TaskConfig(train_fraction=0.257053))
    assert summary["train_pairs"] == 894 and summary["heldout_sum"] == 4_531_383


@pytest.mark.parametrize("rate, rows, covered", [(0.01, 218, 211), (0.061579, 1494, 1149),
                                                 (0.216316, 5290, 2220), (1.0, 24360, 2436)])
def test_kept_two_var_rows_and_covered_pairs(rate, rows, covered):
    split = make_split(TaskConfig(two_var_rate=rate))
    assert split.two_var_row_pairs.shape == (rows, 2)
    assert split.two_var_pairs_covered == covered
    # only training pairs have 2-var rows
    assert bool(split.train_mask[split.two_var_row_pairs[:, 0], split.two_var_row_pairs[:, 1]].all())


def test_row_rule_is_a_fixed_per_row_draw():
    """A row kept at r is kept at every larger r (the draw is per row, not per config)."""
    low = {tuple(p) for p in make_split(TaskConfig(two_var_rate=0.061579)).two_var_row_pairs.tolist()}
    high = {tuple(p) for p in make_split(TaskConfig(two_var_rate=0.216316)).two_var_row_pairs.tolist()}
    assert low < high


@pytest.mark.parametrize("rate", [0.0, 0.061579, 0.216316])
def test_training_mix_and_pair_coverage_follow_the_kept_rows(rate):
    """A large training sample: the 2-var share is the kept-row share, its pairs are only covered pairs,
    and the pairs appear in proportion to their kept rows."""
    task = TaskConfig(two_var_rate=rate)
    split = make_split(task)
    rows = split.two_var_row_pairs.shape[0]
    mix = split_summary(task)["mix"]
    assert mix["2var"] == pytest.approx(rows / (32 * 2436 + rows))
    assert mix["0var"] + mix["1var"] + mix["2var"] == pytest.approx(1.0)
    batch = sample_queries(task, 200_000, torch.Generator().manual_seed(3))
    qtype = query_types(task, batch.tokens)
    two = qtype == 3
    assert abs(float(two.double().mean()) - mix["2var"]) < 0.004
    lv, rv, _, _ = operands(task, batch.tokens[two])
    seen = torch.zeros(59, 59, dtype=torch.long)
    seen.index_put_((lv, rv), torch.ones_like(lv), accumulate=True)
    kept = torch.zeros(59, 59, dtype=torch.long)
    if rows:
        kept.index_put_((split.two_var_row_pairs[:, 0], split.two_var_row_pairs[:, 1]),
                        torch.ones(rows, dtype=torch.long), accumulate=True)
    assert not bool(((seen > 0) & (kept == 0)).any()), "a 2-var query uses a pair none of whose rows was kept"
    if rows:
        # pairs with more kept rows appear more often: mean count per kept row is the same across row counts
        per_row = [float(seen[kept == k].double().mean() / k) for k in (1, 2) if bool((kept == k).any())]
        if len(per_row) == 2:
            assert per_row[1] == pytest.approx(per_row[0], rel=0.15)


def test_two_var_pools_draw_covered_pairs_only():
    task = TaskConfig(two_var_rate=0.01)
    split = make_split(task)
    covered = torch.zeros(59, 59, dtype=torch.bool)
    covered[split.two_var_row_pairs[:, 0], split.two_var_row_pairs[:, 1]] = True
    pools = eval_pools(task)
    for name in ("2var_train", "2var_var_restricted_1", "2var_var_restricted_2"):
        assert bool(covered[pools[name].lhs_val, pools[name].rhs_val].all()), name
    # the held-out 2-var pool and the exact sets do not depend on r
    assert len(exact_sets(task)["2var_union"]) == 193_580


def test_unknown_two_var_rule_is_refused():
    with pytest.raises(ConfigError, match="two_var_rule"):
        TaskConfig(two_var_rule="share")


def test_number_of_assignments(train_sample):
    """n uniform in 1..6; for 2-var queries a draw of 1 becomes 2."""
    qtype = query_types(PAPER, train_sample.tokens)
    n = (train_sample.tokens[:, :12] >= V.var0).sum(1)
    few = torch.bincount(n[qtype < 3], minlength=7).double() / int((qtype < 3).sum())
    assert float(few[0]) == 0 and (few[1:] - 1 / 6).abs().max() < 0.01
    two = torch.bincount(n[qtype == 3], minlength=7).double() / int((qtype == 3).sum())
    assert float(two[1]) == 0 and abs(float(two[2]) - 2 / 6) < 0.015 and (two[3:] - 1 / 6).abs().max() < 0.015


def test_pad_gaps_vary_as_specified(train_sample):
    """Each PAD falls uniformly into one of the n + 1 gaps: PADs before the first assignment
    ~ Binomial(12 - 2n, 1 / (n + 1)), and every start position occurs."""
    tokens = train_sample.tokens[:, :12]
    is_var = tokens >= V.var0
    n = is_var.sum(1)
    first = is_var.float().argmax(1)  # PADs before the first assignment
    last = is_var.flip(1).float().argmax(1) - 1  # PADs after the last value
    for k in range(1, 6):
        pads = 12 - 2 * k
        rows = n == k
        assert set(first[rows].tolist()) == set(range(pads + 1)), f"n={k}: not every gap size occurs"
        assert abs(float(first[rows].double().mean()) - pads / (k + 1)) < 0.1
        assert abs(float(last[rows].double().mean()) - pads / (k + 1)) < 0.1
    assert set(first[n == 6].tolist()) == {0}


def test_query_variables_and_distractors_are_shuffled(train_sample):
    """A 1-var query's variable is not always the first (or last) assignment."""
    one_left = (query_types(PAPER, train_sample.tokens) == 1) & (train_sample.n_assign >= 3)
    tokens = train_sample.tokens[one_left]
    order = [(row[:12][row[:12] >= V.var0] == row[13]).nonzero().item() for row in tokens[:600]]
    counts = collections.Counter(order)
    assert len(counts) >= 3 and max(counts.values()) < 0.6 * len(order)


# ---------------------------------------------------------------------------- training stream
def test_train_stream_is_a_function_of_seed_and_step():
    a = TrainStream(PAPER, batch_size=64, seed=42)
    b = TrainStream(PAPER, batch_size=64, seed=42)
    a_late = a.batch(150)[0].clone()  # a jumps ahead to the second chunk first
    a_early = a.batch(3)
    for step in (1, 2, 3):
        b_tokens, b_answers = b.batch(step)
    assert torch.equal(a_early[0], b_tokens) and torch.equal(a_early[1], b_answers)
    assert torch.equal(a_late, b.batch(150)[0])
    assert not torch.equal(b.batch(4)[0], b.batch(3)[0])
    assert not torch.equal(TrainStream(PAPER, batch_size=64, seed=43).batch(3)[0], a_early[0])


# ---------------------------------------------------------------------------- evaluation pools
POOL_RULES = {
    # name: (number of variable operands, held-out pair?, which variable positions)
    "0var_train": (0, False, None), "0var_add_restricted": (0, True, None),
    "1var_train": (1, False, "allowed"), "1var_add_restricted": (1, True, "allowed"),
    "1var_var_restricted": (1, False, "forbidden"),
    "2var_train": (2, False, "allowed"), "2var_add_restricted": (2, True, "allowed"),
    "2var_var_restricted_1": (2, False, "one"), "2var_var_restricted_2": (2, False, "both"),
}


def test_nine_pools_hold_what_their_names_say(split):
    pools = eval_pools(PAPER)
    assert tuple(pools) == POOL_NAMES == tuple(POOL_RULES)
    names = PAPER.var_names
    for name, (n_vars, heldout, positions) in POOL_RULES.items():
        pool = pools[name]
        assert len(pool) == 2000, name
        lv, rv, lvar, rvar = operands(PAPER, pool.tokens)
        assert torch.equal((lv + rv) % 59, pool.answers), name
        assert bool(((lvar >= 0).long() + (rvar >= 0).long() == n_vars).all()), name
        assert bool((split.train_mask[lv, rv] != heldout).all()), name
        bad_left = torch.tensor([lvar_ >= 0 and names[lvar_] in RIGHT_ONLY for lvar_ in lvar.tolist()])
        bad_right = torch.tensor([rvar_ >= 0 and names[rvar_] in LEFT_ONLY for rvar_ in rvar.tolist()])
        n_bad = bad_left.long() + bad_right.long()
        expected_bad = {None: 0, "allowed": 0, "forbidden": 1, "one": 1, "both": 2}[positions]
        assert bool((n_bad == expected_bad).all()), name
        if n_vars == 2:
            assert bool((lvar != rvar).all()), name
            used = {(a, b) for a, b in zip(lvar.tolist(), rvar.tolist())}
            assert len(used) == {"allowed": 92, "one": 36, "both": 4}[positions], name  # all pairs drawn
        if name == "1var_var_restricted":
            assert bool(bad_left.any()) and bool(bad_right.any())  # both kinds of violation occur
        for i in range(0, 2000, 200):  # the human-readable reading agrees
            assert parse(PAPER, pool.tokens[i])["answer"] == int(pool.answers[i]), name


def test_pools_are_fixed():
    again = eval_pools.__wrapped__(PAPER)
    for name, pool in eval_pools(PAPER).items():
        assert torch.equal(again[name].tokens, pool.tokens), name


# ---------------------------------------------------------------------------- exact sets
def test_exact_set_sizes_and_contents(split):
    sets = exact_sets(PAPER)
    assert tuple(sets) == EXACT_NAMES
    zero, union = sets["0var_heldout"], sets["2var_union"]
    assert len(zero) == 1045 and len(union) == 193_580

    lv, rv, lvar, rvar = operands(PAPER, zero.tokens)
    assert bool((lvar < 0).all() and (rvar < 0).all())
    assert {(a, b) for a, b in zip(lv.tolist(), rv.tolist())} == {tuple(p) for p in split.heldout_pairs.tolist()}

    lv, rv, lvar, rvar = operands(PAPER, union.tokens)
    assert bool((lvar >= 0).all() and (rvar >= 0).all() and (lvar != rvar).all())
    assert torch.equal((lv + rv) % 59, union.answers)
    key = ((lv * 59 + rv) * 12 + lvar) * 12 + rvar
    assert key.unique().numel() == 193_580  # no sequence asked twice
    heldout = ~split.train_mask[lv, rv]
    bad = (lvar >= 10).long() + (rvar < 2).long()  # k, l on the left / a, b on the right
    assert int((heldout & (bad == 0)).sum()) == 1045 * 92
    assert int((~heldout & (bad == 1)).sum()) == 2436 * 36
    assert int((~heldout & (bad == 2)).sum()) == 2436 * 4


def test_tiny_config_generates_valid_data(tiny_config):
    """The tiny config the other tests train on is a proper instance of the task."""
    task = tiny_config.task
    batch = sample_queries(task, 2000, torch.Generator().manual_seed(3))
    for i in range(0, 2000, 10):
        assert parse(task, batch.tokens[i])["answer"] == int(batch.answers[i])
    assert all(len(pool) == task.pool_size for pool in eval_pools(task).values())
    assert len(exact_sets(task)["0var_heldout"]) == 49 - int(0.7 * 49)


@pytest.mark.parametrize("seq_len", [8, 9, 20])
def test_other_sequence_lengths_generate_valid_data(seq_len):
    """The shortest allowed sequence (two assignments + query), an odd one and a longer one."""
    task = TaskConfig(modulus=7, n_vars=4, n_left_only=1, n_right_only=1, seq_len=seq_len, pool_size=40)
    batch = sample_queries(task, 400, torch.Generator().manual_seed(4))
    pools = eval_pools(task)
    for rows in (batch, *pools.values(), exact_sets(task)["2var_union"][:200]):
        assert rows.tokens.shape[1] == seq_len
        for i in range(len(rows)):
            assert parse(task, rows.tokens[i])["answer"] == int(rows.answers[i])
    assert int((batch.tokens[:, :task.prefix_len] >= Vocab(task).var0).sum(1).max()) == min(task.max_assignments, 4)


# ---------------------------------------------------------------------------- pinned where committed runs depend on it
def test_train_stream_steps_are_fixed_slices_of_seeded_chunks(tiny_config):
    """Step s is rows (s-1) % 100 of chunk (s-1) // 100, a chunk being `sample_queries` of 100 batches from the
    generator seeded (seed · 1,000,003 + chunk · 7,919 + 17) mod 2⁶³: every committed run's batches depend on
    this, so it is pinned here."""
    from assignadd_core.core.data import sample_queries
    task, bs, seed = tiny_config.task, 8, 5
    stream = TrainStream(task, bs, seed)

    def chunk(index):
        return sample_queries(task, 100 * bs, torch.Generator().manual_seed((seed * 1_000_003 + index * 7_919 + 17) % 2**63))

    first, second = chunk(0), chunk(1)
    for step, rows, source in ((1, slice(0, bs), first), (2, slice(bs, 2 * bs), first),
                               (100, slice(99 * bs, 100 * bs), first), (101, slice(0, bs), second)):
        tokens, answers = stream.batch(step)
        assert torch.equal(tokens, source.tokens[rows]) and torch.equal(answers, source.answers[rows]), step
    assert torch.equal(stream.batch(1)[0], first.tokens[:bs])  # back to an earlier chunk


def test_unknown_token_message_lists_the_vocabulary(tiny_config):
    task = tiny_config.task
    names = ", ".join(task.var_names)
    with pytest.raises(ConfigError, match=rf"^unknown token 'q9'; tokens are 0\.\.{task.modulus - 1}, \+, =, PAD, {names}$"):
        Vocab(task).encode("PAD q9 =")


def test_a_pool_row_that_does_not_fit_its_query_fails():
    from assignadd_core.core.data import PAIR_SETS, POOLS, VARIABLE_RULES, PoolSpec
    pool = POOLS[0]
    fields = {f: getattr(pool, f) for f in ("name", "query", "pairs", "variables", "label")}
    PoolSpec(**fields)  # the table's own row is fine
    other = next(v for v, rule in VARIABLE_RULES.items() if rule[0] != pool.query)
    with pytest.raises(ConfigError, match=r"do not fit a 0-var query$"):
        PoolSpec(**{**fields, "variables": other})
    with pytest.raises(ConfigError):
        PoolSpec(**{**fields, "variables": "no such rule"})
    assert pool.pairs in PAIR_SETS
