"""Accuracy on the nine evaluation pools and the two exact sets (book/protocol.md, "Evaluation pools and exact sets")."""
from __future__ import annotations

import math

import torch

from .data import EXACT_NAMES, POOL_NAMES, Batch, eval_pools, exact_sets
from .model import AssignAddTransformer

EVAL_CHUNK = 8192


@torch.no_grad()
def batch_correct(model: AssignAddTransformer, batch: Batch, chunk: int = EVAL_CHUNK) -> torch.Tensor:
    """Bool [B]: which sequences the model answers correctly (argmax of the `=` logits)."""
    device = model.W_E.device
    parts = [model.fused_logits(batch.tokens[lo: lo + chunk].to(device)).argmax(-1).cpu()
             for lo in range(0, len(batch), chunk)]
    predicted = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.long)
    return predicted == batch.answers


def batch_accuracy(model: AssignAddTransformer, batch: Batch, chunk: int = EVAL_CHUNK) -> float:
    """Share answered correctly; NaN for an empty batch."""
    if len(batch) == 0:
        return math.nan
    return batch_correct(model, batch, chunk).sum().item() / len(batch)


def pool_accuracies(model: AssignAddTransformer) -> dict[str, float]:
    pools = eval_pools(model.config.task)
    return {name: batch_accuracy(model, pools[name]) for name in POOL_NAMES}


def exact_accuracies(model: AssignAddTransformer) -> dict[str, float]:
    sets = exact_sets(model.config.task)
    return {name: batch_accuracy(model, sets[name]) for name in EXACT_NAMES}


def evaluate(model: AssignAddTransformer) -> dict[str, dict[str, float]]:
    """The stable result object: {"pools": {name: acc}, "exact": {"0var_heldout": acc, "2var_union": acc}}."""
    was_training = model.training
    model.eval()
    try:
        return {"pools": pool_accuracies(model), "exact": exact_accuracies(model)}
    finally:
        model.train(was_training)
