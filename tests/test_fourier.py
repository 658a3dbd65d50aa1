"""Fourier tools on synthetic functions of Z/N with known frequencies and phases, on a hand-built
model whose neurons are single-frequency by construction, on the exact solver of `handbuilt`, and a
summary whose every number (active neurons, fractions above threshold, key frequencies) is known."""
import math

import numpy as np
import pytest
import torch

from assignadd_core.analysis import fourier
from assignadd_core.analysis.authors_format import load_tl_state_dict, reference_weights_path
from assignadd_core.core.config import RunConfig
from assignadd_core.core.model import AssignAddTransformer

import handbuilt

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


def test_preactivation_maps_from_weights_are_the_sum_of_both_operands():
    """source="ov": neuron j's map is exactly cos(2πkn/N + φ_j) + cos(2πkm/N + φ_j), one term per operand."""
    k, modulus = 3, 13
    model, phases = hand_built_model(k, modulus)
    maps = fourier.neuron_preactivations(model, source="ov")
    x = 2 * np.pi * k * np.arange(modulus) / modulus
    for j, phi in enumerate(phases):
        expected = np.cos(x + phi)[:, None] + np.cos(x + phi)[None, :]
        assert np.allclose(maps[j], expected, atol=1e-5)
    fit = fourier.fit_two_operand_frequency(maps)
    assert np.allclose(fit.amp_n, 1.0) and np.allclose(fit.amp_m, 1.0)
    assert np.allclose(np.angle(np.exp(1j * (fit.phase_m - np.array(phases)))), 0, atol=1e-6)


def test_preactivation_maps_from_sequences_on_the_exact_solver():
    """source="sequences" runs `+ n m =` (with random prefixes) through the hand-built solver: its layer-2
    head puts 1/2 on each literal, so lookup neuron {a, b} reads (w(n) + w(m)) / 2 - 0.75, w = the
    indicator of {a, b}; and with layer 2 pointed at position 13 only, every map depends on n alone
    (n along axis 1), at 14 only on m."""
    model = handbuilt.exact_model()
    n = model.config.task.modulus
    maps = fourier.neuron_preactivations(model, source="sequences", seed=1)
    assert maps.shape == (model.config.model.d_mlp, n, n)
    w_in = model.blocks[1].mlp.W_in.detach()[handbuilt.OPER].double().numpy()  # [N, d_mlp]: w_j(n)
    expected = 0.5 * (w_in.T[:, :, None] + w_in.T[:, None, :]) + model.blocks[1].mlp.W_in.detach()[handbuilt.EQ].double().numpy()[:, None, None]
    assert np.allclose(maps, expected, atol=1e-5)
    for position, axis in ((model.config.task.seq_len - 3, 1), (model.config.task.seq_len - 2, 2)):
        attn = model.blocks[1].attn
        with torch.no_grad():
            attn.W_K[0].zero_()
            attn.W_K[0][handbuilt.POS[position], handbuilt.EQ] = handbuilt.C  # `=` looks at one position
            model.blocks[1].mlp.W_in.zero_()
            model.blocks[1].mlp.W_in[handbuilt.OPER, 0] = torch.arange(n, dtype=torch.float32)  # reads the value
        maps = fourier.neuron_preactivations(model, source="sequences", seed=1)
        grid = np.arange(n)[:, None] if axis == 1 else np.arange(n)[None, :]
        assert np.allclose(maps[0], np.broadcast_to(grid, (n, n)), atol=1e-5)


def test_frequency_power_obeys_parseval_for_odd_and_even_n():
    """Total power over frequencies 0..K is N Σ values² (the N-k half folded onto k, Nyquist once)."""
    rng = np.random.default_rng(3)
    for n in (13, 12):
        values = rng.standard_normal((n, 5))
        power = fourier.frequency_power(values, axis=0)
        assert power.shape == (n // 2 + 1,)
        assert power.sum() == pytest.approx(n * (values ** 2).sum())
        assert fourier.frequency_power(values.T, axis=1) == pytest.approx(power)
    x = 2 * np.pi * np.arange(12) / 12
    nyquist = fourier.frequency_power(np.cos(6 * x), axis=0)
    assert nyquist[6] == pytest.approx(12 * 12) and nyquist[:6] == pytest.approx(np.zeros(6), abs=1e-9)


def test_key_frequencies_threshold_is_factor_times_uniform():
    k = 10  # uniform share 0.1, threshold 1.5 * 0.1 = 0.15
    fractions = np.full(k, 0.7 / 8)
    fractions[2], fractions[6] = 0.16, 0.14
    assert fourier.key_frequencies(fractions) == [3]
    assert fourier.key_frequencies(fractions, factor=1.2) == [3, 7]


def test_active_neurons_relative_to_the_largest():
    importance = np.array([10.0, 0.2, 0.6, 5.0, 0.5])
    assert list(fourier.active_neurons(importance, rel=0.05)) == [True, False, True, True, True]  # 0.5 is "at least"
    assert list(fourier.active_neurons(importance, rel=0.55)) == [True, False, False, False, False]


# ---------------------------------------------------------------------------- a model with a known summary
M = 13  # modulus of the summary model; K = 6 frequencies


def wave(k, axis, amp=1.0, phase=0.0):
    """amp cos(2πk·/M + phase) along axis 0 (n) or 1 (m) of the M × M grid."""
    x = amp * np.cos(2 * np.pi * k * np.arange(M) / M + phase)
    return x[:, None] * np.ones((1, M)) if axis == 0 else np.ones((M, 1)) * x[None, :]


def summary_model():
    """d_model = 8, d_mlp = 6. W_E: frequency 3 (cos, sin; power M) plus 0.5 cos at 4 (power M/8).
    Neuron j's logit effect (row j of W_out W_U) is out_amp[j] cos(2π out_k[j] c/M); neuron 3 writes
    nothing, neuron 4 writes into a direction W_U does not read. The maps (passed in):
      0: k=3 on both operands + 0.3 cos(k=1) on n     r2 = 1/1.045      active
      1: k=5 on both + 0.5 cos(k=2) on m               r2 = 1/1.125      active
      2: cos(k=2) on n + 0.8 cos(k=4) on m             r2 = 1/1.64       active (best k = 2)
      3: k=6, pure                                     r2 = 1            W_out row 0: inactive
      4: k=1, pure                                     r2 = 1            W_out W_U row 0: inactive
      5: -3 + k=4 on both (never > 0)                  r2 = 1            ReLU output 0: inactive
    """
    config = RunConfig().replace(modulus=M, n_vars=4, n_left_only=1, n_right_only=1, d_model=8, d_mlp=6)
    model = AssignAddTransformer(config)
    c = np.arange(M)
    out_k, out_amp = [3, 5, 2, 6, 1, 4], [1.0, 1.0, 1.0, 0.0, 1.0, 0.5]
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        x = 2 * math.pi * torch.arange(M) / M
        model.embed.W_E[:M, 0], model.embed.W_E[:M, 1] = torch.cos(3 * x), torch.sin(3 * x)
        model.embed.W_E[:M, 2] = 0.5 * torch.cos(4 * x)
        for j in range(6):
            model.blocks[1].mlp.W_out[j, j] = 2.0 if j != 3 else 0.0
            if j != 4:  # W_U row 4 stays 0: neuron 4 writes where nothing reads
                model.unembed.W_U[j] = torch.tensor(out_amp[j] * np.cos(2 * np.pi * out_k[j] * c / M))
    maps = np.stack([
        wave(3, 0) + wave(3, 1, phase=1.0) + wave(1, 0, 0.3),
        wave(5, 0) + wave(5, 1) + wave(2, 1, 0.5),
        wave(2, 0) + wave(4, 1, 0.8),
        wave(6, 0) + wave(6, 1),
        wave(1, 0) + wave(1, 1),
        -3 + wave(4, 0) + wave(4, 1),
    ])
    return model, maps


def test_output_power_is_the_spectrum_of_each_neurons_logit_effect():
    model, _ = summary_model()
    out = fourier.output_power(model)
    assert out.shape == (fourier.n_frequencies(M),)
    # amplitudes (×2 from W_out) 2, 2, 2, 0, 0, 1 at k = 3, 5, 2, -, -, 4: powers 4 : 4 : 4 : 1
    expected = np.zeros(6)
    expected[[2, 4, 1]], expected[3] = 4 / 13, 1 / 13
    assert out == pytest.approx(expected, abs=1e-6)


def test_neuron_importance_is_relu_spread_times_logit_effect():
    """Maps +2 on the first 6 rows of n, -1 elsewhere: the ReLU output is 2 on a share p = 6/13 of the
    grid, std 2 sqrt(p(1-p)); times ‖row of W_out W_U‖ (not of W_out alone)."""
    model, _ = summary_model()
    maps = np.where(np.arange(M)[:, None] < 6, 2.0, -1.0) * np.ones((6, M, M))
    importance = fourier.neuron_importance(model, maps)
    spread = 2 * math.sqrt(6 / 13 * 7 / 13)
    effect = 2 * np.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.5]) * math.sqrt(M / 2)  # ‖a cos(2πkc/M)‖ = a sqrt(M/2)
    assert importance == pytest.approx(spread * effect, rel=1e-5)
    assert fourier.neuron_importance(model, -np.abs(maps)) == pytest.approx(np.zeros(6))  # ReLU: never on


def test_fourier_summary_of_a_model_with_known_answers():
    model, maps = summary_model()
    summary = fourier.fourier_summary(model, maps=maps, source="ov")
    importance = fourier.neuron_importance(model, maps)
    assert summary["source"] == "ov"
    assert summary["embedding_key_frequencies"] == [3]
    assert summary["embedding_key_share"] == pytest.approx(1 / 1.125)
    assert summary["output_key_frequencies"] == [2, 3, 5]
    assert summary["output_key_share"] == pytest.approx(12 / 13)
    assert summary["n_neurons"] == 6 and summary["n_active"] == 3
    assert summary["frac_active_above"] == pytest.approx(2 / 3)
    assert summary["frac_active_above_0.9"] == pytest.approx(1 / 3)
    assert summary["median_r2_active"] == pytest.approx(1 / 1.125)
    assert summary["best_r2"] == pytest.approx(1.0)
    assert summary["best_neuron"] == 0
    assert summary["importance_weighted_above"] == pytest.approx((importance[0] + importance[1]) / importance[:3].sum())
    assert importance[3:] == pytest.approx(np.zeros(3))
    assert summary["neuron_frequencies_active"] == [2, 3, 5]
    stricter = fourier.fourier_summary(model, maps=maps, threshold=0.9)
    assert stricter["frac_active_above"] == pytest.approx(1 / 3)
    assert fourier.fourier_summary(model, maps=maps, rel=0.9)["n_active"] == 2  # neuron 2's importance is lower
    fit = fourier.fit_two_operand_frequency(maps)
    assert fit.r2 == pytest.approx([1 / 1.045, 1 / 1.125, 1 / 1.64, 1, 1, 1])
    assert list(fit.k) == [3, 5, 2, 6, 1, 4]


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


def test_fourier_summary_reads_the_sequences_by_default():
    model = handbuilt.exact_model()
    summary = fourier.fourier_summary(model)
    given = fourier.fourier_summary(model, source="sequences", maps=fourier.neuron_preactivations(model, "sequences"))
    assert summary["source"] == "sequences" and summary == given


def test_maps_that_are_not_square_are_refused_with_their_shape():
    with pytest.raises(ValueError, match=r"^maps must be N × N, got \(5, 6\)$"):
        fourier.fit_two_operand_frequency(np.zeros((3, 5, 6)))


def test_parseval_also_for_n_that_is_even_but_not_a_multiple_of_3_and_odd_but_one():
    rng = np.random.default_rng(4)
    for n in (10, 9):
        values = rng.standard_normal((n, 3))
        assert fourier.frequency_power(values).sum() == pytest.approx(n * (values ** 2).sum())  # axis 0 by default


def test_active_neurons_default_is_5_percent_of_the_largest():
    assert list(fourier.active_neurons(np.array([10.0, 0.5, 0.49]))) == [True, True, False]


def test_a_neuron_with_little_variance_is_still_explained():
    """R² is a ratio: a pure frequency of amplitude 1e-4 (its summed power N⁴ × variance is below 1) is
    explained as fully."""
    fit = fourier.fit_two_operand_frequency(1e-4 * neuron(5, 1.0, 0.3, 0.5, -1.0, 0.2))
    assert fit.r2 == pytest.approx(1.0) and fit.k == 5


def test_fourier_summary_passes_the_source_on():
    model = handbuilt.exact_model()
    assert fourier.fourier_summary(model, source="ov") == fourier.fourier_summary(
        model, source="ov", maps=fourier.neuron_preactivations(model, "ov"))


@pytest.mark.parametrize("n", [13, 12])
def test_the_fit_scores_each_frequency_1_to_k_once(n):
    """r2_all has one column per frequency 1..K; for even N the Nyquist frequency N/2 is not among them."""
    x = 2 * np.pi * np.arange(n) / n
    fit = fourier.fit_two_operand_frequency(np.cos(2 * x)[:, None] + np.cos(3 * x)[None, :] + 0.0 * np.ones((n, n)))
    assert fit.r2_all.shape == ((n - 1) // 2,)
    assert fit.r2_all.sum() == pytest.approx(1.0)  # all the variance sits at frequencies 2 and 3
