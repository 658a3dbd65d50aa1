"""This project's training: the core loop (`core.trainer`) logging the project's quantities (`quantities.LOGGED`)
with the experiments plugged in at its named points, each a `Plugin` that reads its own config fields:

    Nudge          a one-time nudge of the weights (`jitter`, `jitter_step`): before the first step or after a step
    GradientNoise  noise added to every step's gradient (`grad_noise`)
    Steering       C10's steering of layer 2's QK update in a window of steps (`steer_*`; `steer`)
    EarlyStop      stop once composition has held for `stop_when_composed` evals in a row, the other plugins'
                   work behind it

and the mode study's single compiled stages (`compile` naming stages, `StagedLoss`). A run whose config asks for
none of these trains exactly as the core loop alone would.
"""
from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from ..analysis.quantities import LOGGED
from ..core import trainer
from ..core.config import COMPILE_CHOICES, COMPOSED_LEVEL, ConfigError, RunConfig
from ..core.loss import at_least_fp32, autocast_context
from ..core.run_folder import Run
from . import qk_steering
from .perturb import add_gradient_noise, nudge, nudge_due

METRIC_COLUMNS = LOGGED.metric_columns()


class Nudge(trainer.Plugin):
    def __init__(self, config: RunConfig):
        self.config = config

    def before_training(self, model, start, counters):
        if start == 0 and nudge_due(self.config, 0):  # a nudged run is a run with other initial weights
            nudge(model, self.config)

    def after_update(self, model, step, counters):
        if nudge_due(self.config, step):  # a state saved from here on holds it
            nudge(model, self.config)

    def holds_back(self, counters, step):
        t = self.config.train
        return t.jitter > 0 and step <= t.jitter_step


class GradientNoise(trainer.Plugin):
    def __init__(self, config: RunConfig):
        self.config = config

    def on_gradient(self, model, step, counters):
        add_gradient_noise(model, self.config, step)


class Steering(trainer.Plugin):
    def __init__(self, config: RunConfig):
        self.config, self.before = config, None

    def restore(self, state):
        return qk_steering.saved_counters(self.config, state)  # a triggered window's start (None: not reached yet)

    def on_gradient(self, model, step, counters):
        self.before = qk_steering.snapshot(model, self.config) if qk_steering.due(self.config, step, counters) else None

    def after_update(self, model, step, counters):
        if self.before is not None:
            qk_steering.steer(model, self.config, self.before)
            self.before = None

    def at_eval(self, row, counters):
        qk_steering.record_trigger(self.config, counters, row)

    def holds_back(self, counters, step):
        return qk_steering.pending(self.config, counters, step)

    def final_fields(self, counters, last_step):
        return qk_steering.final_fields(self.config, counters)


def composed_row(row: dict) -> bool:
    return bool(row["1var_train"] >= COMPOSED_LEVEL)


class EarlyStop(trainer.Plugin):
    """Stop once composition has held for `stop_when_composed` evaluations in a row (0: never); a steered run's
    composition counts once it holds without the steering (the other plugins hold the stop back until then)."""

    def __init__(self, config: RunConfig):
        self.config = config

    def restore(self, state):
        return {"composed_streak": state.get("composed_streak", 0)}  # evals in a row with 1-var train composed

    def at_eval(self, row, counters):
        counters["composed_streak"] = counters["composed_streak"] + 1 if composed_row(row) else 0

    def should_stop(self, counters, step):
        wanted = self.config.train.stop_when_composed
        return wanted > 0 and counters["composed_streak"] >= wanted

    def final_fields(self, counters, last_step):
        t = self.config.train  # only runs that may stop early say so
        return {"step_budget": t.steps, "stopped_early": "composed" if last_step < t.steps else None} \
            if t.stop_when_composed else {}


def plugins_for(config: RunConfig) -> list[trainer.Plugin]:
    """The plugins of one run, in the order they act (steering's change before a nudge after the same step)."""
    return [GradientNoise(config), Steering(config), Nudge(config), EarlyStop(config)]


def decided(config: RunConfig, counters: dict, step: int) -> bool:
    """Whether the run stops at `step` (for runs trained in a stack, which call the plugins themselves)."""
    return trainer.stop_now(plugins_for(config), counters, step)


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
    """Train (or resume) the run in `run_dir` with this project's logged quantities and plugins; returns the
    finished Run. Settings as `core.trainer.train`; `compile` may also name stages compiled alone
    (`compile_stages`)."""
    stages = compile_stages(compile)
    make_loss = (lambda model, config, device, bf16: StagedLoss(model, config, device, bf16, stages)) if stages \
        else None
    return trainer.train(config, run_dir, LOGGED, plugins_for(config), device, progress, keep_checkpoints, compile,
                         precision, make_loss)
