"""Circuit read-outs: the QK maps agree with the model's own attention scores, and pick out a
hand-built previous-token head and identity pattern."""
from __future__ import annotations

import pytest
import torch

from assignadd_core.analysis import circuits
from assignadd_core.core.data import QUERY_TYPE_NAMES, Vocab, eval_pools, sample_queries
from assignadd_core.measure import measures
from assignadd_core.measure.measures import previous_token_qk_score, variable_identity_score
from assignadd_core.core.model import AssignAddTransformer

pytestmark = pytest.mark.usefixtures("single_thread")


@pytest.fixture(scope="module")
def model(tiny_config):
    torch.manual_seed(3)
    return AssignAddTransformer(tiny_config).eval()


def test_positional_map_is_the_models_score_between_positions(model):
    qk = circuits.positional_qk_map(model)
    n = model.config.task.prefix_len
    assert qk.shape == (n, n)
    assert torch.isnan(qk.triu(1)).sum() == n * (n - 1) // 2  # keys after the query are masked ...
    assert not bool(torch.isnan(qk.tril()).any())  # ... and only those (the query itself is a key)
    a = model.blocks[0].attn
    manual = model.W_pos[3] @ a.W_Q[0] @ a.W_K[0].T @ model.W_pos[1] / a.W_Q.shape[-1] ** 0.5
    assert torch.allclose(qk[3, 1], manual.detach(), atol=1e-6)


def test_hand_built_previous_token_head_is_found(tiny_config):
    """W_pos = unit vectors, QK1 = shift: every query scores its previous position highest."""
    model = AssignAddTransformer(tiny_config)
    d, n_ctx = tiny_config.model.d_model, tiny_config.task.seq_len
    with torch.no_grad():
        model.pos_embed.W_pos.copy_(torch.eye(n_ctx, d))
        model.blocks[0].attn.W_Q.copy_(torch.eye(d)[None])
        shift = torch.zeros(d, d)
        shift[torch.arange(n_ctx - 1), torch.arange(1, n_ctx)] = 1.0  # W_K[q-1, q] = 1
        model.blocks[0].attn.W_K.copy_(shift[None])
    rows = circuits.previous_token_rows(circuits.positional_qk_map(model))
    assert bool(rows.all())
    assert previous_token_qk_score(model) == 1.0


def test_previous_token_rows_leave_out_key_q_minus_2(tiny_config):
    """Rows that peak on q - 2 with q - 1 second still count (the measure's definition); rows that peak on
    q - 3 do not (only rows 1 and 2, where nothing earlier than q - 1 is left, count)."""
    n = tiny_config.task.prefix_len
    shift = lambda by: torch.diag(torch.ones(n - by), -by)  # (q, q - by) = 1
    qk = (2 * shift(2) + shift(1)).masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("nan"))
    assert circuits.previous_token_rows(qk).tolist() == [True] * (n - 1)
    qk3 = (2 * shift(3) + shift(1)).masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("nan"))
    assert circuits.previous_token_rows(qk3).tolist() == [True, True] + [False] * (n - 3)


def test_previous_token_rows_are_measure_2(model):
    rows = circuits.previous_token_rows(circuits.positional_qk_map(model))
    assert len(rows) == model.config.task.prefix_len - 1
    assert float(rows.float().mean()) == pytest.approx(previous_token_qk_score(model))


def test_identity_rows_and_contrast():
    eye = torch.eye(5) * 3 + 0.1 * torch.randn(5, 5, generator=torch.Generator().manual_seed(0))
    assert bool(circuits.identity_rows(eye).all())
    assert circuits.diagonal_contrast(eye) > 1.5
    flat = torch.ones(5, 5)
    assert circuits.diagonal_contrast(flat) == pytest.approx(0.0, abs=1e-12)
    anti = 1 - torch.eye(5)
    assert circuits.diagonal_contrast(anti) < 0 and not bool(circuits.identity_rows(anti).any())
    assert circuits.diagonal_contrast(torch.zeros(3, 3)) != circuits.diagonal_contrast(torch.zeros(3, 3))  # NaN
    # exact values: a·I has diagonal mean a, off-diagonal mean 0, RMS a / sqrt(n): contrast sqrt(n) at any a
    assert circuits.diagonal_contrast(7.0 * torch.eye(4)) == pytest.approx(2.0)
    # 2I + 1 (n = 4): diagonal 3, off-diagonal 1, RMS sqrt((4·9 + 12·1) / 16) = sqrt(3)
    assert circuits.diagonal_contrast(2 * torch.eye(4) + 1) == pytest.approx(2 / 3 ** 0.5)
    # rows, not columns: each row of m peaks on its diagonal, column 0 peaks at row 1
    m = torch.tensor([[2.0, 0, 0], [3, 4, 0], [0, 0, 1]])
    assert circuits.identity_rows(m).tolist() == [True, True, True]
    assert circuits.identity_rows(m.T).tolist() == [False, True, True]


def test_variable_map_identity_when_qk2_is_built_so(tiny_config):
    """QK2 = (U Uᵀ)⁺-shaped so that copied variables match themselves: measure 3 and identity_rows agree."""
    model = AssignAddTransformer(tiny_config)
    vocab = Vocab(tiny_config.task)
    a0, a1 = model.blocks[0].attn, model.blocks[1].attn
    with torch.no_grad():
        u = model.W_E[vocab.var0: vocab.var0 + tiny_config.task.n_vars] @ a0.W_V[0] @ a0.W_O[0]
        pinv = torch.linalg.pinv(u)  # [d, n_vars]: u @ pinv = I
        a1.W_Q.copy_((pinv @ pinv.T)[None])
        a1.W_K.copy_(torch.eye(u.shape[1])[None])
    qk = circuits.variable_qk_map(model)
    assert bool(circuits.identity_rows(qk).all())
    assert variable_identity_score(model) == 1.0


def test_eq_to_variable_scores_match_the_attention_scores(model, tiny_config):
    task = tiny_config.task
    batch = sample_queries(task, 64, torch.Generator().manual_seed(1), kind="2var_train")
    _, cache = model.run_with_cache(batch.tokens, names_filter="blocks.0.attn.hook_attn_scores")
    scores = cache["blocks.0.attn.hook_attn_scores"][:, 0, -1]  # from `=` to every key
    table = circuits.eq_to_variable_scores(model)
    assert table.shape == (task.n_vars, 2)
    n = task.seq_len
    assert torch.allclose(scores[:, n - 3], table[batch.lhs_var, 0], atol=1e-5)
    assert torch.allclose(scores[:, n - 2], table[batch.rhs_var, 1], atol=1e-5)


def test_example_batch_and_patterns(model, tiny_config):
    task = tiny_config.task
    pools = eval_pools(task)
    examples = circuits.example_batch(task, pools)
    assert examples.query_type.tolist() == list(range(len(QUERY_TYPE_NAMES)))
    # each is the first sequence of its kind: 0-var and 2-var open their pools, 1-var come from 1var_train
    assert torch.equal(examples.tokens[0], pools["0var_train"].tokens[0])
    assert torch.equal(examples.tokens[3], pools["2var_train"].tokens[0])
    one = pools["1var_train"]
    for row, left in ((1, True), (2, False)):
        first = next(i for i in range(len(one)) if bool(one.lhs_var[i] >= 0) == left)
        assert torch.equal(examples.tokens[row], one.tokens[first])
    patterns = circuits.attention_patterns(model, examples.tokens)
    assert patterns.shape == (len(examples), 2, task.seq_len, task.seq_len)
    assert torch.allclose(patterns.sum(-1), torch.ones(len(examples), 2, task.seq_len), atol=1e-5)
    fused = measures.fused_forward(model, examples.tokens)
    assert torch.allclose(patterns[:, 0], fused.pattern1.detach(), atol=1e-5)
    assert torch.allclose(patterns[:, 1, -1], fused.pattern2.detach(), atol=1e-5)
    labels = circuits.token_labels(task, examples.tokens[0])
    assert labels[-1] == f"{task.seq_len - 1}:=" and len(labels) == task.seq_len


def test_restricted_minus_trained_reads_the_forbidden_cells():
    import torch

    from assignadd_core.analysis.circuits import restricted_minus_trained
    from assignadd_core.core.config import RunConfig
    from assignadd_core.core.data import make_split
    split = make_split(RunConfig().task)
    table = torch.zeros(12, 2)
    table[split.left_forbidden_vars, 0] = 1.0  # k, l scored 1 on the left, everything else 0
    table[split.right_forbidden_vars, 1] = 1.0
    assert restricted_minus_trained(table, split) == 1.0
    assert restricted_minus_trained(torch.ones(12, 2), split) == 0.0
