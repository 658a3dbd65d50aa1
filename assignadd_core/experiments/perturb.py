"""Perturbations that keep a run's (initialization, data order) cell, two plug-ins with their settings (`Perturbation`):
a one-time jitter of the weights (`Jitter`: `jitter` at `jitter_step`) and a noise added to every step's gradient
(`GradientNoise`: `grad_noise`), both drawn from `perturb_seed`.

Both are drawn from their own generators, seeded by `perturb_seed` (and, for the gradient noise, the step), so a
perturbed run is a pure function of its config like any other: reruns are bit-identical on CPU and a resumed run
equals an uninterrupted one. Each size is relative to the spread (standard deviation) of the tensor it is added
to, so one number means the same for the embedding and the MLP.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch

from ..core import trainer
from ..core.config import ConfigError, RunConfig, Settings

_JITTER_STREAM, _NOISE_STREAM = 1, 2  # the two perturbations draw from separate streams of one seed


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


@dataclass(frozen=True)
class Perturbation(Settings):
    """Replicates of a cell. Each size is relative to the spread (standard deviation) of the tensor it is added to;
    0 is the unperturbed run."""

    name = "perturb"
    jitter: float = 0.0  # one-time jitter: every weight tensor += jitter * its std * N(0, 1) ...
    jitter_step: int = 0  # ... after this step's update (0: the initial weights)
    grad_noise: float = 0.0  # every step: every gradient tensor += grad_noise * its std * N(0, 1), before AdamW
    perturb_seed: int = 0  # draws the jitter and the gradient noise (apart from the init and data seeds)

    def __post_init__(self) -> None:
        for name in ("jitter", "grad_noise"):
            value = getattr(self, name)
            real = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
            _check(0 <= real < math.inf, f"{name} must be a finite number >= 0, got {value!r}")
        for name in ("jitter_step", "perturb_seed"):
            value = getattr(self, name)
            _check(isinstance(value, int) and not isinstance(value, bool) and value >= 0,
                   f"{name} must be an integer >= 0, got {value!r}")

    def settle(self, config: RunConfig) -> "Perturbation":
        _check(self.jitter_step < config.train.steps,
               f"jitter_step must come before the last step ({config.train.steps}), got {self.jitter_step}")
        settled = self if self.jitter else replace(self, jitter=0.0, jitter_step=0)
        if not (settled.jitter or settled.grad_noise):
            settled = replace(settled, grad_noise=0.0)
            if not config.interventions.steer_sham:  # the steering's sham draws its direction from this seed too
                settled = replace(settled, perturb_seed=0)
        return settled


def stream_generator(*parts: int) -> torch.Generator:
    seed = 0
    for part in parts:  # a fixed mix of the parts (not Python's hash, which changes between processes)
        seed = (seed * 1_000_003 + int(part)) % (2 ** 63)
    return torch.Generator().manual_seed(seed)


def add_relative_noise(tensors, size: float, generator: torch.Generator) -> None:
    """Each tensor += size * its std * N(0, 1), drawn in order from `generator` (a jitter, a gradient noise)."""
    for tensor in tensors:
        noise = torch.randn(tensor.shape, generator=generator, dtype=torch.float32)
        spread = tensor.detach().float().std() if tensor.numel() > 1 else tensor.detach().float().abs()
        tensor.add_((size * spread * noise).to(device=tensor.device, dtype=tensor.dtype))


@torch.no_grad()
def jitter(model: torch.nn.Module, config: RunConfig) -> None:
    """The one-time jitter: every weight tensor += jitter * its std * N(0, 1), in parameter order."""
    s = config.interventions
    add_relative_noise([p for _, p in model.named_parameters()], s.jitter,
                       stream_generator(_JITTER_STREAM, s.perturb_seed))


def jitter_due(config: RunConfig, step: int) -> bool:
    """Whether the jitter is applied right after `step`'s update (step 0: before the first step)."""
    return config.interventions.jitter > 0 and step == config.interventions.jitter_step


@torch.no_grad()
def add_gradient_noise(model: torch.nn.Module, config: RunConfig, step: int) -> None:
    """Step `step`'s gradient noise: every gradient += grad_noise * its std * N(0, 1) (before the optimizer)."""
    size = config.interventions.grad_noise
    if size <= 0:
        return
    grads = [p.grad for _, p in model.named_parameters() if p.grad is not None]
    add_relative_noise(grads, size, noise_generator(config, step))


def noise_generator(config: RunConfig, step: int) -> torch.Generator:
    """The generator of step `step`'s gradient noise (its own stream of `perturb_seed`)."""
    return stream_generator(_NOISE_STREAM, config.interventions.perturb_seed, step)


@trainer.register
class GradientNoise(trainer.Plugin):
    Settings = Perturbation
    order = 10  # on the gradient, before steering looks at the weights

    @property
    def acts_on_steps(self) -> bool:
        return self.settings.grad_noise > 0

    def on_gradient(self, model, step, counters):
        add_gradient_noise(model, self.config, step)


@trainer.register
class Jitter(trainer.Plugin):
    Settings = Perturbation
    order = 30  # after the update, after steering's change of the same step

    @property
    def acts_on_steps(self) -> bool:
        return self.settings.jitter > 0 and self.settings.jitter_step > 0

    def before_training(self, model, start, counters):
        if start == 0 and jitter_due(self.config, 0):  # a jittered run is a run with other initial weights
            jitter(model, self.config)

    def after_update(self, model, step, counters):
        if jitter_due(self.config, step):  # a state saved from here on holds it
            jitter(model, self.config)

    def holds_back(self, counters, step):
        return self.settings.jitter > 0 and step <= self.settings.jitter_step
