"""Perturbations that keep a run's (initialization, data order) cell: a one-time nudge of the weights and a noise
added to every step's gradient (`TrainConfig.jitter`, `jitter_step`, `grad_noise`, `perturb_seed`).

Both are drawn from their own generators, seeded by `perturb_seed` (and, for the gradient noise, the step), so a
perturbed run is a pure function of its config like any other: reruns are bit-identical on CPU and a resumed run
equals an uninterrupted one. Each size is relative to the spread (standard deviation) of the tensor it is added
to, so one number means the same for the embedding and the MLP.
"""
from __future__ import annotations

import torch

from ..core.config import RunConfig

_JITTER_STREAM, _NOISE_STREAM = 1, 2  # the two perturbations draw from separate streams of one seed


def stream_generator(*parts: int) -> torch.Generator:
    seed = 0
    for part in parts:  # a fixed mix of the parts (not Python's hash, which changes between processes)
        seed = (seed * 1_000_003 + int(part)) % (2 ** 63)
    return torch.Generator().manual_seed(seed)


def add_relative_noise(tensors, size: float, generator: torch.Generator) -> None:
    """Each tensor += size * its std * N(0, 1), drawn in order from `generator` (a nudge, a gradient noise)."""
    for tensor in tensors:
        noise = torch.randn(tensor.shape, generator=generator, dtype=torch.float32)
        spread = tensor.detach().float().std() if tensor.numel() > 1 else tensor.detach().float().abs()
        tensor.add_((size * spread * noise).to(device=tensor.device, dtype=tensor.dtype))


@torch.no_grad()
def nudge(model: torch.nn.Module, config: RunConfig) -> None:
    """The one-time nudge: every weight tensor += jitter * its std * N(0, 1), in parameter order."""
    t = config.train
    add_relative_noise([p for _, p in model.named_parameters()], t.jitter,
                        stream_generator(_JITTER_STREAM, t.perturb_seed))


def nudge_due(config: RunConfig, step: int) -> bool:
    """Whether the nudge is applied right after `step`'s update (step 0: before the first step)."""
    return config.train.jitter > 0 and step == config.train.jitter_step


@torch.no_grad()
def add_gradient_noise(model: torch.nn.Module, config: RunConfig, step: int) -> None:
    """Step `step`'s gradient noise: every gradient += grad_noise * its std * N(0, 1) (before the optimizer)."""
    t = config.train
    if t.grad_noise <= 0:
        return
    grads = [p.grad for _, p in model.named_parameters() if p.grad is not None]
    add_relative_noise(grads, t.grad_noise, noise_generator(config, step))


def noise_generator(config: RunConfig, step: int) -> torch.Generator:
    """The generator of step `step`'s gradient noise (its own stream of `perturb_seed`)."""
    return stream_generator(_NOISE_STREAM, config.train.perturb_seed, step)
