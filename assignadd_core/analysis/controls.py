"""Controls a reviewer asks for: measurements that could come out against a claim.

* C2 `swap_heldout_accuracy`: held-out pairs whose swap (n2, n1) is held out too, where looking up the
  swapped training pair cannot help.
* C4: `interventions.ablation_table(..., wheres=("values", "eq", "all"), distractor_only=True)` mean-ablates
  layer 1's output at the prefix value positions only (the previous-token copy) or at `=` only (its copy of the
  query operands), not the whole head.
* C5 `relabel_patch`: swap the layer-1 outputs (the variable labels) of the queried variable's value token
  and a distractor's: if layer 2 matches labels, attention and answer follow the label, not the position.
* C6 `mlp_input_cosines`: literal vs variable twins against harder baselines (same sum, one shared
  operand) and a literal-vs-literal ceiling.
* C7 `fourier_null`: the median single-frequency R² of the active neurons under null models.
* C10 `whitened_contrast` (its interval: `stats.bootstrap_mean_interval`): a diagonal contrast that an isotropic direction
  scores 0 on, and a percentile bootstrap interval over checkpoints.
"""
from __future__ import annotations

import numpy as np
import torch

from ..measure import roles
from ..core.data import Batch, exact_sets, make_split
from ..core.evaluation import batch_correct
from ..core.model import AssignAddTransformer, initial_model
from .interventions import copy_out_hook, distractor_with_other_value, lookup_pattern_hook, predict
from .addition import cosine_matrix, last_position, mlp_input_hook, twin_batches
from .fourier import active_neurons, fit_two_operand_frequency, neuron_importance, neuron_preactivations


# ---------------------------------------------------------------------------- C2
@torch.no_grad()
def swap_heldout_accuracy(model: AssignAddTransformer) -> dict[str, float]:
    """0-var held-out exact accuracy, split by whether the swapped pair (n2, n1) is a training pair."""
    task = model.config.task
    batch = exact_sets(task)["0var_heldout"]
    correct = batch_correct(model, batch).cpu()
    swap_in_training = make_split(task).train_mask[batch.rhs_val, batch.lhs_val]
    out = {"all": float(correct.float().mean()), "n_all": int(len(batch))}
    for name, rows in (("swap_heldout", ~swap_in_training), ("swap_in_training", swap_in_training)):
        out[name] = float(correct[rows].float().mean()) if bool(rows.any()) else float("nan")
        out[f"n_{name}"] = int(rows.sum())
    return out


# ---------------------------------------------------------------------------- C5
@torch.no_grad()
def relabel_patch(model: AssignAddTransformer, batch: Batch, operand: str = "lhs", seed: int = 0) -> dict[str, float]:
    """Swap layer 1's outputs at the operand's value position and at a distractor's value position.

    The value tokens stay where they are; only what layer 1 wrote on them (mostly the copy of the
    preceding variable) trades places. A layer 2 that matches the queried variable's label then attends
    to the distractor's position and answers with the distractor's value. Only sequences whose operand
    is a variable and that have a distractor with another value count.
    Returns the shares where layer-2 attention from `=` puts more weight on the relabelled position than on
    the original one (`attention_follows_label`), where the answer is (distractor value + other) mod N
    (`answer_follows_label`) and where it is still the original answer (`answer_original`).
    """
    task = model.config.task
    value, src, var, other = ((batch.lhs_val, batch.lhs_src, batch.lhs_var, batch.rhs_val) if operand == "lhs" else
                              (batch.rhs_val, batch.rhs_src, batch.rhs_var, batch.lhs_val))
    target, target_value, keep = distractor_with_other_value(batch, task, value, seed)
    keep &= var >= 0
    if not bool(keep.any()):
        return {"attention_follows_label": float("nan"), "answer_follows_label": float("nan"),
                "answer_original": float("nan"), "n": 0}
    batch, src, target, target_value, other = batch[keep], src[keep], target[keep], target_value[keep], other[keep]
    rows = torch.arange(len(batch))
    device = model.W_E.device
    head = roles.head(model, roles.LOOKUP)
    seen = {}

    def swap(act, hook):  # noqa: ARG001
        act = act.clone()
        a, b = act[rows, src.to(device)].clone(), act[rows, target.to(device)].clone()
        act[rows, src.to(device)], act[rows, target.to(device)] = b, a
        return act

    def keep_pattern(pattern, hook):  # noqa: ARG001
        seen["pattern"] = pattern[:, head, -1].cpu()
        return pattern

    pred = predict(model, batch.tokens, [(copy_out_hook(model), swap), (lookup_pattern_hook(model), keep_pattern)])
    attn = seen["pattern"]
    follows_attention = attn[rows, target] > attn[rows, src]
    return {"attention_follows_label": float(follows_attention.float().mean()),
            "answer_follows_label": float((pred == (target_value + other) % task.modulus).float().mean()),
            "answer_original": float((pred == batch.answers).float().mean()), "n": int(len(batch))}


# ---------------------------------------------------------------------------- C6
def pair_relation_groups(pairs: torch.Tensor, modulus: int) -> dict[str, torch.Tensor]:
    """Bool [P, P] masks between operand pairs: matched (same pair), same sum (other pair), one shared operand
    (same n1 or same n2, not both, other sum) and unrelated (the rest)."""
    n1, n2 = pairs[:, 0], pairs[:, 1]
    same = (n1[:, None] == n1[None, :]) & (n2[:, None] == n2[None, :])
    same_sum = (((n1 + n2)[:, None] - (n1 + n2)[None, :]) % modulus == 0) & ~same
    shared = ((n1[:, None] == n1[None, :]) ^ (n2[:, None] == n2[None, :])) & ~same_sum
    return {"matched": same, "same sum": same_sum, "one shared operand": shared,
            "unrelated": ~(same | same_sum | shared)}


@torch.no_grad()
def mlp_input_cosines(model: AssignAddTransformer, kind: str = "2var", seed: int = 0) -> dict[str, float]:
    """Mean cosine of the layer-2 MLP input at `=` between a literal sequence and variable sequences of each
    relation to its pair, plus the ceiling: the same literal query behind two different prefixes."""
    task = model.config.task
    literal, variable = twin_batches(task, kind, seed)
    other_literal, _ = twin_batches(task, kind, seed + 1)
    hook = mlp_input_hook(model)
    lit = last_position(model, literal.tokens, (hook,))[hook]
    var = last_position(model, variable.tokens, (hook,))[hook]
    lit2 = last_position(model, other_literal.tokens, (hook,))[hook]
    cos = cosine_matrix(lit, var)
    pairs = torch.stack([literal.lhs_val, literal.rhs_val], 1)
    out = {name: float(cos[mask].mean()) for name, mask in pair_relation_groups(pairs, task.modulus).items()}
    out["ceiling (literal vs literal)"] = float(torch.nn.functional.cosine_similarity(lit, lit2, dim=-1).mean())
    return out


# ---------------------------------------------------------------------------- C7
def frequencies_for_share(fractions: np.ndarray, share: float = 0.7) -> list[int]:
    """The fewest frequencies (1-based, by decreasing power) that hold at least `share` of the power."""
    order = np.argsort(fractions)[::-1]
    count = int(np.searchsorted(np.cumsum(fractions[order]), share * fractions.sum()) + 1)
    return sorted(int(k) + 1 for k in order[:count])


def median_active_r2(model: AssignAddTransformer, maps: np.ndarray, rel: float = 0.05) -> float:
    active = active_neurons(neuron_importance(model, maps), rel)
    return float(np.median(fit_two_operand_frequency(maps).r2[active]))


@torch.no_grad()
def fourier_null(model: AssignAddTransformer, n_untrained: int = 10, n_shuffles: int = 50, seed: int = 0,
                 source: str = "sequences") -> dict:
    """Median R² of the active neurons: for the model, for untrained networks of the same config, and for the
    model's own maps with the operand values shuffled (same permutation for every neuron, which keeps each
    neuron's values but destroys any structure in n and m)."""
    maps = neuron_preactivations(model, source)
    untrained = []
    for i in range(n_untrained):
        fresh = initial_model(model.config.replace(seed=10_000 + seed * 100 + i)).eval()
        untrained.append(median_active_r2(fresh, neuron_preactivations(fresh, source)))
    rng = np.random.default_rng(seed)
    n = maps.shape[-1]
    shuffled = []
    for _ in range(n_shuffles):
        pn, pm = rng.permutation(n), rng.permutation(n)
        shuffled.append(median_active_r2(model, maps[:, pn][:, :, pm]))
    null = np.array(untrained + shuffled)
    return {"median_r2": median_active_r2(model, maps), "untrained": untrained, "shuffled": shuffled,
            "null_q99": float(np.quantile(null, 0.99)), "null_max": float(null.max())}


# ---------------------------------------------------------------------------- C10
def whitened_contrast(matrix: torch.Tensor, basis: torch.Tensor) -> float:
    """Diagonal contrast of a d × d direction seen on the variable copies, with both biases removed: the
    multiple of the identity (an isotropic direction) is subtracted, and the copies are whitened
    (B = (U Uᵀ)^(-1/2) U) so their overlaps do not make any direction look diagonal. An isotropic direction
    scores exactly 0, and so does a random one on average."""
    m = matrix.double()
    d = m.shape[0]
    u = basis.double().to(m.device)
    evals, evecs = torch.linalg.eigh(u @ u.T)
    white = evecs @ torch.diag(evals.clamp_min(1e-12).rsqrt()) @ evecs.T @ u
    seen = white @ m @ white.T
    traceless = seen - torch.trace(m) / d * torch.eye(seen.shape[0], dtype=m.dtype, device=m.device)  # B I Bᵀ = I
    n = seen.shape[0]
    off = ~torch.eye(n, dtype=torch.bool, device=m.device)
    rms = seen.pow(2).mean().sqrt()  # the scale of the direction as seen, identity part included
    return float((traceless.diagonal().mean() - traceless[off].mean()) / rms) if rms > 0 else 0.0

