"""Where compiled and eager training part (chapter 4's mode study): at one set of weights and one training batch,
the gradient of the compiled training loss minus the eager one.

Over a few successive batches, the difference's size relative to the gradient says how large it is, its cosine
with the gradient whether it pushes along or across the step, and the cosine between successive batches'
differences whether it is a bias (near 1: the same direction every step, so it accumulates) or rounding (near 0).
The compiled kernels round differently at different thread counts: the caller fixes the threads (the mode study
uses one, as its runs were trained), and the thread count is returned with the values."""
from __future__ import annotations

import math

import torch

from ..core.data import TrainStream
from ..core.loss import fused_loss
from ..core.model import AssignAddTransformer


def _gradient(model: AssignAddTransformer, loss_fn, tokens, answers) -> torch.Tensor:
    model.zero_grad(set_to_none=True)
    loss_fn(tokens, answers).backward()
    return torch.cat([p.grad.reshape(-1).double() for p in model.parameters()])


def _cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(a @ b / (a.norm() * b.norm())) if a.norm() > 0 and b.norm() > 0 else math.nan


def compiled_gradient_differences(model: AssignAddTransformer, step: int, batches: int) -> list[dict[str, float]]:
    """For the training batches of steps step+1 .. step+batches (what the optimizer sees next), one dict each:
    `relative_size` ||d|| / ||g||, `cosine_with_gradient` (0 where d is 0) and `cosine_with_previous` (NaN for
    the first batch), with d the compiled minus the eager gradient g of the training loss. The model is left
    with its gradients cleared."""
    config, device = model.config, model.W_E.device
    stream = TrainStream(config.task, config.train.batch_size, config.train.stream_seed)
    model.train()
    with torch.enable_grad():
        def eager(tokens, answers):
            return fused_loss(model, tokens, answers, config, device)
        compiled = torch.compile(eager)
        rows, previous = [], None
        for t in range(step + 1, step + 1 + batches):
            tokens, answers = stream.batch(t)
            g = _gradient(model, eager, tokens, answers)
            d = _gradient(model, compiled, tokens, answers) - g
            rows.append({"relative_size": float(d.norm() / g.norm()),
                         "cosine_with_gradient": _cosine(d, g) if d.norm() > 0 else 0.0,
                         "cosine_with_previous": _cosine(d, previous) if previous is not None else math.nan})
            previous = d
    model.zero_grad(set_to_none=True)
    return rows


def relative_distance(weights: dict[str, torch.Tensor], reference: dict[str, torch.Tensor]) -> float:
    """||w - w_ref|| / ||w_ref|| over every weight, in double precision (an fp64 run's weights as they were saved)."""
    if set(weights) != set(reference):
        raise ValueError("the two weight sets name different tensors (runs of different shapes?)")
    flat = [torch.cat([ws[k].double().reshape(-1) for k in sorted(ws)]) for ws in (weights, reference)]
    return float((flat[0] - flat[1]).norm() / flat[1].norm())
