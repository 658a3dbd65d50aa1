"""This project's training: the core loop (`core.trainer.fit`) logging the project's quantities (`quantities.LOGGED`),
with the registered plug-ins (the package's own: `perturb.Jitter`, `perturb.GradientNoise`, `qk_steering.Steering`,
`early_stop.EarlyStop`) and the mode study's single compiled stages (`compile` naming stages, `StagedLoss`). A run
whose config sets no intervention trains exactly as the core loop alone would.
"""
from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from ..analysis.quantities import LOGGED
from ..core import trainer
from ..core.config import COMPILE_CHOICES, ConfigError, RunConfig
from ..core.loss import at_least_fp32, autocast_context
from ..core.run_folder import Run
from . import fast_data

METRIC_COLUMNS = LOGGED.metric_columns()


# The fused forward's stages (`model._fused`), which a run may compile one at a time (the mode study's bisection).
STAGES = ("attention", "mlp", "unembed")


def compile_stages(setting: str) -> tuple[str, ...] | None:
    """The stages a setting such as 'attention' or 'mlp,unembed' compiles alone; None for 'auto', 'on', 'off'."""
    if setting in COMPILE_CHOICES:
        return None
    stages = tuple(part.strip() for part in str(setting).split(","))
    if not stages or any(stage not in STAGES for stage in stages):
        raise ConfigError(f"compile must be one of {', '.join(COMPILE_CHOICES)} or a comma-separated list of the"
                          f" stages {', '.join(STAGES)} (compiled alone), got {setting!r}")
    return stages


class StagedLoss:
    """The fused loss with only some stages compiled (`STAGES`: both attention layers, the MLP, the unembedding with
    the loss), each alone; the others run eager. Uncompiled, it computes exactly `fused_loss`."""

    def __init__(self, model, config: RunConfig, device: torch.device, bf16: bool, compiled: tuple[str, ...]):
        if not config.model.paper_shape:
            raise ConfigError("compiling single stages needs the paper's shape (the fused path)")
        self.config, self.device, self.bf16 = config, device, bf16
        parts = {"attention": model._fused_attention, "mlp": model._fused_mlp,
                 "unembed": lambda resid, answers: F.cross_entropy(at_least_fp32(model._fused_unembed(resid)),
                                                                   answers)}
        self.parts = {name: torch.compile(fn) if name in compiled else fn for name, fn in parts.items()}

    def __call__(self, tokens, answers):
        with autocast_context(self.config, self.device, self.bf16):
            resid = self.parts["mlp"](self.parts["attention"](tokens)[0])
        return self.parts["unembed"](resid, answers)


def train(config: RunConfig, run_dir: Path, device: str = "cpu", progress: bool = True,
          keep_checkpoints: str = "all", compile: str = "auto", precision: str = "fp32") -> Run:
    """Train (or resume) the run in `run_dir` with this project's logged quantities and plug-ins; returns the
    finished Run. Settings as `core.trainer.fit`; `compile` may also name stages compiled alone (`compile_stages`)."""
    stages = compile_stages(compile)
    make_loss = (lambda model, config, device, bf16: StagedLoss(model, config, device, bf16, stages)) if stages \
        else None
    return trainer.fit(config, run_dir, LOGGED, device, progress, keep_checkpoints, compile, precision, make_loss,
                       fast_data.stream_chunk)
