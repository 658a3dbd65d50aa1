"""Progress measures (book/protocol.md, "Progress measures"): cheap mechanistic read-outs that make the training phases visible.

1–3 read the weights only; 4–7 read the activations of a fixed measurement batch (the first
rows of every evaluation pool). Each returns a fraction in [0, 1] (NaN where undefined).
"""
from __future__ import annotations

import functools

import torch

from .config import TaskConfig
from .data import Batch, Vocab, eval_pools
from .model import AssignAddTransformer

MEASURE_NAMES = (
    "m1_addition_module",  # OV2(e_a) + OV2(e_b) through MLP2 and W_U gives (a + b) mod N
    "m2_l1_prev_token_qk",  # positional QK of layer 1 peaks on the previous position
    "m3_l2_var_identity_qk",  # layer-2 QK on OV1-copied variable embeddings is diagonal
    "m4_l1_eq_to_operands",  # layer-1 attention from `=` has its top 2 on positions 13, 14
    "m5_l1_value_prev_token",  # layer-1 attention from each prefix value token peaks on its variable
    "m6_l2_eq_to_values",  # layer-2 attention from `=` has its top 2 on the operand values
    "m7_probe_var_identity",  # linear probe on the layer-1 residual at value tokens recovers the variable
)
MEASUREMENT_ROWS_PER_POOL = 256


def _ov(model: AssignAddTransformer, layer: int) -> torch.Tensor:
    attn = model.blocks[layer].attn
    return attn.W_V[0] @ attn.W_O[0]


def _qk(model: AssignAddTransformer, layer: int) -> torch.Tensor:
    attn = model.blocks[layer].attn
    return attn.W_Q[0] @ attn.W_K[0].T


@torch.no_grad()
def addition_module_accuracy(model: AssignAddTransformer) -> float:
    """Measure 1: the layer-2 MLP + unembedding alone, fed OV2(W_E[a]) + OV2(W_E[b]) for every (a, b).

    The residual is included (logits = (x + MLP(x)) W_U); with no biases the argmax does not
    depend on the attention weights' scale, so the sum stands for an even split over both operands.
    """
    n = model.config.task.modulus
    ov_numbers = model.W_E[:n] @ _ov(model, 1)
    x = (ov_numbers[:, None, :] + ov_numbers[None, :, :]).reshape(n * n, -1)
    mlp = model.blocks[1].mlp
    logits = (x + torch.relu(x @ mlp.W_in) @ mlp.W_out) @ model.W_U
    target = (torch.arange(n)[:, None] + torch.arange(n)[None, :]).reshape(-1) % n
    return float((logits.argmax(-1).cpu() == target).float().mean())


@torch.no_grad()
def previous_token_qk_score(model: AssignAddTransformer) -> float:
    """Measure 2: on W_pos QK1 W_posᵀ over the prefix, each query q >= 1 with keys >= q and key q-2
    masked out: fraction of rows whose argmax is q - 1."""
    prefix = model.config.task.prefix_len
    pos = model.W_pos[:prefix]
    scores = (pos @ _qk(model, 0) @ pos.T).cpu()
    hits = []
    for q in range(1, prefix):
        row = scores[q].clone()
        row[q:] = float("-inf")
        if q >= 2:
            row[q - 2] = float("-inf")
        hits.append(int(row.argmax()) == q - 1)
    return sum(hits) / len(hits)


@torch.no_grad()
def variable_qk_map(model: AssignAddTransformer) -> torch.Tensor:
    """[n_vars, n_vars]: (W_E[v] OV1) QK2 (W_E[v'] OV1)ᵀ, query variable v against key variable v'."""
    vocab = Vocab(model.config.task)
    ids = torch.arange(model.config.task.n_vars, device=model.W_E.device) + vocab.var0
    copied = model.W_E[ids] @ _ov(model, 0)
    return (copied @ _qk(model, 1) @ copied.T).cpu()


def variable_identity_score(model: AssignAddTransformer) -> float:
    """Measure 3: fraction of rows of the variable QK map whose argmax is the diagonal."""
    qk = variable_qk_map(model)
    return float((qk.argmax(-1) == torch.arange(qk.shape[0])).float().mean())


@functools.lru_cache(maxsize=8)
def measurement_batch(task: TaskConfig) -> Batch:
    """The first rows of every evaluation pool: a fixed, mixed batch for the activation measures."""
    return Batch.cat([pool[:MEASUREMENT_ROWS_PER_POOL] for pool in eval_pools(task).values()])


def _top2_match(pattern: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    top = pattern.topk(2, dim=-1).indices
    return ((top == a[:, None]).any(-1) & (top == b[:, None]).any(-1))


def value_positions(batch: Batch, task: TaskConfig) -> torch.Tensor:
    """Bool [B, seq_len]: prefix positions holding an assigned value (a number right after a variable)."""
    vocab = Vocab(task)
    tokens = batch.tokens[:, : task.prefix_len]
    is_var = tokens >= vocab.var0
    mask = torch.zeros_like(batch.tokens, dtype=torch.bool)
    mask[:, 1: task.prefix_len] = is_var[:, :-1]
    return mask


@torch.no_grad()
def activation_measures(model: AssignAddTransformer, batch: Batch, with_probe: bool = True) -> dict[str, float]:
    """Measures 4–7 on one batch (run through the fused path, which exposes exactly these activations)."""
    task = model.config.task
    device = model.W_E.device
    out = model.fused_forward(batch.tokens.to(device))
    p1, p2, resid = out.pattern1.float().cpu(), out.pattern2.float().cpu(), out.resid_mid0.float().cpu()
    n = task.seq_len
    qtype_vars = (batch.lhs_var >= 0).long() + (batch.rhs_var >= 0).long()
    few_vars = qtype_vars <= 1
    lhs_pos, rhs_pos = torch.full_like(batch.lhs_src, n - 3), torch.full_like(batch.rhs_src, n - 2)
    m4 = _top2_match(p1[few_vars, -1], lhs_pos[few_vars], rhs_pos[few_vars]).float().mean()

    values = value_positions(batch, task)
    rows, cols = torch.nonzero(values, as_tuple=True)
    m5 = (p1[rows, cols].argmax(-1) == cols - 1).float().mean()
    m6 = _top2_match(p2, batch.lhs_src, batch.rhs_src).float().mean()
    result = {"m4_l1_eq_to_operands": float(m4), "m5_l1_value_prev_token": float(m5),
              "m6_l2_eq_to_values": float(m6), "m7_probe_var_identity": float("nan")}
    if with_probe:
        labels = batch.tokens[rows, cols - 1] - Vocab(task).var0
        result["m7_probe_var_identity"] = probe_accuracy(resid[rows, cols], labels, task.n_vars)
    return result


def probe_accuracy(features: torch.Tensor, labels: torch.Tensor, n_classes: int, ridge: float = 1e-3) -> float:
    """Measure 7: a ridge-regression linear probe (one-hot targets, closed form, deterministic),
    fitted on the even rows and scored on the odd rows."""
    x = torch.cat([features.double(), torch.ones(features.shape[0], 1, dtype=torch.float64)], 1)
    y = torch.nn.functional.one_hot(labels, n_classes).double()
    fit, test = x[0::2], x[1::2]
    if fit.shape[0] == 0 or test.shape[0] == 0:
        return float("nan")
    gram = fit.T @ fit + ridge * fit.shape[0] * torch.eye(x.shape[1], dtype=torch.float64)
    weights = torch.linalg.solve(gram, fit.T @ y[0::2])
    return float(((test @ weights).argmax(-1) == labels[1::2]).double().mean())


def all_measures(model: AssignAddTransformer, with_probe: bool = True) -> dict[str, float]:
    """Every progress measure, in MEASURE_NAMES order."""
    result = {
        "m1_addition_module": addition_module_accuracy(model),
        "m2_l1_prev_token_qk": previous_token_qk_score(model),
        "m3_l2_var_identity_qk": variable_identity_score(model),
    }
    result.update(activation_measures(model, measurement_batch(model.config.task), with_probe))
    return {name: result[name] for name in MEASURE_NAMES}
