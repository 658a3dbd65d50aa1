"""Fourier features of the addition module (claim C7), over the group Z/N of the operand values.

Everything goes through numpy's FFT: for a function on Z/N the discrete Fourier transform is the
projection on the basis cos(2πkn/N), sin(2πkn/N), k = 0..(N-1)/2, so "power at frequency k" and
"best single-frequency fit" are read off the transform (Parseval), with no hand-made basis.

Neuron fit (claim C7): a layer-2 MLP neuron's pre-activation P[n, m] over the operand values is fit by

    c + A cos(2πkn/N + α) + A' cos(2πkm/N + β)

for each k; on the full N × N grid these terms are orthogonal, so the least-squares fit for a given
k is the projection on the Fourier coefficients (0, 0), (±k, 0) and (0, ±k) of the 2-D transform,
and its explained variance is their share of the non-constant power. The best k maximises it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..measure import roles
from ..core.data import LITERAL, build_sequences
from ..measure.measures import operand_pairs, two_operand_input
from ..core.model import AssignAddTransformer


def n_frequencies(modulus: int) -> int:
    """Non-constant frequencies 1..K of a real function on Z/N (K = (N-1)//2)."""
    return (modulus - 1) // 2


def frequency_power(values: np.ndarray, axis: int = 0) -> np.ndarray:
    """Power of each frequency 0..K of `values` along `axis` (a Z/N axis), summed over the other axes.

    Frequencies k and N-k are one real frequency: rfft keeps k only, so k >= 1 is doubled
    (for even N the Nyquist term is not doubled).
    """
    values = np.asarray(values, dtype=np.float64)
    n = values.shape[axis]
    spectrum = np.abs(np.fft.rfft(values, axis=axis)) ** 2
    spectrum = np.moveaxis(spectrum, axis, 0).reshape(spectrum.shape[axis], -1).sum(1)
    weights = np.full(spectrum.shape[0], 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0
    return spectrum * weights


def power_fractions(values: np.ndarray, axis: int = 0) -> np.ndarray:
    """Share of the non-constant power at each frequency 1..K (index 0 of the result is frequency 1)."""
    power = frequency_power(values, axis)[1:]
    return power / power.sum()


def key_frequencies(fractions: np.ndarray, factor: float = 1.5) -> list[int]:
    """Frequencies (1-based) whose share exceeds `factor` times the uniform share 1/K."""
    fractions = np.asarray(fractions)
    return [int(k) + 1 for k in np.flatnonzero(fractions > factor / len(fractions))]


# ----------------------------------------------------------------------------- weights
def embedding_power(model: AssignAddTransformer) -> np.ndarray:
    """Power fractions of the number rows of W_E (a function Z/N -> R^d), frequencies 1..K."""
    n = model.config.task.modulus
    return power_fractions(model.W_E[:n].detach().cpu().numpy(), axis=0)


def neuron_logit_effects(model: AssignAddTransformer) -> np.ndarray:
    """W_out W_U [d_mlp, N]: what each neuron of the addition MLP adds to the logits per unit of output."""
    return (roles.addition_mlp(model).W_out @ model.W_U).detach().cpu().numpy()


def output_power(model: AssignAddTransformer) -> np.ndarray:
    """Power fractions of W_out W_U along the output class (each neuron's logit effect is a function of Z/N)."""
    return power_fractions(neuron_logit_effects(model), axis=1)


# ----------------------------------------------------------------------------- neuron pre-activations
@torch.no_grad()
def neuron_preactivations(model: AssignAddTransformer, source: str = "sequences", seed: int = 0) -> np.ndarray:
    """Layer-2 MLP pre-activations at `=` for every operand pair: [d_mlp, N (lhs n), N (rhs m)].

    source="sequences": the 0-var sequences `+ n m =` (one random prefix of distractors each, drawn
    from `seed`), read at the addition MLP's hook `hook_pre` (`blocks.1.mlp.hook_pre` in the paper's shape);
    source="ov": the weights-only input (W_E[n] + W_E[m]) OV2 W_in, i.e. what layer-2 attention
    would deliver with equal weight on two clean operand embeddings (no prefix, no `=` token).
    """
    n = model.config.task.modulus
    lhs, rhs = operand_pairs(n).unbind(1)
    if source == "sequences":
        lit = torch.full_like(lhs, LITERAL)
        batch = build_sequences(model.config.task, lhs, rhs, lit, lit, torch.Generator().manual_seed(seed))
        was_training = model.training
        model.eval()
        pre_hook = roles.hook(model, "pre", roles.MLP)
        _, cache = model.run_with_cache(batch.tokens.to(model.W_E.device), names_filter=pre_hook)
        model.train(was_training)
        pre = cache[pre_hook][:, -1]
    elif source == "ov":
        pre = two_operand_input(model, lhs, rhs) @ roles.addition_mlp(model).W_in
    else:
        raise ValueError(f"source must be 'sequences' or 'ov', got {source!r}")
    return pre.T.reshape(-1, n, n).double().cpu().numpy()


# ----------------------------------------------------------------------------- the two-operand fit
@dataclass
class NeuronFit:
    """Best single-frequency fit per neuron (arrays over neurons)."""

    k: np.ndarray  # best frequency, 1..K
    r2: np.ndarray  # explained variance of the best fit
    r2_all: np.ndarray  # [neurons, K]: explained variance for every k (index k - 1)
    const: np.ndarray
    amp_n: np.ndarray  # A
    phase_n: np.ndarray  # α
    amp_m: np.ndarray  # A'
    phase_m: np.ndarray  # β

    def curve(self, index: int, modulus: int) -> np.ndarray:
        """The fitted N × N map of one neuron."""
        return fit_map(int(self.k[index]), self.amp_n[index], self.phase_n[index], self.amp_m[index],
                       self.phase_m[index], self.const[index], modulus)


def fit_two_operand_frequency(maps: np.ndarray) -> NeuronFit:
    """Fit c + A cos(2πkn/N + α) + A' cos(2πkm/N + β) to maps [..., N, N] (n along -2, m along -1)."""
    maps = np.asarray(maps, dtype=np.float64)
    squeeze = maps.ndim == 2
    maps = maps.reshape(-1, *maps.shape[-2:])
    n = maps.shape[-1]
    if maps.shape[-2] != n:
        raise ValueError(f"maps must be N × N, got {maps.shape[-2:]}")
    coef = np.fft.fft2(maps)  # P[n, m] = (1/N²) Σ F[u, v] exp(2πi(un + vm)/N)
    power = np.abs(coef) ** 2
    total = power.sum((1, 2)) - power[:, 0, 0]  # N² × (variance about the mean) × N², Parseval
    ks = np.arange(1, n_frequencies(n) + 1)
    explained = 2 * (power[:, ks, 0] + power[:, 0, ks])  # ±k on each axis
    r2_all = explained / np.where(total > 0, total, np.inf)[:, None]
    best = r2_all.argmax(1)
    k = ks[best]
    rows = np.arange(maps.shape[0])
    fn, fm = coef[rows, k, 0], coef[rows, 0, k]
    fit = NeuronFit(k=k, r2=r2_all[rows, best], r2_all=r2_all, const=coef[:, 0, 0].real / n**2,
                    amp_n=2 * np.abs(fn) / n**2, phase_n=np.angle(fn),
                    amp_m=2 * np.abs(fm) / n**2, phase_m=np.angle(fm))
    if squeeze:
        fit = NeuronFit(**{name: value[0] for name, value in vars(fit).items()})
    return fit


def fit_map(k: int, amp_n: float, phase_n: float, amp_m: float, phase_m: float, const: float,
            modulus: int) -> np.ndarray:
    """c + A cos(2πkn/N + α) + A' cos(2πkm/N + β) on the N × N grid."""
    x = 2 * np.pi * k * np.arange(modulus) / modulus
    return const + amp_n * np.cos(x + phase_n)[:, None] + amp_m * np.cos(x + phase_m)[None, :]


# ----------------------------------------------------------------------------- which neurons matter
def neuron_importance(model: AssignAddTransformer, maps: np.ndarray) -> np.ndarray:
    """How much each neuron moves the logits over the grid: std of its ReLU output × ‖row of W_out W_U‖."""
    return np.maximum(maps, 0).std((1, 2)) * np.linalg.norm(neuron_logit_effects(model), axis=1)


def active_neurons(importance: np.ndarray, rel: float = 0.05) -> np.ndarray:
    """Neurons whose importance is at least `rel` of the largest one (weight decay leaves the rest ~dead)."""
    return importance >= rel * importance.max()


def fourier_summary(model: AssignAddTransformer, source: str = "sequences", threshold: float = 0.7,
                    rel: float = 0.05, maps: np.ndarray | None = None) -> dict:
    """The C7 numbers: key frequencies of W_E and W_out W_U, and how well single frequencies explain
    the active neurons (`maps`: precomputed `neuron_preactivations(model, source)`)."""
    maps = neuron_preactivations(model, source) if maps is None else maps
    fit = fit_two_operand_frequency(maps)
    importance = neuron_importance(model, maps)
    active = active_neurons(importance, rel)
    emb, out = embedding_power(model), output_power(model)
    r2a = fit.r2[active]
    return {
        "source": source,
        "embedding_key_frequencies": key_frequencies(emb),
        "output_key_frequencies": key_frequencies(out),
        "embedding_key_share": float(emb[np.array(key_frequencies(emb), dtype=int) - 1].sum()),
        "output_key_share": float(out[np.array(key_frequencies(out), dtype=int) - 1].sum()),
        "n_neurons": int(len(fit.r2)),
        "n_active": int(active.sum()),
        "frac_active_above": float((r2a > threshold).mean()),
        "frac_active_above_0.9": float((r2a > 0.9).mean()),
        "median_r2_active": float(np.median(r2a)),
        "best_r2": float(fit.r2.max()),
        "best_neuron": int(np.argmax(np.where(active, fit.r2, -1))),
        "importance_weighted_above": float((importance * (fit.r2 > threshold)).sum() / importance.sum()),
        "neuron_frequencies_active": sorted(set(int(k) for k in fit.k[active])),
    }
