"""Ablation and patching hooks: they do what they say on a tiny random model; on a hand-built model
that solves the task exactly (`handbuilt`), the answer under each intervention is known in advance;
and on the authors' weights (when present) the layer-1 head is needed for variables only and the
answer follows the patched value."""
from __future__ import annotations

import pytest
import torch

from assignadd_core.analysis import interventions as iv
from assignadd_core.analysis.authors_format import load_tl_state_dict, reference_weights_path
from assignadd_core.core.data import Vocab, eval_pools, sample_queries
from assignadd_core.core.model import AssignAddTransformer

import handbuilt

pytestmark = pytest.mark.usefixtures("single_thread")


@pytest.fixture(scope="module")
def model(tiny_config):
    torch.manual_seed(4)
    return AssignAddTransformer(tiny_config).eval()


@pytest.fixture(scope="module")
def batch(tiny_config):
    return sample_queries(tiny_config.task, 200, torch.Generator().manual_seed(2))


def test_predict_without_hooks_is_the_fused_answer(model, batch):
    assert torch.equal(iv.predict(model, batch.tokens), model.fused_logits(batch.tokens).argmax(-1))


def test_zero_ablation_equals_a_model_without_layer1_output(model, batch, tiny_config):
    hooked = model.run_with_hooks(batch.tokens, fwd_hooks=[(iv.LAYER1_OUT, iv.ablation_hook("zero"))])[:, -1]
    silent = AssignAddTransformer(tiny_config).eval()
    silent.load_state_dict(model.state_dict())
    with torch.no_grad():
        silent.blocks[0].attn.W_O.zero_()
    assert torch.allclose(hooked, silent.fused_logits(batch.tokens), atol=1e-5)
    assert not torch.allclose(hooked, model.fused_logits(batch.tokens), atol=1e-3)  # the head does matter


def test_mean_ablation_writes_the_per_position_mean(model, batch):
    mean = iv.mean_activation(model, iv.LAYER1_OUT, n=256)
    assert mean.shape == (model.config.task.seq_len, model.config.model.d_model)
    seen = {}

    def look(act, hook):
        seen["act"] = act.clone()

    model.run_with_hooks(batch.tokens, fwd_hooks=[(iv.LAYER1_OUT, iv.ablation_hook("mean", mean)),
                                                  (iv.LAYER1_OUT, look)])
    assert torch.allclose(seen["act"], mean.expand_as(seen["act"]))
    with pytest.raises(ValueError, match="mode"):
        iv.ablation_hook("half")
    with pytest.raises(ValueError, match="mean"):
        iv.ablation_hook("mean")


def test_ablation_table_columns_and_modes(model, tiny_config):
    pools = {k: v[:40] for k, v in eval_pools(tiny_config.task).items()}
    table = iv.ablation_table(model, pools)
    assert list(table.columns) == ["clean", "zero-ablated", "mean-ablated"]
    assert list(table.index) == list(pools)
    clean = [float((iv.predict(model, b.tokens) == b.answers).float().mean()) for b in pools.values()]
    assert table["clean"].tolist() == pytest.approx(clean)
    assert list(iv.ablation_table(model, pools, modes=("zero",)).columns) == ["clean", "zero-ablated"]


def test_patching_an_identical_value_changes_nothing(model, batch):
    clean = float((iv.predict(model, batch.tokens) == batch.answers).float().mean())
    same = iv.patch_value_residual(model, batch, "lhs", new_value=batch.lhs_val)
    assert same["original"] == pytest.approx(clean) and same["patched"] == pytest.approx(clean)
    with pytest.raises(ValueError, match="operand"):
        iv.patch_value_residual(model, batch, "middle")


def test_distractor_positions_hold_other_variables_values(batch, tiny_config):
    task = tiny_config.task
    vocab = Vocab(task)
    target = iv.distractor_positions(batch, task)
    has = target >= 0
    n_query_vars = (batch.lhs_var >= 0).long() + (batch.rhs_var >= 0).long()
    assert torch.equal(has, batch.n_assign > n_query_vars)
    rows = torch.nonzero(has).flatten()
    t = target[rows]
    assert bool((batch.tokens[rows, t] < task.modulus).all())  # a number ...
    var = batch.tokens[rows, t - 1] - vocab.var0
    assert bool((var >= 0).all())  # ... right after a variable ...
    assert bool(((var != batch.lhs_var[rows]) & (var != batch.rhs_var[rows])).all())  # ... not a query variable


@pytest.fixture(scope="module")
def reference():
    path = reference_weights_path()
    if path is None:
        pytest.skip("the authors' reference weights are not available (set ASSIGNADD_REFERENCE)")
    return load_tl_state_dict(path).eval()


def test_reference_layer1_is_needed_for_variables_only(reference):
    pools = eval_pools(reference.config.task)
    pools = {k: pools[k][:200] for k in ("0var_train", "1var_train", "1var_var_restricted")}
    table = iv.ablation_table(reference, pools, modes=("zero",))
    assert table.loc["0var_train", "zero-ablated"] >= 0.9
    assert table.loc["1var_train", "zero-ablated"] <= 0.5
    assert table.loc["1var_var_restricted", "zero-ablated"] <= 0.5


def test_reference_answer_follows_the_patched_value(reference):
    batch = eval_pools(reference.config.task)["2var_train"][:200]
    assert iv.patch_value_residual(reference, batch, "lhs")["patched"] >= 0.9
    assert iv.redirect_layer2_attention(reference, batch, "rhs")["patched"] >= 0.9


# ---------------------------------------------------------------------------- the hand-built solver
@pytest.fixture(scope="module")
def solver():
    return handbuilt.exact_model()


@pytest.fixture(scope="module")
def mixed(solver):
    """Training rows of every query type (0-, 1- and 2-var)."""
    batch = sample_queries(solver.config.task, 300, torch.Generator().manual_seed(2))
    assert len(set(batch.query_type.tolist())) == 4
    return batch


def test_the_solver_answers_every_pool(solver):
    for name, batch in eval_pools(solver.config.task).items():
        assert bool((iv.predict(solver, batch.tokens) == batch.answers).all()), name


@pytest.mark.parametrize("operand", ["lhs", "rhs"])
def test_value_patch_moves_the_answer_to_the_patched_sum(solver, mixed, operand):
    """Layer 2 reads each operand at its value position (a variable's value token, or the literal at
    13/14): pasting the counterfactual residual there gives (v' + other) mod N on every row, never
    the original sum (v' != v)."""
    out = iv.patch_value_residual(solver, mixed, operand, seed=3)
    assert out == {"original": 0.0, "patched": 1.0, "other": 0.0, "n": len(mixed)}


def test_value_patch_with_chosen_values(solver, mixed):
    n = solver.config.task.modulus
    same = iv.patch_value_residual(solver, mixed, "lhs", new_value=mixed.lhs_val)
    assert same["original"] == 1.0 and same["patched"] == 1.0
    # a chosen v' equal to the rhs value: the patched answer is 2 * rhs, which the rows must give
    to_rhs = iv.patch_value_residual(solver, mixed, "lhs", new_value=mixed.rhs_val)
    differs = float(((2 * mixed.rhs_val) % n != mixed.answers).float().mean())
    assert to_rhs["patched"] == 1.0 and to_rhs["original"] == pytest.approx(1.0 - differs)


def test_value_patch_only_at_the_value_position(solver, mixed):
    """The same paste one position off (the variable token before the value) changes nothing."""
    counter = mixed.tokens.clone()
    rows = torch.arange(len(mixed))
    counter[rows, mixed.lhs_src] = (mixed.lhs_val + 1) % solver.config.task.modulus
    _, cache = solver.run_with_cache(counter, names_filter=iv.LAYER2_INPUT)

    def paste_before(act, hook):
        act = act.clone()
        act[rows, mixed.lhs_src - 1] = cache[iv.LAYER2_INPUT][rows, mixed.lhs_src - 1]
        return act

    assert torch.equal(iv.predict(solver, mixed.tokens, [(iv.LAYER2_INPUT, paste_before)]), mixed.answers)


def expected_redirect_rows(batch, task, operand, seed=0):
    value = batch.lhs_val if operand == "lhs" else batch.rhs_val
    target = iv.distractor_positions(batch, task, seed)
    target_value = batch.tokens[torch.arange(len(batch)), target.clamp(min=0)]
    return (target >= 0) & (target_value != value)


@pytest.mark.parametrize("operand", ["lhs", "rhs"])
def test_redirected_attention_follows_the_distractor(solver, mixed, operand):
    """Moving layer 2's weight from the operand's value to a distractor's value: the answer is the
    distractor's value plus the other operand on every kept row (and never the original sum)."""
    out = iv.redirect_layer2_attention(solver, mixed, operand)
    keep = expected_redirect_rows(mixed, solver.config.task, operand)
    has = iv.distractor_positions(mixed, solver.config.task) >= 0
    assert 0 < int(keep.sum()) < int(has.sum())  # some picked distractors hold the operand's own value
    assert out == {"original": 0.0, "patched": 1.0, "other": 0.0, "n": int(keep.sum())}


def test_mean_activation_is_the_per_position_mean_over_training_rows(solver):
    """The solver's layer-1 output at prefix position p is COPY[v] for the variable v at p - 1 (at 0:
    the token itself), nothing at 12-14, and half of each query variable at `=`: its mean over the
    training rows of the same seed is known from the tokens alone."""
    task = solver.config.task
    mean = iv.mean_activation(solver, iv.LAYER1_OUT, n=512, seed=5)
    batch = sample_queries(task, 512, torch.Generator().manual_seed(5))
    tokens = batch.tokens
    var0 = Vocab(task).var0
    expected = torch.zeros(task.seq_len, task.n_vars)
    for p in range(task.prefix_len):
        source = tokens[:, max(p - 1, 0)]
        for v in range(task.n_vars):
            expected[p, v] = (source == var0 + v).float().mean()
    for v in range(task.n_vars):
        expected[-1, v] = 0.5 * ((batch.lhs_var == v).float().mean() + (batch.rhs_var == v).float().mean())
    assert torch.allclose(mean[:, handbuilt.COPY], expected, atol=1e-5)
    others = [i for i in range(handbuilt.D_MODEL) if i not in handbuilt.COPY]
    assert float(mean[:, others].abs().max()) < 1e-5


def test_has_distractor_counts_assignments_beyond_the_query_variables(mixed):
    query_vars = (mixed.lhs_var >= 0).long() + (mixed.rhs_var >= 0).long()
    expected = [int(a) > int(q) for a, q in zip(mixed.n_assign, query_vars)]
    assert iv.has_distractor(mixed).tolist() == expected
    assert 0 < sum(expected) < len(expected)


def test_zero_ablation_table_on_the_solver(solver):
    """Without layer 1 the variables carry no identity. Literals still work (0-var: 1.0); a 1-var
    query then reads its literal alone (attention 1 on it) and answers twice the literal, which is
    right exactly when the variable's value equals the literal."""
    pools = {k: v for k, v in eval_pools(solver.config.task).items() if k.startswith(("0var", "1var"))}
    table = iv.ablation_table(solver, pools, modes=("zero",), by_distractor=True)
    for name, batch in pools.items():
        assert table.loc[name, "clean"] == 1.0 and table.loc[name, "clean, with distractor"] == 1.0
        keep = iv.has_distractor(batch)
        equal = batch.lhs_val == batch.rhs_val
        expected = 1.0 if name.startswith("0var") else float(equal.float().mean())
        assert table.loc[name, "zero-ablated"] == pytest.approx(expected)
        expected_kept = 1.0 if name.startswith("0var") else float(equal[keep].float().mean())
        assert table.loc[name, "zero-ablated, with distractor"] == pytest.approx(expected_kept)
        assert table.loc[name, "share with distractor"] == pytest.approx(float(keep.float().mean()))
    batch = pools["1var_train"]
    keep, equal = iv.has_distractor(batch), batch.lhs_val == batch.rhs_val
    assert float(equal[keep].float().mean()) != float(equal[~keep].float().mean())  # the split matters here
    assert 0 < table.loc["1var_train", "zero-ablated"] < 1


def test_patching_table_on_the_solver(solver):
    task = solver.config.task
    pools = {k: v for k, v in eval_pools(task).items() if k in ("0var_train", "1var_train", "2var_train")}
    for operand in ("lhs", "rhs"):
        table = iv.patching_table(solver, pools, operand)
        assert list(table.index) == list(pools)
        assert (table["clean"] == 1.0).all()
        assert (table["value patch: original"] == 0.0).all() and (table["value patch: follows patch"] == 1.0).all()
        assert (table["redirect: original"] == 0.0).all() and (table["redirect: follows distractor"] == 1.0).all()
        assert table["redirect: n"].tolist() == [int(expected_redirect_rows(b, task, operand).sum())
                                                 for b in pools.values()]


# ---------------------------------------------------------------------------- small pieces, exact values
def test_ablation_hook_errors_and_dtype():
    with pytest.raises(ValueError, match=r"^mean ablation needs the mean activation$"):
        iv.ablation_hook("mean")
    with pytest.raises(ValueError, match=r"^ablation mode must be 'zero' or 'mean', got 'half'$"):
        iv.ablation_hook("half")
    act = torch.ones(2, 3, 4, dtype=torch.bfloat16)
    out = iv.ablation_hook("mean", torch.full((3, 4), 0.5))(act, None)  # a float32 mean
    assert out.dtype == torch.bfloat16 and bool((out == 0.5).all())


def test_a_distractor_is_an_assignment_the_query_does_not_use():
    """Variable 0 counts as a variable (index 0, not a literal's -1), on either side."""
    from types import SimpleNamespace
    t = torch.tensor
    batch = SimpleNamespace(n_assign=t([1, 1, 2, 2, 1, 2]), lhs_var=t([0, -1, 0, 3, -1, -1]),
                            rhs_var=t([-1, 0, 1, 0, -1, -1]))
    assert iv.has_distractor(batch).tolist() == [False, False, False, False, True, True]


def test_no_distractor_is_minus_one_and_the_seed_is_passed_on(batch, tiny_config):
    task = tiny_config.task
    target = iv.distractor_positions(batch, task)
    none = ~iv.has_distractor(batch)
    assert bool(none.any()) and bool((target[none] == -1).all())
    for seed in (0, 5):
        got, value, usable = iv.distractor_with_other_value(batch, task, batch.lhs_val, seed)
        assert torch.equal(got, iv.distractor_positions(batch, task, seed))
    assert not torch.equal(iv.distractor_positions(batch, task, 0), iv.distractor_positions(batch, task, 5))


def test_follow_fractions_split_every_answer_three_ways():
    pred, original, patched = torch.tensor([1, 2, 3, 4, 5]), torch.tensor([1, 2, 3, 0, 0]), torch.tensor([9, 9, 9, 4, 0])
    out = iv._follow_fractions(pred, original, patched)  # rows 0-2 original, row 3 follows the patch, row 4 neither
    assert out == {"original": pytest.approx(0.6), "patched": pytest.approx(0.2), "other": pytest.approx(0.2), "n": 5}


@pytest.mark.parametrize("operand", ["lhs", "rhs"])
def test_patching_table_rows_are_the_interventions_on_each_pool(operand):
    """On the solver rigged to be wrong when n1 = n2, where patching the lhs and the rhs give different shares
    (a patched value equal to the other operand makes a double)."""
    model = handbuilt.exact_model(answer=handbuilt.wrong_on_doubles)
    pools = {k: v[:80] for k, v in eval_pools(model.config.task).items() if k in ("1var_train", "2var_train")}
    table = iv.patching_table(model, pools, operand) if operand == "rhs" else iv.patching_table(model, pools)
    other = "lhs" if operand == "rhs" else "rhs"
    assert any(iv.patch_value_residual(model, b, operand) != iv.patch_value_residual(model, b, other)
               for b in pools.values())
    for name, b in pools.items():
        value = iv.patch_value_residual(model, b, operand)
        redirect = iv.redirect_layer2_attention(model, b, operand)
        row = table.loc[name]
        assert row["clean"] == float((iv.predict(model, b.tokens) == b.answers).float().mean())
        assert (row["value patch: original"], row["value patch: follows patch"]) == (value["original"], value["patched"])
        assert (row["redirect: original"], row["redirect: follows distractor"]) == (redirect["original"], redirect["patched"])
        assert row["redirect: n"] == redirect["n"]
