"""The training loss, one definition for the trainer, the stacked runs and the quantities that differentiate it:
cross-entropy of the fused logits at `=`, under bf16 autocast where asked."""
from __future__ import annotations

from contextlib import nullcontext

import torch
import torch.nn.functional as F

from .config import RunConfig


def autocast_context(config: RunConfig, device: torch.device, bf16: bool | None = None):
    """bf16 autocast if `bf16` (default: as the config asks, whatever the device offers; see trainer.use_bf16)."""
    bf16 = config.train.bf16 if bf16 is None else bf16
    return torch.autocast(device.type, dtype=torch.bfloat16) if bf16 else nullcontext()


def fused_loss(model, tokens, answers, config: RunConfig, device: torch.device, bf16: bool | None = None):
    """The training loss: cross-entropy of the fused logits at `=` (bf16 autocast inside, if asked)."""
    with autocast_context(config, device, bf16):
        logits = model.fused_logits(tokens)
    return F.cross_entropy(at_least_fp32(logits), answers)


def at_least_fp32(logits: torch.Tensor) -> torch.Tensor:
    """bf16 logits to fp32 for the loss; fp32 and fp64 as they are."""
    return logits if logits.dtype == torch.float64 else logits.float()
