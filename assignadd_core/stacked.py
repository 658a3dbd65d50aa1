"""Stacked runs: K runs of one shape trained in one process, their weights stacked on a leading axis.

Runs may share a stack when they have the same parameter shapes, optimizer settings and training loop
(`STACK_FIELDS`); everything else (seeds, init and data seeds, f, r, the split) is per run. Each step
`torch.func.vmap` runs the trainer's own loss (`loss.fused_loss`) over the K weight sets at once (one
batched kernel per operation instead of K small ones), and one AdamW updates the stacked weights: AdamW is
elementwise, so that is K separate AdamW runs with their own moments. Each run keeps its own data stream and
its own folder: at an eval step its weights and optimizer moments are copied into an ordinary model and
AdamW, and the trainer's own code (`trainer.eval_row`, `save_eval_step`, `finish_run`) writes its metrics,
checkpoint and resume state, so each folder is what training it alone writes (final.json adds `stacked`).

Eager, a stacked run is bit-identical to the same run alone on CPU (the batched kernels compute each run's
numbers as the single ones do; tests/test_stacked.py checks metrics and weights). Compiled, it rounds
differently, as a compiled single run does.

Resuming: each run resumes from its own saved state. Runs that stopped at different steps are brought to a
common step first: those furthest behind train (stacked among themselves) up to the next step at which
another run saved its state, are saved there, and the group grows until all train together.
"""
from __future__ import annotations

import math
import time
from contextlib import ExitStack
from pathlib import Path

import torch
from torch import nn
from torch.func import functional_call, vmap
from tqdm.auto import tqdm

from . import trainer
from .config import ConfigError, RunConfig
from .data import TrainStream, make_split
from .loss import fused_loss
from .model import AssignAddTransformer, initial_model
from .run_folder import Run

# Settings every run of a stack shares: parameter shapes, the optimizer, the loop (batch, eval steps, precision).
STACK_FIELDS = ("task.modulus", "task.n_vars", "task.seq_len", "model.d_model", "model.d_mlp",
                "train.lr", "train.weight_decay", "train.beta1", "train.beta2", "train.eps",
                "train.batch_size", "train.steps", "train.eval_every", "train.probe_every", "train.bf16")


def stack_key(config: RunConfig) -> tuple:
    """Runs whose configs have equal keys can be trained in one stack."""
    return tuple(getattr(getattr(config, section), name) for section, name in
                 (field.split(".") for field in STACK_FIELDS))


def stackable(config: RunConfig) -> bool:
    """A stack trains plain runs: no nudge, no gradient noise, no early stop (the single-run trainer has them)."""
    return not config.train.perturbed and config.train.stop_when_composed == 0


def check_stackable(configs: list[RunConfig]) -> None:
    if not configs:
        raise ConfigError("a stack needs at least one run")
    for config in configs:
        if not stackable(config):
            raise ConfigError("a stack cannot train a run with jitter, grad_noise, steering or stop_when_composed;"
                              " train it alone (sweep --stack 1)")
    first = stack_key(configs[0])
    for config in configs[1:]:
        for field, a, b in zip(STACK_FIELDS, first, stack_key(config)):
            if a != b:
                raise ConfigError(f"runs of one stack must share {field} (got {a!r} and {b!r}); train them in"
                                  " separate stacks")


class _Loss(nn.Module):
    """The trainer's loss of one run, as a module whose weights functional_call swaps for one run's."""

    def __init__(self, config: RunConfig, device: torch.device, bf16: bool):
        super().__init__()
        self.model = AssignAddTransformer(config).to(device).requires_grad_(False)
        self.config, self.device, self.bf16 = config, device, bf16

    def forward(self, tokens, answers):
        return fused_loss(self.model, tokens, answers, self.config, self.device, self.bf16)


class Stack(nn.Module):
    """K models' weights stacked on a leading axis (`weights`, in the models' parameter order);
    `forward(tokens [K, B, n], answers [K, B])` gives each run's loss [K]."""

    def __init__(self, models: list[AssignAddTransformer], config: RunConfig, device: torch.device, bf16: bool):
        super().__init__()
        self.names = [name for name, _ in models[0].named_parameters()]
        self.weights = nn.ParameterList(nn.Parameter(torch.stack([p.detach() for p in ps]))
                                        for ps in zip(*(m.parameters() for m in models)))
        self.loss = _Loss(config, device, bf16)  # its own weights are never used

    def __len__(self) -> int:
        return self.weights[0].shape[0]

    def _one(self, weights, tokens, answers):
        return functional_call(self.loss, {f"model.{n}": w for n, w in zip(self.names, weights)}, (tokens, answers))

    def forward(self, tokens, answers):
        return vmap(self._one)(tuple(self.weights), tokens, answers)

    @torch.no_grad()
    def copy_to(self, k: int, model: nn.Module) -> None:
        """Run k's weights into an ordinary model."""
        for p, w in zip(model.parameters(), self.weights):
            p.copy_(w[k])


def stack_optimizer_state(optimizers: list[torch.optim.Optimizer], stacked: torch.optim.Optimizer) -> None:
    """The K runs' AdamW moments, stacked, into the stacked AdamW (their step counts are equal)."""
    states = [o.state_dict()["state"] for o in optimizers]
    merged = {i: {key: value if key == "step" else torch.stack([s[i][key] for s in states])
                  for key, value in state.items()} for i, state in states[0].items()}
    stacked.load_state_dict({"state": merged, "param_groups": stacked.state_dict()["param_groups"]})


def unstack_optimizer_state(stacked: torch.optim.Optimizer, k: int, optimizer: torch.optim.Optimizer) -> None:
    """Run k's moments into its own AdamW (then saved as a run trained alone saves it)."""
    state = {i: {key: (value if key == "step" else value[k]).clone() for key, value in s.items()}
             for i, s in stacked.state_dict()["state"].items()}
    optimizer.load_state_dict({"state": state, "param_groups": optimizer.state_dict()["param_groups"]})


class StackedStep(trainer.TrainingStep):
    """`step(tokens [K, B, n], answers [K, B]) -> K losses`: one AdamW step of every run of the stack, eager or
    compiled as `trainer.TrainingStep` (same fallback to eager with one line)."""

    def _loss(self, tokens, answers):
        return self.model(tokens, answers)

    def __call__(self, tokens, answers) -> list[float]:
        if self._compiled_loss is not None:
            try:
                return self._apply(self._compiled_loss(tokens, answers))
            except Exception as err:  # noqa: BLE001  (as in TrainingStep)
                self._fall_back(err)
        return self._apply(self._loss(tokens, answers))

    def _apply(self, losses) -> list[float]:
        self.optimizer.zero_grad(set_to_none=True)
        losses.sum().backward()  # each run's weights get exactly the gradient of its own loss
        self.optimizer.step()
        return losses.tolist()


# ---------------------------------------------------------------------------- training
def train_stacked(configs: list[RunConfig], run_dirs: list[Path], device: str = "cpu", progress: bool = True,
                  keep_checkpoints: str = "all", compile: str = "auto") -> list[Run]:
    """Train (or resume) the runs `run_dirs[i]` of `configs[i]` stacked in this process; returns the Runs.

    Finished runs are left as they are. Settings and errors as `trainer.train` (BusyError at once when another
    process writes one of the runs; nothing is trained then)."""
    if len(configs) != len(run_dirs):
        raise ConfigError(f"{len(configs)} configs for {len(run_dirs)} run folders")
    if keep_checkpoints not in trainer.KEEP_CHOICES:
        raise ConfigError(f"keep_checkpoints must be one of {trainer.KEEP_CHOICES}, got {keep_checkpoints!r}")
    check_stackable(configs)
    runs = [Run(d) for d in run_dirs]
    if len({r.path.resolve() for r in runs}) != len(runs):
        raise ConfigError("a stack names the same run folder twice")
    dev = trainer.resolve_device(device)
    if trainer.compile_stages(compile) is not None:
        raise ConfigError("a stack compiles its whole step or nothing (compile auto, on or off), not single stages")
    compiled = trainer.compile_wanted(compile, dev, configs[0].train.steps)
    for config, run in zip(configs, runs):
        make_split(config.task)  # refuse a bad split before creating anything on disk
        if run.exists() and run.config != config:
            raise ConfigError(f"{run.path} holds a run with another config; pick a new run directory")
    with torch.enable_grad(), ExitStack() as locks:
        for run in runs:
            run.path.mkdir(parents=True, exist_ok=True)
            locks.enter_context(run.writer_lock())  # a busy run stops the stack here, naming its writer
        for config, run in zip(configs, runs):
            trainer.write_or_check_config(run, config)
        environment = trainer.environment_info(dev)
        bf16 = trainer.use_bf16(configs[0], dev)
        while todo := [i for i, run in enumerate(runs) if not run.is_complete()]:
            saved = {i: trainer.last_saved_step(runs[i]) for i in todo}
            low = min(saved.values())
            later = [s for s in saved.values() if s > low]
            group = [i for i in todo if saved[i] == low]
            _train_group([configs[i] for i in group], [runs[i] for i in group], dev, bf16, compiled,
                         min(later, default=configs[0].train.steps), environment, progress, keep_checkpoints,
                         compile)
    return runs


def _train_group(configs: list[RunConfig], runs: list[Run], dev: torch.device, bf16: bool, compiled: bool,
                 stop: int, environment: dict, progress: bool, keep_checkpoints: str, compile: str) -> None:
    """Train runs that all saved their state at the same step up to step `stop` (an eval step, or the last)."""
    config = configs[0]
    models = [initial_model(c).to(dev) for c in configs]
    optimizers = [trainer.make_optimizer(m, c) for m, c in zip(models, configs)]
    resumed = [trainer.resume(run, m, o, c) for run, m, o, c in zip(runs, models, optimizers, configs)]
    start, counters = resumed[0][0], [c for _, c in resumed]
    stack = Stack(models, config, dev, bf16)
    optimizer = trainer.make_optimizer(stack.weights, config)
    if start:
        stack_optimizer_state(optimizers, optimizer)
    step_fn = StackedStep(stack, optimizer, config, dev, bf16, compiled)
    streams = [TrainStream(c.task, c.train.batch_size, c.train.stream_seed) for c in configs]
    k = len(runs)
    loss_sums, loss_count = [0.0] * k, 0

    bar = tqdm(total=config.train.steps, initial=start, disable=not progress, unit="step", mininterval=2.0,
               desc=f"{k} runs" if k > 1 else runs[0].name, dynamic_ncols=True)
    tic = time.perf_counter()
    try:
        for step in range(start + 1, stop + 1):
            batches = [stream.batch(step) for stream in streams]
            losses = step_fn(torch.stack([t for t, _ in batches]).to(dev), torch.stack([a for _, a in batches]).to(dev))
            for run, loss in zip(runs, losses):
                if not math.isfinite(loss):
                    raise FloatingPointError(f"{run.path}: training loss became {loss} at step {step}; lower lr or"
                                             " disable bf16")
            loss_sums, loss_count = [s + loss for s, loss in zip(loss_sums, losses)], loss_count + 1
            for c in counters:
                c["bf16_steps"] += bf16
                c["compiled_steps"] += step_fn.compiled
                c["stacked_steps"] += k > 1
            bar.update(1)
            if trainer.is_eval_step(step, config):
                rows = []
                for i, (c, model) in enumerate(zip(configs, models)):
                    stack.copy_to(i, model)
                    rows.append(trainer.eval_row(model, c, dev, bf16, step, loss_sums[i] / loss_count))
                now = time.perf_counter()  # each run's elapsed time is the stack's wall time
                for i, (run, model, own) in enumerate(zip(runs, models, optimizers)):
                    counters[i]["elapsed_s"] += now - tic
                    unstack_optimizer_state(optimizer, i, own)
                    trainer.save_eval_step(run, model, own, rows[i], counters[i], keep_checkpoints)
                tic, loss_sums, loss_count = now, [0.0] * k, 0
    except KeyboardInterrupt:
        bar.close()
        print(f"\ninterrupted; each run resumes from its last saved step ("
              + ", ".join(f"{run.name} {trainer.last_saved_step(run)}" for run in runs) + ")")
        raise
    bar.close()
    if stop == config.train.steps:
        for i, (run, model, c) in enumerate(zip(runs, models, configs)):
            stack.copy_to(i, model)
            trainer.finish_run(run, model, c, environment, counters[i], compile, stacked=k)
