"""Accuracy on the nine evaluation pools and the two exact sets (SPEC §5)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .data import EXACT_NAMES, POOL_NAMES, Batch, eval_pools, exact_sets
from .model import AssignAddTransformer

EVAL_CHUNK = 8192


@torch.no_grad()
def batch_accuracy(model: AssignAddTransformer, batch: Batch, chunk: int = EVAL_CHUNK) -> float:
    """argmax of the `=` logits equals the answer; NaN for an empty batch."""
    if len(batch) == 0:
        return math.nan
    device = model.W_E.device
    correct = 0
    for lo in range(0, len(batch), chunk):
        logits = model.fused_logits(batch.tokens[lo: lo + chunk].to(device))
        correct += int((logits.argmax(-1).cpu() == batch.answers[lo: lo + chunk]).sum())
    return correct / len(batch)


@torch.no_grad()
def batch_correct(model: AssignAddTransformer, batch: Batch, chunk: int = EVAL_CHUNK) -> torch.Tensor:
    """Bool [B]: which sequences the model answers correctly."""
    device = model.W_E.device
    parts = [model.fused_logits(batch.tokens[lo: lo + chunk].to(device)).argmax(-1).cpu()
             for lo in range(0, len(batch), chunk)]
    predicted = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.long)
    return predicted == batch.answers


@torch.no_grad()
def batch_loss(model: AssignAddTransformer, batch: Batch) -> float:
    if len(batch) == 0:
        return math.nan
    logits = model.fused_logits(batch.tokens.to(model.W_E.device)).float().cpu()
    return float(F.cross_entropy(logits, batch.answers))


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
