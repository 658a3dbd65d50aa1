"""Fourier tools on synthetic functions of Z/N with known frequencies and phases, and on a hand-built
model whose neurons are single-frequency by construction."""
import math

import numpy as np
import pytest
import torch

from assignadd_core.analysis import fourier
from assignadd_core.checkpoint import load_tl_state_dict, reference_weights_path
from assignadd_core.config import RunConfig
from assignadd_core.model import AssignAddTransformer

N = 59


def neuron(k, amp_n, alpha, amp_m, beta, const, k_m=None, noise=0.0, seed=0):
    x = 2 * np.pi * np.arange(N) / N
    rng = np.random.default_rng(seed)
    grid = const + amp_n * np.cos(k * x + alpha)[:, None] + amp_m * np.cos((k_m or k) * x + beta)[None, :]
    return grid + noise * rng.standard_normal((N, N))


def test_power_of_a_pure_frequency_sits_at_that_frequency():
    x = 2 * np.pi * np.arange(N) / N
    values = np.stack([np.cos(7 * x + 0.3), 2 * np.sin(7 * x)], 1)  # two "embedding dimensions"
    fractions = fourier.power_fractions(values, axis=0)
    assert fractions.shape == (fourier.n_frequencies(N),)
    assert fractions[7 - 1] == pytest.approx(1.0)
    assert fourier.key_frequencies(fractions) == [7]


def test_key_frequencies_finds_several_and_ignores_noise():
    x = 2 * np.pi * np.arange(N) / N
    rng = np.random.default_rng(1)
    values = sum(np.outer(np.cos(k * x), rng.standard_normal(16)) for k in (3, 11, 20))
    values = values + 0.01 * rng.standard_normal(values.shape)
    assert fourier.key_frequencies(fourier.power_fractions(values)) == [3, 11, 20]


def test_fit_recovers_frequency_phases_and_amplitudes():
    grid = neuron(k=13, amp_n=2.0, alpha=0.7, amp_m=1.5, beta=-2.1, const=0.4)
    fit = fourier.fit_two_operand_frequency(grid)
    assert fit.k == 13
    assert fit.r2 == pytest.approx(1.0)
    assert fit.amp_n == pytest.approx(2.0) and fit.amp_m == pytest.approx(1.5)
    assert fit.phase_n == pytest.approx(0.7) and fit.phase_m == pytest.approx(-2.1)
    assert fit.const == pytest.approx(0.4)
    rebuilt = fourier.fit_map(int(fit.k), fit.amp_n, fit.phase_n, fit.amp_m, fit.phase_m, fit.const, N)
    assert np.allclose(rebuilt, grid)


def test_fit_with_noise_and_on_many_neurons_at_once():
    maps = np.stack([neuron(k, 1.0, 0.1 * k, 1.0, -0.2 * k, 0.0, noise=0.1, seed=k) for k in (1, 5, 29)])
    fit = fourier.fit_two_operand_frequency(maps)
    assert list(fit.k) == [1, 5, 29]
    assert np.all(fit.r2 > 0.9) and np.all(fit.r2 < 1.0)
    assert np.allclose(fit.phase_n, [0.1, 0.5, 2.9], atol=0.05)
    assert np.allclose(fit.curve(1, N), fourier.fit_map(5, fit.amp_n[1], fit.phase_n[1], fit.amp_m[1],
                                                          fit.phase_m[1], fit.const[1], N))


def test_two_frequencies_or_an_interaction_are_not_one_frequency():
    mixed = neuron(k=4, amp_n=1.0, alpha=0.0, amp_m=1.0, beta=0.0, const=0.0, k_m=9)  # k on n, k' on m
    assert fourier.fit_two_operand_frequency(mixed).r2 == pytest.approx(0.5)
    x = 2 * np.pi * np.arange(N) / N
    product = np.cos(3 * x)[:, None] * np.cos(3 * x)[None, :]  # cos(kn)cos(km): no additive part at all
    assert fourier.fit_two_operand_frequency(product).r2 == pytest.approx(0.0, abs=1e-12)


def hand_built_model(k=3, modulus=13, phases=(0.0, 1.0, 2.0, -1.5)):
    """W_E numbers = (cos, sin)(2πkn/N), OV2 = identity, neuron j reads cos(2πkn/N + φ_j)."""
    config = RunConfig().replace(modulus=modulus, n_vars=4, n_left_only=1, n_right_only=1, d_model=8, d_mlp=4)
    model = AssignAddTransformer(config)
    x = 2 * math.pi * k * torch.arange(modulus) / modulus
    with torch.no_grad():
        model.embed.W_E[:modulus] = 0
        model.embed.W_E[:modulus, 0], model.embed.W_E[:modulus, 1] = torch.cos(x), torch.sin(x)
        model.blocks[1].attn.W_V[0] = torch.eye(8)
        model.blocks[1].attn.W_O[0] = torch.eye(8)
        w_in = torch.zeros(8, 4)
        for j, phi in enumerate(phases):
            w_in[0, j], w_in[1, j] = math.cos(phi), -math.sin(phi)
        model.blocks[1].mlp.W_in.copy_(w_in)
    return model, phases


def test_model_read_outs_on_a_hand_built_fourier_model():
    model, phases = hand_built_model()
    maps = fourier.neuron_preactivations(model, source="ov")
    assert maps.shape == (4, 13, 13)
    fit = fourier.fit_two_operand_frequency(maps)
    assert list(fit.k) == [3] * 4
    assert np.allclose(fit.r2, 1.0)
    assert np.allclose(np.angle(np.exp(1j * (fit.phase_n - np.array(phases)))), 0, atol=1e-6)
    assert fourier.key_frequencies(fourier.embedding_power(model)) == [3]
    seq_maps = fourier.neuron_preactivations(model, source="sequences")
    assert seq_maps.shape == (4, 13, 13) and np.isfinite(seq_maps).all()
    with pytest.raises(ValueError, match="source"):
        fourier.neuron_preactivations(model, source="bogus")


def test_active_neurons_and_summary_keys():
    importance = np.array([10.0, 0.2, 0.6, 5.0])
    assert list(fourier.active_neurons(importance, rel=0.05)) == [True, False, True, True]
    model, _ = hand_built_model()
    summary = fourier.fourier_summary(model, source="ov")
    assert summary["embedding_key_frequencies"] == [3]
    assert 0.0 <= summary["frac_active_above"] <= 1.0


@pytest.mark.paper
@pytest.mark.skipif(reference_weights_path() is None, reason="the authors' reference weights are absent")
def test_authors_model_has_key_frequencies_and_single_frequency_neurons():
    model = load_tl_state_dict(reference_weights_path())
    summary = fourier.fourier_summary(model)
    assert 3 <= len(summary["embedding_key_frequencies"]) <= 15
    assert summary["embedding_key_share"] > 0.8
    assert set(summary["embedding_key_frequencies"]) == set(summary["output_key_frequencies"])
    assert summary["best_r2"] > 0.9
    assert summary["frac_active_above"] > 0.5
