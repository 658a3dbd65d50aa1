"""The shared-addition tests (C6): twins, cosine groups, OV2 prediction and activation patching."""
import numpy as np
import pytest
import torch

from assignadd_core.analysis import addition
from assignadd_core.analysis.authors_format import load_tl_state_dict, reference_weights_path
from assignadd_core.core.config import RunConfig
from assignadd_core.core.data import LITERAL, Vocab
from assignadd_core.core.data import make_split
from assignadd_core.measure.measures import operand_pairs
from assignadd_core.core.model import AssignAddTransformer

import handbuilt

TINY = RunConfig().replace(modulus=7, n_vars=5, n_left_only=1, n_right_only=1, d_model=16, d_mlp=32)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return AssignAddTransformer(TINY).eval()


@pytest.mark.parametrize("kind", addition.TWIN_KINDS)
def test_twins_differ_only_in_the_query_operands(kind):
    task = TINY.task
    literal, variable = addition.twin_batches(task, kind, seed=3)
    n = task.modulus
    assert len(literal) == len(variable) == n * n
    assert torch.equal(literal.answers, (literal.lhs_val + literal.rhs_val) % n)
    assert torch.equal(literal.tokens[:, :-3], variable.tokens[:, :-3])
    assert torch.equal(literal.tokens[:, -3], literal.lhs_val) and torch.equal(literal.tokens[:, -2], literal.rhs_val)
    assert (literal.lhs_var == LITERAL).all() and (literal.rhs_var == LITERAL).all()
    rows = torch.arange(len(variable))
    var0 = Vocab(task).var0
    for side in ("lhs", "rhs"):
        var, src = getattr(variable, f"{side}_var"), getattr(variable, f"{side}_src")
        has = var >= 0
        assert bool(has.any()) == (kind == "2var" or kind.endswith("left" if side == "lhs" else "right"))
        # the variable's value token holds the operand value, right after the variable's own token
        assert torch.equal(variable.tokens[rows[has], src[has]], getattr(variable, f"{side}_val")[has])
        assert torch.equal(variable.tokens[rows[has], src[has] - 1], var[has] + var0)
    split = make_split(task)  # only variables (and sides) allowed in training
    if kind == "2var":
        allowed = {tuple(p) for p in split.allowed_var_pairs.tolist()}
        assert {(int(a), int(b)) for a, b in zip(variable.lhs_var, variable.rhs_var)} <= allowed
    elif kind == "1var_left":
        assert set(variable.lhs_var.tolist()) <= set(split.left_vars.tolist())
    else:
        assert set(variable.rhs_var.tolist()) <= set(split.right_vars.tolist())


def test_cosine_groups_on_a_commutative_representation():
    n, d = 7, 64
    f = torch.randn(n, d, generator=torch.Generator().manual_seed(0))
    pairs = operand_pairs(n)
    rep = f[pairs[:, 0]] + f[pairs[:, 1]]
    groups = addition.cosine_groups(rep, rep, pairs)
    assert len(groups["matched"]) == n * n and len(groups["swapped"]) == n * n - n
    assert len(groups["mismatched"]) == n * n * (n * n - 1) - (n * n - n)
    assert np.allclose(groups["matched"], 1, atol=1e-5) and np.allclose(groups["swapped"], 1, atol=1e-5)
    assert groups["mismatched"].mean() < 0.6
    table = addition.summarize(groups)
    assert list(table.index) == list(addition.GROUPS)
    assert table.loc["matched", "mean"] == pytest.approx(1.0, abs=1e-5)


def test_summarize_statistics():
    values = np.arange(101, dtype=float)
    table = addition.summarize({"matched": values, "mismatched": -values})
    assert table.loc["matched"].to_dict() == pytest.approx(
        {"n": 101, "mean": 50.0, "std": float(np.sqrt((101 ** 2 - 1) / 12)), "q05": 5.0, "min": 0.0, "max": 100.0})
    assert table.loc["mismatched", "q05"] == pytest.approx(-95.0)


def test_cosine_groups_see_unrelated_inputs():
    pairs = operand_pairs(5)
    gen = torch.Generator().manual_seed(1)
    a, b = torch.randn(25, 64, generator=gen), torch.randn(25, 64, generator=gen)
    groups = addition.cosine_groups(a, b, pairs)
    assert abs(groups["matched"].mean()) < 0.2


def test_ov2_prediction_is_the_sum_of_the_operand_rows(model):
    literal, _ = addition.twin_batches(TINY.task, "2var")
    attn = model.blocks[1].attn
    ov = model.W_E.detach() @ attn.W_V[0].detach() @ attn.W_O[0].detach()
    expected = ov[literal.lhs_val] + ov[literal.rhs_val]
    assert torch.allclose(addition.ov2_prediction(model, literal), expected, atol=1e-5)


def test_patching_with_itself_changes_nothing(model):
    literal, _ = addition.twin_batches(TINY.task, "2var")
    clean = model(literal.tokens)[:, -1].detach()
    for hook in (addition.MLP_INPUT_HOOK, addition.ATTN_OUT_HOOK):
        assert torch.allclose(addition.patched_logits(model, literal.tokens, literal.tokens, hook), clean, atol=1e-5)


def test_patching_the_whole_mlp_input_hands_over_the_donors_output(model):
    literal, variable = addition.twin_batches(TINY.task, "2var")
    donor_clean = model(variable.tokens)[:, -1].detach()
    patched = addition.patched_logits(model, literal.tokens, variable.tokens)
    assert torch.allclose(patched, donor_clean, atol=1e-4)
    report = addition.patch_report(model, literal, variable)
    assert report.loc["mismatched variable → literal (control)", "donor_argmax"] == pytest.approx(1.0)
    assert report.loc["variable → literal", "donor_argmax"] == pytest.approx(1.0)
    assert set(report.columns) >= {"same_argmax", "correct", "follows_donor", "rel_logit_change"}


# ---------------------------------------------------------------------------- on the hand-built solver
@pytest.fixture(scope="module")
def solver():
    return handbuilt.exact_model()


def test_shared_addition_on_the_solver(solver):
    """Layer 2 puts 1/2 on each operand value, literal or fetched: its output is exactly half the OV2
    prediction for both twins (cosine 1). The MLP input at `=` differs between twins only by the
    copied variables (1/2 each, layer 1's output at `=`): residual EQ + POS + OPER/2 (+ COPY/2), so the
    matched cosine is sqrt(5/6) for n1 != n2 and sqrt(6/7) for n1 = n2."""
    result = addition.shared_addition_test(solver, "2var")
    pairs = torch.stack([result["literal"].lhs_val, result["literal"].rhs_val], 1)
    assert np.allclose(result["ov_literal"]["matched"], 1.0, atol=1e-5)
    assert np.allclose(result["ov_variable"]["matched"], 1.0, atol=1e-5)
    double = (pairs[:, 0] == pairs[:, 1]).numpy()
    expected = np.where(double, np.sqrt(6 / 7), np.sqrt(5 / 6))
    assert np.allclose(result["mlp_input"]["matched"], expected, atol=1e-5)


def test_shared_addition_sees_a_model_that_cannot_fetch_variables(solver):
    """With layer 1 silenced (no copied variables), the literal twin still reads its operands (cosine 1
    with the OV2 prediction) but the variable twin spreads layer 2 evenly over every number in the
    prompt: right only when the prompt holds no distractor assignment."""
    broken = handbuilt.exact_model()
    with torch.no_grad():
        broken.blocks[0].attn.W_O.zero_()
    result = addition.shared_addition_test(broken, "2var")
    assert np.allclose(result["ov_literal"]["matched"], 1.0, atol=1e-5)
    distractor = (result["variable"].n_assign > 2).numpy()
    assert 0 < distractor.sum() < len(distractor)
    assert np.allclose(result["ov_variable"]["matched"][~distractor], 1.0, atol=1e-5)
    assert result["ov_variable"]["matched"][distractor].mean() < 0.9


def test_patch_report_on_the_solver(solver):
    """Twins have the same answer and the solver is right on all of them: patching the twin's MLP input
    keeps every answer (the copied variables are read by nothing downstream). The control's donor is
    another pair: the answer follows the donor on every row, and is 'correct' only where the two
    sums agree."""
    literal, variable = addition.twin_batches(solver.config.task, "2var")
    report = addition.patch_report(solver, literal, variable, seed=1)
    for name in ("variable → literal", "literal → variable"):
        row = report.loc[name]
        assert row[["clean_accuracy", "same_argmax", "correct", "follows_donor", "donor_argmax"]].tolist() == [1.0] * 5
        assert row["rel_logit_change"] == pytest.approx(0.0, abs=1e-6)
    control = report.loc["mismatched variable → literal (control)"]
    assert control["clean_accuracy"] == 1.0
    assert control["follows_donor"] == 1.0 and control["donor_argmax"] == 1.0
    assert control["correct"] == control["same_argmax"] < 1
    assert control["rel_logit_change"] > 0.5
    louder = handbuilt.exact_model()
    with torch.no_grad():
        louder.unembed.W_U.mul_(10.0)  # logits 10x: relative changes stay the same
    loud = addition.patch_report(louder, literal, variable, seed=1).loc["mismatched variable → literal (control)"]
    assert loud["rel_logit_change"] == pytest.approx(control["rel_logit_change"], rel=1e-4)


@pytest.mark.paper
@pytest.mark.skipif(reference_weights_path() is None, reason="the authors' reference weights are absent")
def test_authors_model_reuses_one_addition_module():
    model = load_tl_state_dict(reference_weights_path())
    result = addition.shared_addition_test(model)
    mlp = addition.summarize(result["mlp_input"])
    assert mlp.loc["matched", "mean"] > 0.9 and mlp.loc["mismatched", "mean"] < 0.3
    ov = addition.summarize(result["ov_literal"])
    assert ov.loc["matched", "mean"] > 0.9 and ov.loc["mismatched", "mean"] < 0.3
    every_7th = slice(None, None, 7)  # ~500 twins are plenty for the patch
    report = addition.patch_report(model, result["literal"][every_7th], result["variable"][every_7th],
                                   hook=addition.ATTN_OUT_HOOK)
    assert report.loc["variable → literal", "same_argmax"] > 0.95
    assert report.loc["mismatched variable → literal (control)", "same_argmax"] < 0.1
