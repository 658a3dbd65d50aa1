"""The appendix read-outs on the hand-built solver (whose weights say what they must find) and on hand-set
matrices."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import handbuilt
from assignadd_core.analysis import circuits, diagnostics
from assignadd_core.core.data import Vocab, eval_pools
from assignadd_core.core.model import initial_model

pytestmark = pytest.mark.usefixtures("single_thread")


@pytest.fixture(scope="module")
def solver():
    return handbuilt.exact_model()


def test_decomposition_adds_up_to_the_score(solver, tiny_config):
    for model in (solver, initial_model(tiny_config)):
        parts = diagnostics.eq_query_decomposition(model)
        total = sum(parts.values())
        assert torch.allclose(total, circuits.eq_to_variable_scores(model), atol=1e-5)
        # the position·position part does not depend on the variable, the token·token part not on the side
        assert torch.allclose(parts["position·position"], parts["position·position"][:1].expand_as(total))
        assert torch.allclose(parts["token·token"], parts["token·token"][:, :1].expand_as(total))


def test_solver_layer1_ov_copies_variables_and_ignores_numbers(solver):
    vocab = Vocab(solver.config.task)
    variables = torch.arange(vocab.var0, vocab.var0 + solver.config.task.n_vars)
    numbers = torch.arange(solver.config.task.modulus)
    maps = diagnostics.token_maps(solver, 0, variables, variables)
    assert maps["OV"].shape == (len(variables), len(variables))
    # OV1 writes COPY[v], orthogonal to every token embedding: the map is zero on these tokens
    assert float(maps["OV"].abs().max()) == pytest.approx(0.0, abs=1e-6)
    # layer 2's QK at `=` scores every number key alike (the ISNUM bonus), so its number block is constant per row
    qk2 = diagnostics.token_maps(solver, 1, numbers, numbers)["QK"]
    assert float((qk2 - qk2[:, :1]).abs().max()) == pytest.approx(0.0, abs=1e-5)


def test_pca_finds_a_planted_circle(tiny_config):
    model = initial_model(tiny_config)
    n, d = tiny_config.task.modulus, tiny_config.model.d_model
    angle = 2 * torch.pi * 2 * torch.arange(n) / n  # frequency 2
    with torch.no_grad():
        model.W_E.zero_()
        model.W_E[:n, 0], model.W_E[:n, 1] = 5 * torch.cos(angle), 5 * torch.sin(angle)
        model.W_E[:n, 2] = 0.01 * torch.randn(n, generator=torch.Generator().manual_seed(0))
    coords, ratio = diagnostics.number_embedding_pca(model, 3)
    assert ratio[:2].sum() > 0.99
    radius = np.hypot(coords[:, 0], coords[:, 1])
    assert radius.std() / radius.mean() < 0.01  # on a circle


def test_probes_read_the_variable_only_after_layer1(solver):
    batch = eval_pools(solver.config.task)["1var_train"]
    table = diagnostics.probe_table(solver, batch)
    before, after = table.loc["blocks.0.hook_resid_pre"], table.loc["blocks.0.hook_resid_post"]
    assert after["variable identity"] == 1.0 and after["value"] == 1.0
    assert before["value"] == 1.0 and before["variable identity"] < 0.9


def planted_embeddings(n, d, amplitudes, noise, seed=0):
    """{frequency k: amplitude} on orthogonal pairs of mixed directions (not the first axes, so the planes
    must be found), plus Gaussian noise."""
    g = np.random.default_rng(seed)
    mix = np.linalg.qr(g.normal(size=(d, 2 * len(amplitudes))))[0]
    waves = [a * np.stack([np.cos(2 * np.pi * k * np.arange(n) / n + 0.4), np.sin(2 * np.pi * k * np.arange(n) / n + 0.4)], 1)
             for k, a in amplitudes.items()]
    return np.concatenate(waves, 1) @ mix.T + noise * g.normal(size=(n, d))


def test_fourier_plane_finds_the_planted_frequency_and_not_another(tiny_config):
    model = initial_model(tiny_config)
    n = 59
    e = planted_embeddings(n, 16, {2: 3.0}, noise=0.05)  # d < N: a plane of noise cannot fit every number
    at_2 = diagnostics.fourier_plane(model, 2, e)
    assert at_2["variance_share"] > 0.95 and at_2["radius_spread"] < 0.1 and at_2["order"] > 0.99
    # read at another frequency: little variance, and the angles do not follow 2πk'n/N
    at_1 = diagnostics.fourier_plane(model, 1, e)
    assert at_1["variance_share"] < 0.05 and at_1["order"] < 0.3
    # the reversed sense of rotation (frequency N - 2) is the same circle
    assert diagnostics.fourier_plane(model, 2, planted_embeddings(n, 16, {n - 2: 3.0}, noise=0.05))["order"] > 0.99
    # every number sits at its own angle 2πkn/N (up to one turn of the whole)
    coords = at_2["coords"]
    z = (coords[:, 0] + 1j * coords[:, 1]) * np.exp(-2j * np.pi * 2 * np.arange(n) / n)
    assert np.abs(np.angle(z / z[0])).max() < 0.1


def test_variance_share_is_the_frequency_power(tiny_config):
    """Two planted frequencies with amplitudes 3 : 1 (power 9 : 1): each plane holds its share."""
    model = initial_model(tiny_config)
    e = planted_embeddings(59, 128, {2: 3.0, 5: 1.0}, noise=0.0)
    shares = [diagnostics.fourier_plane(model, k, e)["variance_share"] for k in (2, 5, 9)]
    assert shares == pytest.approx([0.9, 0.1, 0.0], abs=0.01)


def test_fourier_plane_rejects_a_frequency_out_of_range(tiny_config):
    model = initial_model(tiny_config)
    with pytest.raises(ValueError, match="frequency k must be in 1.."):
        diagnostics.fourier_plane(model, 0)
    with pytest.raises(ValueError, match="frequency k must be in 1.."):
        diagnostics.fourier_plane(model, (tiny_config.task.modulus - 1) // 2 + 1)


def test_shuffled_null_is_far_below_a_planted_circle(paper_config):
    model = initial_model(paper_config)
    n, d = paper_config.task.modulus, paper_config.model.d_model
    with torch.no_grad():
        model.W_E[:n] = torch.tensor(planted_embeddings(n, d, {2: 3.0}, noise=0.05), dtype=model.W_E.dtype)
    null = diagnostics.shuffled_plane_null(model, 2, n_shuffles=50)
    real = diagnostics.fourier_plane(model, 2)
    assert null["order"]["p99"] < 0.5 < 0.99 < real["order"]  # (the variance share is no test here: a rank-2
    # embedding lies in every plane its own vectors span, shuffled or not)
