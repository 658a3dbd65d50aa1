"""The reviewer's controls (`analysis.controls`) on models whose answer is known: the hand-built solver
(layer 2 matches the variable labels layer 1 copies), an untrained tiny model, and hand-made matrices."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import handbuilt
from assignadd_core.rules import stats
from assignadd_core.analysis import controls
from assignadd_core.analysis import interventions as iv
from assignadd_core.core.data import eval_pools, exact_sets, make_split, sample_queries

pytestmark = pytest.mark.usefixtures("single_thread")


@pytest.fixture(scope="module")
def solver():
    return handbuilt.exact_model()


@pytest.fixture(scope="module")
def one_var(solver):
    batch = eval_pools(solver.config.task)["1var_train"]
    return batch[iv.has_distractor(batch)]


# ---------------------------------------------------------------------------- C2
def test_swap_heldout_split_follows_the_training_mask(solver, monkeypatch):
    """A stand-in evaluation that is right exactly where the swapped pair was trained: the two parts
    must come out 1 and 0, and their sizes must be the split's own counts."""
    task = solver.config.task
    train = make_split(task).train_mask
    monkeypatch.setattr(controls, "batch_correct", lambda model, batch: train[batch.rhs_val, batch.lhs_val])
    out = controls.swap_heldout_accuracy(solver)
    held = exact_sets(task)["0var_heldout"]
    n_swap_train = int(train[held.rhs_val, held.lhs_val].sum())
    assert out["swap_in_training"] == 1.0 and out["swap_heldout"] == 0.0
    assert out["n_swap_in_training"] == n_swap_train and out["n_swap_heldout"] == len(held) - n_swap_train
    assert out["all"] == pytest.approx(n_swap_train / len(held))


def test_swap_heldout_on_the_solver_is_perfect(solver):
    out = controls.swap_heldout_accuracy(solver)
    assert out["all"] == 1.0 and out["n_swap_heldout"] > 0


# ---------------------------------------------------------------------------- C4
def test_position_masks(one_var, solver):
    task = solver.config.task
    values = iv.position_mask(one_var, task, "values")
    assert torch.equal(values, iv.value_positions(one_var, task))
    eq = iv.position_mask(one_var, task, "eq")
    assert bool(eq[:, -1].all()) and int(eq.sum()) == len(one_var)
    with pytest.raises(ValueError):
        iv.position_mask(one_var, task, "query")


def test_masked_ablation_replaces_only_masked_positions():
    act = torch.arange(24.0).reshape(2, 3, 4)
    mean = torch.full((3, 4), -1.0)
    mask = torch.tensor([[True, False, False], [False, False, True]])
    out = iv.ablation_hook("mean", mean, mask)(act, None)
    assert bool((out[mask] == -1).all()) and torch.equal(out[~mask], act[~mask])
    zeroed = iv.ablation_hook("zero", mask=mask)(act, None)
    assert bool((zeroed[mask] == 0).all()) and torch.equal(zeroed[~mask], act[~mask])


def test_value_position_ablation_breaks_lookup_not_addition(solver):
    """The solver finds a variable's value by the label layer 1 wrote on it; averaging those labels away
    at the value positions leaves literals untouched (0-var stays exact) and breaks 1-var lookup; ablating
    at `=` only removes the query's own label there."""
    pools = {k: v for k, v in eval_pools(solver.config.task).items() if k in ("0var_train", "1var_train")}
    table = iv.ablation_table(solver, pools, modes=(), wheres=("values", "eq", "all"), distractor_only=True)
    assert table.loc["0var_train", "clean"] == 1.0 and table.loc["0var_train", "ablated at values"] == 1.0
    assert table.loc["1var_train", "clean"] == 1.0 and table.loc["1var_train", "ablated at values"] < 0.5
    assert table.loc["1var_train", "ablated at eq"] < 1.0


# ---------------------------------------------------------------------------- C5
@pytest.mark.parametrize("operand", ["lhs", "rhs"])
def test_relabel_patch_is_followed_by_a_label_matching_layer2(solver, one_var, operand):
    out = controls.relabel_patch(solver, one_var, operand)
    assert out["n"] > 0
    assert out["attention_follows_label"] == 1.0 and out["answer_follows_label"] == 1.0
    assert out["answer_original"] == 0.0


def test_relabel_patch_needs_a_variable_operand(solver):
    literal = eval_pools(solver.config.task)["0var_train"]
    assert controls.relabel_patch(solver, literal, "lhs")["n"] == 0


# ---------------------------------------------------------------------------- C6
def test_pair_relations_partition_every_pair_of_pairs():
    n = 5
    grid = torch.arange(n)
    pairs = torch.stack([grid.repeat_interleave(n), grid.repeat(n)], 1)
    groups = controls.pair_relation_groups(pairs, n)
    total = sum(g.long() for g in groups.values())
    assert bool((total == 1).all())
    assert bool(groups["matched"].diagonal().all()) and int(groups["matched"].sum()) == n * n
    assert int(groups["same sum"].sum(1)[0]) == n - 1  # every other pair with the same sum
    # one shared operand: same n1 (n - 1 others) or same n2 (n - 1 others), none of them with the same sum
    assert int(groups["one shared operand"].sum(1)[0]) == 2 * (n - 1)


def test_mlp_input_cosines_on_the_solver(solver):
    """The solver's MLP input is the `=` token's own stream plus (OPER[n1] + OPER[n2]) / 2, whatever the
    prefix; a variable query adds the variables' labels that layer 1 copies to `=`. So the ceiling (same
    literal query, other prefix) is exactly 1, the twin a little lower, and the baselines in the order of
    what they share."""
    out = controls.mlp_input_cosines(solver)
    assert out["ceiling (literal vs literal)"] == pytest.approx(1.0, abs=1e-5)
    assert 0.8 < out["matched"] < out["ceiling (literal vs literal)"]
    assert out["matched"] > out["one shared operand"] > out["unrelated"]


# ---------------------------------------------------------------------------- C7
def test_frequencies_for_share():
    fractions = np.array([0.5, 0.05, 0.3, 0.15])
    assert controls.frequencies_for_share(fractions, 0.7) == [1, 3]
    assert controls.frequencies_for_share(fractions, 0.8) == [1, 3]
    assert controls.frequencies_for_share(fractions, 0.81) == [1, 3, 4]
    assert len(controls.frequencies_for_share(np.full(29, 1 / 29), 0.7)) == 21  # 20 hold only 69 %


def test_fourier_null_shapes_and_order(tiny_config):
    from assignadd_core.core.model import initial_model
    model = initial_model(tiny_config).eval()
    out = controls.fourier_null(model, n_untrained=2, n_shuffles=5)
    assert len(out["untrained"]) == 2 and len(out["shuffled"]) == 5
    assert min(out["untrained"] + out["shuffled"]) <= out["null_q99"] <= out["null_max"]


# ---------------------------------------------------------------------------- C10
def test_whitened_contrast_is_zero_for_isotropic_and_positive_for_identity():
    gen = torch.Generator().manual_seed(0)
    basis = torch.randn(12, 32, generator=gen) + 2.0  # overlapping copies: the raw Gram matrix is diagonal-heavy
    assert controls.whitened_contrast(torch.eye(32), basis) == pytest.approx(0.0, abs=1e-9)
    white = torch.linalg.pinv(basis)  # B⁺: its projection on the copies is the identity
    assert controls.whitened_contrast(white @ white.T, basis) > 1.0
    randoms = [controls.whitened_contrast(torch.randn(32, 32, generator=gen), basis) for _ in range(200)]
    assert abs(float(np.mean(randoms))) < 0.1


def test_bootstrap_interval():
    lo, hi = stats.bootstrap_mean_interval([1.0, 2.0, 3.0, 4.0])
    assert 1.0 <= lo < 2.5 < hi <= 4.0
    assert stats.bootstrap_mean_interval([0.5] * 10) == (0.5, 0.5)
    wide = stats.bootstrap_mean_interval(np.random.default_rng(1).normal(size=10))
    narrow = stats.bootstrap_mean_interval(np.random.default_rng(1).normal(size=1000))
    assert narrow[1] - narrow[0] < (wide[1] - wide[0]) / 3


# ---------------------------------------------------------------------------- exact values on hand-made inputs
def test_position_mask_all_and_the_error_message(one_var, solver):
    task = solver.config.task
    assert bool(iv.position_mask(one_var, task, "all").all())
    with pytest.raises(ValueError, match=r"^where must be 'values', 'eq' or 'all', got 'query'$"):
        iv.position_mask(one_var, task, "query")


def test_masked_ablation_keeps_the_activation_dtype():
    act = torch.arange(24.0).reshape(2, 3, 4).to(torch.bfloat16)
    mask = torch.tensor([[True, False, False], [False, False, True]])
    out = iv.ablation_hook("mean", torch.full((3, 4), -1.0), mask)(act, None)  # a float32 mean
    assert out.dtype == torch.bfloat16 and bool((out[mask] == -1).all()) and torch.equal(out[~mask], act[~mask])


def test_same_sum_is_equality_of_the_sums_mod_n():
    """Against a loop over every two pairs of a 7 × 7 grid (sums that differ by a multiple of 7 are the same)."""
    n = 7
    grid = torch.arange(n)
    pairs = torch.stack([grid.repeat_interleave(n), grid.repeat(n)], 1)
    groups = controls.pair_relation_groups(pairs, n)
    p = pairs.tolist()
    for i, (a1, a2) in enumerate(p):
        for j, (b1, b2) in enumerate(p):
            same = (a1, a2) == (b1, b2)
            same_sum = (a1 + a2) % n == (b1 + b2) % n and not same
            shared = ((a1 == b1) != (a2 == b2)) and not same_sum
            assert bool(groups["matched"][i, j]) == same
            assert bool(groups["same sum"][i, j]) == same_sum, (p[i], p[j])
            assert bool(groups["one shared operand"][i, j]) == shared, (p[i], p[j])


def test_frequencies_for_share_default_and_unnormalised_power():
    powers = np.array([5.0, 0.5, 3.0, 1.5])  # 50 %, 5 %, 30 %, 15 % of 10
    assert controls.frequencies_for_share(powers) == [1, 3]  # 70 % by default (the C7 rule)
    assert controls.frequencies_for_share(powers, 0.81) == [1, 3, 4]


def test_median_active_r2_reads_only_the_active_neurons(monkeypatch):
    from types import SimpleNamespace
    monkeypatch.setattr(controls, "neuron_importance", lambda model, maps: np.array([1.0, 0.5, 0.04, 0.2]))
    monkeypatch.setattr(controls, "fit_two_operand_frequency", lambda maps: SimpleNamespace(r2=np.array([0.9, 0.8, 0.1, 0.3])))
    assert controls.median_active_r2(None, None) == pytest.approx(0.8)  # neurons 0, 1, 3 (≥ 5 % of the largest)
    assert controls.median_active_r2(None, None, rel=0.3) == pytest.approx(0.85)  # neurons 0, 1


def test_whitened_contrast_by_hand():
    """Orthonormal copies (the first 3 of 5 axes): B = U, the direction seen is its top-left 3 × 3 block S, and
    the contrast is (mean diag − mean off-diagonal of S − tr(M)/5 · I) / rms(S)."""
    basis = torch.eye(5)[:3]
    block = torch.zeros(5, 5)
    block[:3, :3] = 2 * torch.eye(3)  # S = 2 I: traceless diagonal 2 - 6/5 = 0.8, rms sqrt(12/9)
    assert controls.whitened_contrast(block, basis) == pytest.approx(0.8 / (12 / 9) ** 0.5)
    block[:3, :3] = torch.full((3, 3), 0.5) + 0.5 * torch.eye(3)  # diag 1, off 0.5: (1 - 3/5 - 0.5) / sqrt(0.5)
    assert controls.whitened_contrast(block, basis) == pytest.approx(-0.1 / 0.5 ** 0.5)
    assert controls.whitened_contrast(torch.zeros(5, 5), basis) == 0.0  # the zero direction is isotropic


def test_whitened_contrast_does_not_depend_on_the_scale_of_the_copies():
    gen = torch.Generator().manual_seed(0)
    basis = torch.randn(12, 32, generator=gen) + 2.0
    direction = torch.randn(32, 32, generator=gen)
    small = basis * 1e-3  # eigenvalues of U Uᵀ far below 1
    assert controls.whitened_contrast(torch.eye(32), small) == pytest.approx(0.0, abs=1e-9)
    assert controls.whitened_contrast(direction, small) == pytest.approx(controls.whitened_contrast(direction, basis))


def test_bootstrap_interval_edge_cases():
    lo, hi = stats.bootstrap_mean_interval([])
    assert np.isnan(lo) and np.isnan(hi)
    assert stats.bootstrap_mean_interval([0.3]) == (0.3, 0.3)  # one value: its own mean
    # two values: a resampled mean is 0, 0.5 or 1 with probability 1/4, 1/2, 1/4, so the 2.5 % and 97.5 % points
    # of 2,000 resamples are 0 and 1 (every index can be drawn)
    assert stats.bootstrap_mean_interval([1.0, 0.0]) == (0.0, 1.0)
    values = np.arange(10.0)
    assert stats.bootstrap_mean_interval(values) == stats.bootstrap_mean_interval(values)  # seeded
    lo, hi = stats.bootstrap_mean_interval(values, level=0.0)  # a 0 % interval is the median resampled mean
    assert lo == hi and 3.5 <= lo <= 5.5
