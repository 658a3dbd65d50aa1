"""The appendix read-outs on the hand-built solver (whose weights say what they must find) and on hand-set
matrices."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import handbuilt
from assignadd_core.analysis import circuits, diagnostics
from assignadd_core.data import Vocab, eval_pools
from assignadd_core.trainer import new_model

pytestmark = pytest.mark.usefixtures("single_thread")


@pytest.fixture(scope="module")
def solver():
    return handbuilt.exact_model()


def test_decomposition_adds_up_to_the_score(solver, tiny_config):
    for model in (solver, new_model(tiny_config)):
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
    model = new_model(tiny_config)
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
