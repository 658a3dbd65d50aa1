"""Progress measures (book/protocol.md) on hand-built weights whose answer is known in advance.

The tiny config has d_model = 16 = seq_len, so positions and (a few) tokens can get one-hot
directions of their own and each mechanism can be written down exactly.
"""
from __future__ import annotations

import itertools
import math

import pytest
import torch

from assignadd_core.measure import measures
from assignadd_core.core.data import Vocab
from assignadd_core.measure.measures import (MEASURE_NAMES, activation_measures, addition_module_accuracy, all_measures,
                                     measurement_batch, previous_token_qk_score, probe_accuracy,
                                     value_positions, variable_identity_score, variable_qk_map)
from assignadd_core.core.model import AssignAddTransformer

import handbuilt

pytestmark = pytest.mark.usefixtures("single_thread")
BIG = 100.0  # attention logits this far apart make softmax a hard argmax


@pytest.fixture()
def blank(tiny_config):
    """A tiny model with every weight zero, to be filled in by each test."""
    model = AssignAddTransformer(tiny_config)
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
    return model


def set_attention(model, layer: int, qk: torch.Tensor | None = None, ov: torch.Tensor | None = None) -> None:
    """Write W_Q W_Kᵀ = qk (W_Q = I, W_K = qkᵀ) and W_V W_O = ov (W_V = I, W_O = ov)."""
    attn = model.blocks[layer].attn
    eye = torch.eye(model.cfg.d_model)
    with torch.no_grad():
        if qk is not None:
            attn.W_Q[0] = eye
            attn.W_K[0] = qk.T
        if ov is not None:
            attn.W_V[0] = eye
            attn.W_O[0] = ov


def shift(d: int, by: int, rows: range | None = None) -> torch.Tensor:
    """Matrix with 1 at (q, q - by) for q in rows: query position q scores key q - by."""
    m = torch.zeros(d, d)
    for q in rows or range(by, d):
        if q - by >= 0:
            m[q, q - by] = 1.0
    return m


# ---------------------------------------------------------------------------- measure 1
def addition_module(model, target_shift: int = 0) -> None:
    """Layer-2 OV = I and an MLP lookup table: numbers are one-hot e_n plus a shared direction c, so
    OV2(e_a) + OV2(e_b) = e_a + e_b + 2c. A neuron per unordered pair {a, b} (a != b) reads
    e_a + e_b - 0.75 c and fires only for {a, b} (and weakly for {a, a}, {b, b}); a neuron per
    {a, a} reads e_a - 0.75 c, fires only for {a, a} and writes 10x stronger. Each neuron writes
    to the output direction of (a + b + target_shift) mod N, which W_U reads out."""
    n, d = model.config.task.modulus, model.cfg.d_model
    c, out0 = n, n + 1  # dims 0..n-1 numbers, n shared, n+1.. outputs (7 + 1 + 7 <= 16)
    pairs = list(itertools.combinations(range(n), 2)) + [(a, a) for a in range(n)]
    assert len(pairs) <= model.cfg.d_mlp and out0 + n <= d
    mlp = model.blocks[1].mlp
    with torch.no_grad():
        for a in range(n):
            model.embed.W_E[a, a] = 1.0
            model.embed.W_E[a, c] = 1.0
        set_attention(model, 1, ov=torch.eye(d))
        for j, (a, b) in enumerate(pairs):
            if a != b:
                mlp.W_in[a, j] = mlp.W_in[b, j] = 1.0
            else:
                mlp.W_in[a, j] = 1.0
            mlp.W_in[c, j] = -0.75
            mlp.W_out[j, out0 + (a + b + target_shift) % n] = 1.0 if a != b else 10.0
        model.unembed.W_U[out0: out0 + n] = torch.eye(n)


def test_measure_1_addition_module(blank):
    addition_module(blank)
    assert addition_module_accuracy(blank) == 1.0


def test_measure_1_wrong_table_scores_zero(blank):
    addition_module(blank, target_shift=1)  # answers (a + b + 1) mod N: never right
    assert addition_module_accuracy(blank) == 0.0


def test_measure_1_partly_wrong_table(blank):
    addition_module(blank)
    with torch.no_grad():  # break the diagonal neurons: {a, a} now answers through pair neurons only
        blank.blocks[1].mlp.W_out[21:] = 0.0
    n = blank.config.task.modulus
    assert addition_module_accuracy(blank) == pytest.approx((n * n - n) / (n * n))


# ---------------------------------------------------------------------------- measure 2
def positional(model) -> None:
    with torch.no_grad():
        model.pos_embed.W_pos.copy_(torch.eye(model.cfg.n_ctx, model.cfg.d_model))


def test_measure_2_previous_token_qk(blank):
    positional(blank)
    set_attention(blank, 0, qk=shift(16, 1))
    assert previous_token_qk_score(blank) == 1.0


def test_measure_2_three_back_is_not_previous_token(blank):
    # rows q = 1, 2 have only key q - 1 left after masking (keys >= q and q - 2), so they count;
    # rows 3..11 peak on q - 3: 2 of the 11 rows
    positional(blank)
    set_attention(blank, 0, qk=shift(16, 3))
    assert previous_token_qk_score(blank) == pytest.approx(2 / 11)


def test_measure_2_ignores_the_masked_key(blank):
    # a pattern that peaks on q - 2 (masked out by the measure) with q - 1 second still counts
    positional(blank)
    set_attention(blank, 0, qk=2 * shift(16, 2) + shift(16, 1))
    assert previous_token_qk_score(blank) == 1.0


def test_measure_2_leaves_out_the_query_itself(blank):
    # each position scores itself highest and its previous position second: the measure only looks at
    # earlier keys, so it still finds q - 1 everywhere
    positional(blank)
    set_attention(blank, 0, qk=2 * torch.eye(16) + shift(16, 1))
    assert previous_token_qk_score(blank) == 1.0


# ---------------------------------------------------------------------------- measure 3
def variable_embeddings(model) -> torch.Tensor:
    vocab, n_vars = Vocab(model.config.task), model.config.task.n_vars
    with torch.no_grad():
        for v in range(n_vars):
            model.embed.W_E[vocab.var_token(v), v] = 1.0
    set_attention(model, 0, ov=torch.eye(model.cfg.d_model))
    return torch.eye(n_vars)


def test_measure_3_identity_qk(blank):
    variable_embeddings(blank)
    set_attention(blank, 1, qk=torch.eye(16))
    assert torch.equal(variable_qk_map(blank), torch.eye(4))
    assert variable_identity_score(blank) == 1.0


def test_measure_3_permuted_qk(blank):
    variable_embeddings(blank)
    cycle = torch.eye(16)[:, [1, 2, 3, 0, *range(4, 16)]]  # variable v matches v + 1
    set_attention(blank, 1, qk=cycle)
    assert variable_identity_score(blank) == 0.0


def test_measure_3_half_identity(blank):
    variable_embeddings(blank)
    qk = torch.eye(16)
    qk[2, 2] = qk[3, 3] = -1.0  # c and d prefer any other variable to themselves
    set_attention(blank, 1, qk=qk)
    assert variable_identity_score(blank) == 0.5


def test_measure_3_reads_rows_query_against_key(blank):
    """Map[v, v'] is query v against key v'. Rows of this map peak on the diagonal, but column 0 peaks
    at row 1: the measure (rows) is 1."""
    variable_embeddings(blank)
    m = torch.tensor([[2.0, 0, 0, 0], [3, 4, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    qk = torch.zeros(16, 16)
    qk[:4, :4] = m
    set_attention(blank, 1, qk=qk)
    assert torch.equal(variable_qk_map(blank), m)
    assert variable_identity_score(blank) == 1.0


# ---------------------------------------------------------------------------- measures 4-6
def attention_by_position(model, layer0_extra=(), layer1=()) -> None:
    """W_E = 0 and W_pos one-hot, so attention scores are BIG * (a position table).
    Layer 1: previous token everywhere plus extra (q, k) entries; layer 2: the given (q, k) entries."""
    positional(model)
    qk0 = shift(16, 1)
    for q, k in layer0_extra:
        qk0[q, k] = 1.0
    qk1 = torch.zeros(16, 16)
    for q, k in layer1:
        qk1[q, k] = 1.0
    scale = math.sqrt(model.cfg.d_head)  # undo the 1/sqrt(d_head) score scaling
    set_attention(model, 0, qk=BIG * scale * qk0)  # layer-1 OV stays 0: the residual keeps one-hot positions
    set_attention(model, 1, qk=BIG * scale * qk1)


def test_measures_4_5_6_positional_heads(blank):
    attention_by_position(blank, layer0_extra=[(15, 13)], layer1=[(15, 13), (15, 14)])
    batch = measurement_batch(blank.config.task)
    result = activation_measures(blank, batch, with_probe=False)
    assert result["m4_l1_eq_to_operands"] == 1.0  # `=` attends to 13 and 14
    assert result["m5_l1_value_prev_token"] == 1.0  # every value attends to the token before it
    # layer 2 attends to 13, 14: right exactly for the rows whose operands are both literals
    both_literal = ((batch.lhs_var < 0) & (batch.rhs_var < 0)).double().mean()
    assert 0 < both_literal < 1
    assert result["m6_l2_eq_to_values"] == pytest.approx(float(both_literal))
    assert math.isnan(result["m7_probe_var_identity"])


def test_measures_4_5_6_attending_to_self(blank):
    positional(blank)
    set_attention(blank, 0, qk=BIG * 4 * torch.eye(16))
    set_attention(blank, 1, qk=BIG * 4 * torch.eye(16))
    result = activation_measures(blank, measurement_batch(blank.config.task), with_probe=False)
    assert result["m4_l1_eq_to_operands"] == 0.0  # top 1 is `=` itself
    assert result["m5_l1_value_prev_token"] == 0.0
    assert result["m6_l2_eq_to_values"] == 0.0


def test_measure_6_content_match(blank, monkeypatch):
    """Layer 2 from `=` attends to two positions chosen per row: the operand values -> 1."""
    batch = measurement_batch(blank.config.task)
    # hand the measure a pattern built from the batch itself, through the model's own output type
    real = measures.fused_forward

    def fused_forward(model, tokens):
        out = real(model, tokens)
        pattern2 = torch.zeros_like(out.pattern2)
        rows = torch.arange(len(batch))
        pattern2[rows, batch.lhs_src] += 0.4
        pattern2[rows, batch.rhs_src] += 0.4
        pattern2[:, 0] += 0.2
        return out._replace(pattern2=pattern2)

    monkeypatch.setattr(measures, "fused_forward", fused_forward)
    assert activation_measures(blank, batch, with_probe=False)["m6_l2_eq_to_values"] == 1.0


# ---------------------------------------------------------------------------- measure 7
def test_probe_accuracy_separable_vs_random():
    gen = torch.Generator().manual_seed(0)
    labels = torch.randint(0, 12, (2000,), generator=gen)
    means = torch.randn(12, 32, generator=gen) * 3
    separable = means[labels] + 0.3 * torch.randn(2000, 32, generator=gen)
    assert probe_accuracy(separable, labels, 12) == 1.0
    noise = torch.randn(2000, 32, generator=gen)
    assert probe_accuracy(noise, labels, 12) < 0.2  # chance is 1/12
    assert math.isnan(probe_accuracy(noise[:1], labels[:1], 12))


def test_probe_measure_reads_variable_identity(blank):
    """With layer 1 copying the previous token (a variable) into each value position, measure 7 = 1."""
    variable_embeddings(blank)  # W_E[var v] = e_v, layer-1 OV = I
    with torch.no_grad():  # position p on dim p + 4, clear of the variable directions for p <= 11
        blank.pos_embed.W_pos.copy_(torch.eye(16, 16).roll(4, dims=1))
    qk = torch.zeros(16, 16)
    for q in range(1, 16):  # the position of q (dim q + 4) looks for the position of q - 1
        if (q + 4) < 16 and (q + 3) < 16:
            qk[q + 4, q + 3] = 1.0
    set_attention(blank, 0, qk=BIG * 4 * qk)
    result = activation_measures(blank, measurement_batch(blank.config.task), with_probe=True)
    assert result["m7_probe_var_identity"] == 1.0


def test_probe_measure_without_copied_variables_is_low(blank):
    """The same model with layer 1 copying nothing: the value positions carry their position only, and
    the probe cannot tell the variables apart (chance is 1/4)."""
    variable_embeddings(blank)
    with torch.no_grad():
        blank.pos_embed.W_pos.copy_(torch.eye(16, 16).roll(4, dims=1))
    set_attention(blank, 0, ov=torch.zeros(16, 16))
    result = activation_measures(blank, measurement_batch(blank.config.task), with_probe=True)
    assert result["m7_probe_var_identity"] < 0.5


def test_measurement_batch_is_the_first_rows_of_every_pool(tiny_config):
    from assignadd_core.core.data import eval_pools
    from assignadd_core.measure.measures import MEASUREMENT_ROWS_PER_POOL
    pools = eval_pools(tiny_config.task)
    batch = measurement_batch(tiny_config.task)
    rows = min(MEASUREMENT_ROWS_PER_POOL, tiny_config.task.pool_size)
    assert MEASUREMENT_ROWS_PER_POOL == 256 and len(batch) == len(pools) * rows
    expected = torch.cat([pool.tokens[:rows] for pool in pools.values()])
    assert torch.equal(batch.tokens, expected)


def test_measure_1_includes_the_residual(blank):
    """logits = (x + MLP(x)) W_U: a residual direction that W_U reads as 'class 0' outweighs the table,
    so only the N pairs with a + b = 0 mod N come out right."""
    addition_module(blank)
    n = blank.config.task.modulus
    with torch.no_grad():
        blank.unembed.W_U[n, 0] = 100.0  # the shared direction c of every number
    assert addition_module_accuracy(blank) == pytest.approx(1 / n)


# ---------------------------------------------------------------------------- on the hand-built solver
def test_value_positions_are_the_assigned_values(tiny_config):
    batch = measurement_batch(tiny_config.task)
    task, vocab = tiny_config.task, Vocab(tiny_config.task)
    mask = value_positions(batch, task)
    assert mask.shape == batch.tokens.shape
    assert mask.sum(1).tolist() == batch.n_assign.tolist()
    rows, cols = torch.nonzero(mask, as_tuple=True)
    assert bool((batch.tokens[rows, cols] < task.modulus).all())
    assert bool((batch.tokens[rows, cols - 1] >= vocab.var0).all())
    assert not bool(mask[:, task.prefix_len:].any())
    has = batch.lhs_var >= 0
    assert bool(mask[torch.nonzero(has).flatten(), batch.lhs_src[has]].all())


def test_every_circuit_measure_is_one_on_the_exact_solver():
    """The hand-built solver has a previous-token head (2, 5), identity QK2 on copied variables (3),
    `=` attending to 13 and 14 (4), layer 2 on the operand values (6) and one-hot variable copies (7)."""
    solver = handbuilt.exact_model()
    result = all_measures(solver)
    assert tuple(result) == MEASURE_NAMES
    for name in MEASURE_NAMES[1:]:
        assert result[name] == 1.0, name


def test_measure_4_counts_only_queries_with_at_most_one_variable():
    """Layer 1 at `=` made to prefer numbers (+B) at 13 and 14 (+B/2): its top 2 are 13 and 14 only for
    two literals. Measure 4 is defined on the queries with at most one variable (2-var queries, whose
    `=` cannot attend to values at 13/14, are left out): it equals the share of 0-var among those."""
    solver = handbuilt.exact_model()
    attn = solver.blocks[0].attn
    big = handbuilt.B
    with torch.no_grad():  # W_Q = I: the score is x_q W_Kᵀ x_k; clear the `=` position's row, score from EQ
        attn.W_K[0][:, handbuilt.POS[-1]] = 0.0
        attn.W_K[0][handbuilt.ISNUM, handbuilt.EQ] = big
        attn.W_K[0][handbuilt.POS[-3], handbuilt.EQ] = attn.W_K[0][handbuilt.POS[-2], handbuilt.EQ] = big / 2
        qk2 = solver.blocks[1].attn.W_K[0]  # and variables c, d no longer match themselves: measure 3 = 1/2
        qk2[handbuilt.COPY[2], handbuilt.COPY[2]] = qk2[handbuilt.COPY[3], handbuilt.COPY[3]] = -handbuilt.C
    batch = measurement_batch(solver.config.task)
    n_vars = (batch.lhs_var >= 0).long() + (batch.rhs_var >= 0).long()
    expected = float((n_vars[n_vars <= 1] == 0).double().mean())
    assert 0 < expected < 1
    m4 = activation_measures(solver, batch, with_probe=False)["m4_l1_eq_to_operands"]
    assert m4 == pytest.approx(expected)
    # all_measures hands each measure its own value (no key mix-up): compare with the single functions
    result = all_measures(solver)
    assert result["m1_addition_module"] == addition_module_accuracy(solver)
    assert result["m2_l1_prev_token_qk"] == previous_token_qk_score(solver)
    assert result["m3_l2_var_identity_qk"] == variable_identity_score(solver) == 0.5
    assert result["m2_l1_prev_token_qk"] == 1.0
    assert result["m4_l1_eq_to_operands"] == pytest.approx(expected)
    assert len({round(v, 6) for v in result.values()}) >= 3


def test_without_the_probe_measure_7_is_nan_and_the_rest_unchanged():
    solver = handbuilt.exact_model()
    full, quick = all_measures(solver), all_measures(solver, with_probe=False)
    assert tuple(quick) == MEASURE_NAMES and math.isnan(quick["m7_probe_var_identity"])
    assert {k: v for k, v in quick.items() if k != "m7_probe_var_identity"} == \
        {k: v for k, v in full.items() if k != "m7_probe_var_identity"}


def test_value_positions_is_a_bool_mask(tiny_config):
    assert value_positions(measurement_batch(tiny_config.task), tiny_config.task).dtype == torch.bool


def test_probe_accuracy_on_two_and_three_rows():
    """Even rows fit, odd rows score: two rows are one to fit and one to score (not undefined)."""
    features = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert probe_accuracy(features[:2], torch.tensor([0, 0]), 2) == 1.0
    assert probe_accuracy(features, torch.tensor([1, 1, 0]), 2) == 1.0  # fit on rows 0 and 2, score row 1
