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
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import NamedTuple

import torch
from torch import nn
from torch.func import functional_call, vmap
from tqdm.auto import tqdm

from . import qk_steering, training
from ..analysis.quantities import LOGGED
from ..core import trainer
from ..core.config import ConfigError, RunConfig
from ..core.data import make_split
from ..core.loss import autocast_context, fused_loss
from ..core.model import AssignAddTransformer, initial_model
from .perturb import add_relative_noise, noise_generator, nudge, nudge_due
from .batch_source import BatchSource
from ..core.run_folder import Run
from .stack_eval import StackEvaluator, batched

# Settings every run of a stack shares: parameter shapes, the optimizer, the loop (batch, eval steps, precision).
STACK_FIELDS = ("task.modulus", "task.n_vars", "task.seq_len", "model.d_model", "model.d_mlp",
                "train.lr", "train.weight_decay", "train.beta1", "train.beta2", "train.eps",
                "train.batch_size", "train.steps", "train.eval_every", "train.probe_every", "train.bf16")


def stack_key(config: RunConfig) -> tuple:
    """Runs whose configs have equal keys can be trained in one stack."""
    return tuple(getattr(getattr(config, section), name) for section, name in
                 (field.split(".") for field in STACK_FIELDS))


def stackable(config: RunConfig) -> bool:
    """Every run can share a stack: a nudge, gradient noise, steering and stopping once composed are applied per
    run inside the stack (`_PerRun`), as the single-run trainer applies them."""
    return True


def check_stackable(configs: list[RunConfig]) -> None:
    if not configs:
        raise ConfigError("a stack needs at least one run")
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


def unstack_optimizer_states(stacked: torch.optim.Optimizer, optimizers: list[torch.optim.Optimizer]) -> None:
    """Each run's moments into its own AdamW (then saved as a run trained alone saves it)."""
    states = stacked.state_dict()["state"]
    for k, optimizer in enumerate(optimizers):
        state = {i: {key: (value.cpu() if key == "step" else value[k]).clone() for key, value in s.items()}
                 for i, s in states.items()}  # the step on the host, as a run alone keeps it
        optimizer.load_state_dict({"state": state, "param_groups": optimizer.state_dict()["param_groups"]})


class _PerRun:
    """What the single-run trainer does to one run around its optimizer step, done to each run of the stack on its
    own slice of the stacked weights (through an ordinary model of that run, `models[k]`): the gradient noise
    before the update, the steering around it, a nudge after it. The same functions on the same numbers as
    `trainer.train_step` and the loop, so a perturbed or steered run in a stack is the run alone."""

    def __init__(self, stack: "Stack", configs: list[RunConfig], models: list[AssignAddTransformer],
                 counters: list[dict]):
        self.stack, self.configs, self.models, self.counters = stack, configs, models, counters

    def active(self) -> bool:
        """Whether any run needs per-step work beyond the stacked step (then the step cannot be a CUDA graph)."""
        return any(c.train.grad_noise > 0 or c.train.steered or (c.train.jitter > 0 and c.train.jitter_step > 0)
                   for c in self.configs)

    def _view(self, k: int) -> AssignAddTransformer:
        self.stack.copy_to(k, self.models[k])
        return self.models[k]

    @torch.no_grad()
    def _write_back(self, k: int) -> None:
        for w, p in zip(self.stack.weights, self.models[k].parameters()):
            w[k].copy_(p)

    def before_update(self, step: int) -> dict:
        """Gradient noise into each run's gradient slice; each steered run's W_QK2 before the update."""
        before = {}
        for k, config in enumerate(self.configs):
            if config.train.grad_noise > 0:
                add_relative_noise([w.grad[k] for w in self.stack.weights], config.train.grad_noise,
                                   noise_generator(config, step))
            if qk_steering.due(config, step, self.counters[k]):
                before[k] = qk_steering.snapshot(self._view(k), config)
        return before

    def after_update(self, step: int, before: dict) -> None:
        for k, config in enumerate(self.configs):
            steered, nudged = k in before, nudge_due(config, step)
            if steered or nudged:
                model = self._view(k)
                if steered:
                    qk_steering.steer(model, config, before[k])
                if nudged:
                    nudge(model, config)
                self._write_back(k)


class StackedStep(trainer.TrainingStep):
    """`step(tokens [K, B, n], answers [K, B], step)`: one AdamW step of every run of the stack, eager or compiled as
    `trainer.TrainingStep` (same fallback to eager with one line), with each run's own perturbations (`_PerRun`).
    The K losses are added into `loss_sums` (float64, on the device: no synchronisation per step)."""

    def __init__(self, stack: "Stack", optimizer, config: RunConfig, device: torch.device, bf16: bool,
                 compiled: bool, per_run: _PerRun):
        super().__init__(stack, optimizer, config, device, bf16, compiled)
        self.per_run = per_run
        self.loss_sums = torch.zeros(len(stack), dtype=torch.float64, device=device)

    def _loss(self, tokens, answers):
        return self.model(tokens, answers)

    def __call__(self, tokens, answers, step: int | None = None) -> None:
        if self._compiled_loss is not None:
            try:
                return self._apply(self._compiled_loss(tokens, answers), step)
            except Exception as err:  # noqa: BLE001  (as in TrainingStep)
                self._fall_back(err)
        return self._apply(self._loss(tokens, answers), step)

    def _apply(self, losses, step) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        losses.sum().backward()  # each run's weights get exactly the gradient of its own loss
        before = self.per_run.before_update(step) if step is not None else {}
        self.optimizer.step()
        if step is not None:
            self.per_run.after_update(step, before)
        self.loss_sums += losses.detach().double()


class GraphedStep:
    """The stacked step as one CUDA graph: forward, backward and a fused, capturable AdamW replayed with one launch,
    the batch copied into fixed input tensors first and the losses summed on the device (read at eval steps only).
    Three warm-up steps run before the capture (CUDA graphs need them) and are undone: the weights and moments are
    restored, so the run is trained from exactly its state. For stacks whose runs need per-step work on the host
    (gradient noise, steering, a nudge after step 0) the eager `StackedStep` is used instead."""

    compiled = False

    def __init__(self, stack: "Stack", optimizer, config: RunConfig, device: torch.device, bf16: bool):
        self.stack, self.optimizer = stack, optimizer
        k, t = len(stack), config.train
        self.tokens = torch.zeros(k, t.batch_size, config.task.seq_len, dtype=torch.long, device=device)
        self.answers = torch.zeros(k, t.batch_size, dtype=torch.long, device=device)
        self.loss_sums = torch.zeros(k, dtype=torch.float64, device=device)
        self.bf16, self.device = bf16, device
        saved = _snapshot(stack, optimizer)
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side), _no_autocast_cache():
            for _ in range(3):
                self.optimizer.zero_grad(set_to_none=True)
                self._body()
        torch.cuda.current_stream(device).wait_stream(side)
        _restore(stack, optimizer, saved)
        self.optimizer.zero_grad(set_to_none=True)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph), _no_autocast_cache():
            self._body()
        self.loss_sums.zero_()

    def _body(self) -> None:
        losses = self.stack(self.tokens, self.answers)
        losses.sum().backward()
        self.optimizer.step()
        self.loss_sums += losses.detach().double()

    def __call__(self, tokens, answers, step: int | None = None) -> None:
        self.tokens.copy_(tokens, non_blocking=True)
        self.answers.copy_(answers, non_blocking=True)
        self.graph.replay()


class _no_autocast_cache:
    """Autocast's weight-cast cache off while a graph is captured (the cache would hold tensors of the capture)."""

    def __enter__(self):
        self.before = torch.is_autocast_cache_enabled()
        torch.set_autocast_cache_enabled(False)

    def __exit__(self, *exc):
        torch.set_autocast_cache_enabled(self.before)


def _snapshot(stack, optimizer) -> tuple:
    weights = [w.detach().clone() for w in stack.weights]
    state = {id(p): {k: v.clone() if torch.is_tensor(v) else v for k, v in s.items()}
             for p, s in optimizer.state.items()}
    return weights, state


@torch.no_grad()
def _restore(stack, optimizer, saved) -> None:
    weights, state = saved
    for w, old in zip(stack.weights, weights):
        w.copy_(old)
    for p in list(optimizer.state):
        if id(p) not in state:  # created by the warm-up: a fresh run's AdamW state is zero moments at step 0
            for value in optimizer.state[p].values():
                if torch.is_tensor(value):
                    value.zero_()
            continue
        for key, value in optimizer.state[p].items():
            if torch.is_tensor(value):
                value.copy_(state[id(p)][key])


def make_stack_optimizer(stack: "Stack", config: RunConfig, graphed: bool) -> torch.optim.AdamW:
    """AdamW over the stacked weights (the trainer's settings); on a CUDA graph fused and capturable."""
    if not graphed:
        return trainer.make_optimizer(stack.weights, config)
    t = config.train
    return torch.optim.AdamW(stack.weights.parameters(), lr=t.lr, betas=(t.beta1, t.beta2), eps=t.eps,
                             weight_decay=t.weight_decay, fused=True, capturable=True)


# ---------------------------------------------------------------------------- training
def train_stacked(configs: list[RunConfig], run_dirs: list[Path], device: str = "cpu", progress: bool = True,
                  keep_checkpoints: str = "all", compile: str = "auto", state_every_s: float = 0.0,
                  data_workers: int = 0, until: int | None = None) -> list[Run]:
    """Train (or resume) the runs `run_dirs[i]` of `configs[i]` stacked in this process; returns the Runs.

    Finished runs are left as they are. Settings and errors as `trainer.train` (BusyError at once when another
    process writes one of the runs; nothing is trained then). `state_every_s`: the resume state is saved at an eval
    step only when this many seconds have passed since the last save (0: at every eval step, as a run alone; a GPU
    stack of hundreds of runs would otherwise write gigabytes); the metrics rows are written at every eval step and a
    resumed run drops those past its saved state, as always. `data_workers`: processes that build the next chunks of
    the runs' data streams ahead (`data_prefetch`; 0: built in this process when needed). `until`: stop at this eval
    step with every run's state saved there, unfinished (a benchmark, a time-boxed session); None: train to the end."""
    if len(configs) != len(run_dirs):
        raise ConfigError(f"{len(configs)} configs for {len(run_dirs)} run folders")
    if keep_checkpoints not in trainer.KEEP_CHOICES:
        raise ConfigError(f"keep_checkpoints must be one of {trainer.KEEP_CHOICES}, got {keep_checkpoints!r}")
    if state_every_s < 0:
        raise ConfigError(f"state_every_s must be >= 0, got {state_every_s!r}")
    if until is not None and not any(trainer.is_eval_step(until, c) for c in configs[:1]):
        raise ConfigError(f"until must be an eval step of the runs (1, 1 + eval_every, ...), got {until!r}")
    check_stackable(configs)
    runs = [Run(d) for d in run_dirs]
    if len({r.path.resolve() for r in runs}) != len(runs):
        raise ConfigError("a stack names the same run folder twice")
    dev = trainer.resolve_device(device)
    if training.compile_stages(compile) is not None:
        raise ConfigError("a stack compiles its whole step or nothing (compile auto, on or off), not single stages")
    compiled = trainer.compile_wanted(compile, dev, configs[0].train.steps)
    for config, run in zip(configs, runs):
        make_split(config.task)  # refuse a bad split before creating anything on disk
        run.check_config(config)
    options = _Options(keep_checkpoints, compile, state_every_s, data_workers)
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
            if until is not None and low >= until:
                break
            group = [i for i in todo if saved[i] == low]
            stop = min(later, default=configs[0].train.steps)
            _train_group([configs[i] for i in group], [runs[i] for i in group], dev, bf16, compiled,
                         stop if until is None else min(stop, until), environment, progress, options)
    return runs


class _Options(NamedTuple):
    keep_checkpoints: str
    compile: str
    state_every_s: float
    data_workers: int


class _Group:
    """The runs training together now: their configs, folders, ordinary models (for saving and per-run work),
    own AdamWs (for saving), counters and data streams; `drop` removes finished runs from every list at once."""

    def __init__(self, configs, runs, models, optimizers, counters):
        self.configs, self.runs, self.models, self.optimizers, self.counters = configs, runs, models, optimizers, counters

    def __len__(self) -> int:
        return len(self.runs)

    def keep(self, indices: list[int]) -> None:
        for name in ("configs", "runs", "models", "optimizers", "counters"):
            setattr(self, name, [getattr(self, name)[i] for i in indices])


def _train_group(configs: list[RunConfig], runs: list[Run], dev: torch.device, bf16: bool, compiled: bool,
                 stop: int, environment: dict, progress: bool, options: _Options) -> None:
    """Train runs that all saved their state at the same step up to step `stop` (an eval step, or the last)."""
    config = configs[0]
    models = [initial_model(c).to(dev) for c in configs]
    optimizers = [trainer.make_optimizer(m, c) for m, c in zip(models, configs)]
    resumed = [trainer.resume(run, m, o, c, LOGGED, training.plugins_for(c))
               for run, m, o, c in zip(runs, models, optimizers, configs)]
    start = resumed[0][0]
    group = _Group(list(configs), list(runs), models, optimizers, [c for _, c in resumed])
    for c, model, counters in zip(group.configs, group.models, group.counters):
        for plugin in training.plugins_for(c):  # a nudged run is a run with other initial weights
            plugin.before_training(model, start, counters)
    _finish_decided(group, start, environment, options)  # stopped once composed, killed before finishing
    if not len(group):
        return
    evaluator = StackEvaluator(group.models[0], group.configs, dev) if batched(config) else None
    trainer_state = _Stacked(group, dev, bf16, compiled, start)
    source = BatchSource(group.configs, start, options.data_workers)
    loss_count, last_state_save = 0, -math.inf  # the first eval step of a group always saves its state

    bar = tqdm(total=config.train.steps, initial=start, disable=not progress, unit="step", mininterval=2.0,
               desc=f"{len(group)} runs" if len(group) > 1 else runs[0].name, dynamic_ncols=True)
    tic = time.perf_counter()
    try:
        for step in range(start + 1, stop + 1):
            tokens, answers = source.batch(step)
            tokens, answers = (t.to(dev, non_blocking=True).long() for t in (tokens, answers))  # prefetched: uint8
            trainer_state.step_fn(tokens, answers, step)
            loss_count += 1
            k = len(group)
            for c in group.counters:
                c["bf16_steps"] += bf16
                c["compiled_steps"] += trainer_state.step_fn.compiled
                c["stacked_steps"] += k > 1
            bar.update(1)
            if not trainer.is_eval_step(step, config):
                continue
            losses = (trainer_state.step_fn.loss_sums / loss_count).tolist()
            for run, loss in zip(group.runs, losses):
                if not math.isfinite(loss):
                    raise FloatingPointError(f"{run.path}: training loss became {loss} by step {step}; lower lr or"
                                             " disable bf16")
            rows = _eval_rows(group, trainer_state.stack, evaluator, dev, bf16, step, losses)
            now = time.perf_counter()  # each run's elapsed time is the stack's wall time
            save_state = now - last_state_save >= options.state_every_s or step == stop
            finished = []
            for i, row in enumerate(rows):
                counters = group.counters[i]
                counters["elapsed_s"] += now - tic
                plugins = training.plugins_for(group.configs[i])
                for plugin in plugins:
                    plugin.at_eval(row, counters)  # before the state is saved, as a run alone
                if trainer.stop_now(plugins, counters, step):
                    finished.append(i)
            # the runs' own models and AdamWs are brought up to date only when something reads them
            if save_state or finished or options.keep_checkpoints == "all":
                trainer_state.sync_runs(group)
            for run, model, own, row, counters in zip(group.runs, group.models, group.optimizers, rows,
                                                      group.counters):
                trainer.save_eval_step(run, model, own, row, counters, options.keep_checkpoints, LOGGED, save_state)
            if save_state:
                last_state_save = now
            tic, loss_count = now, 0
            trainer_state.step_fn.loss_sums.zero_()
            bar.set_postfix_str(f"{len(group)} runs", refresh=False)
            if finished:
                for i in finished:
                    trainer.finish_run(group.runs[i], group.models[i], group.configs[i], environment, group.counters[i],
                                       options.compile, training.plugins_for(group.configs[i]), stacked=len(group),
                                       last_step=step)
                group.keep([i for i in range(len(group)) if i not in finished])
                source.keep([i for i in range(len(source)) if i not in finished])
                if not len(group):
                    break
                evaluator = StackEvaluator(group.models[0], group.configs, dev) if evaluator is not None else None
                trainer_state = _Stacked(group, dev, bf16, compiled, step)
    except KeyboardInterrupt:
        bar.close()
        print(f"\ninterrupted; each run resumes from its last saved step ("
              + ", ".join(f"{run.name} {trainer.last_saved_step(run)}" for run in runs) + ")")
        raise
    finally:
        source.close()
    bar.close()
    if stop == config.train.steps:
        for i, (run, model, c) in enumerate(zip(group.runs, group.models, group.configs)):
            trainer_state.stack.copy_to(i, model)
            trainer.finish_run(run, model, c, environment, group.counters[i], options.compile, training.plugins_for(c),
                               stacked=len(group))


def _finish_decided(group: _Group, start: int, environment: dict, options: _Options) -> None:
    """Finish the runs that had already stopped once composed when their last state was saved (as a run alone
    does on resuming), and leave them out of the group."""
    done = [i for i, (c, counters) in enumerate(zip(group.configs, group.counters))
            if start and training.decided(c, counters, start)]
    for i in done:
        trainer.finish_run(group.runs[i], group.models[i], group.configs[i], environment, group.counters[i],
                           options.compile, training.plugins_for(group.configs[i]), stacked=1, last_step=start)
    group.keep([i for i in range(len(group)) if i not in done])


class _Stacked:
    """The group's stacked weights, their AdamW (with the runs' saved moments) and the step function: a CUDA graph
    where the device is a GPU and no run needs per-step host work, else `StackedStep`."""

    def __init__(self, group: _Group, dev: torch.device, bf16: bool, compiled: bool, start: int):
        config = group.configs[0]
        self.stack = Stack(group.models, config, dev, bf16)
        per_run = _PerRun(self.stack, group.configs, group.models, group.counters)
        graphed = dev.type == "cuda" and not per_run.active() and not compiled
        self.optimizer = make_stack_optimizer(self.stack, config, graphed)
        if start:
            stack_optimizer_state(group.optimizers, self.optimizer)
        self.step_fn = None
        if graphed:
            try:
                self.step_fn = GraphedStep(self.stack, self.optimizer, config, dev, bf16)
            except Exception as err:  # noqa: BLE001  (a torch or driver without graph support: train eager)
                print(f"warning: the stacked step could not be captured as a CUDA graph ({type(err).__name__}:"
                      f" {str(err).strip()[:200]}); training eager", file=sys.stderr)
                # the warm-up may have moved the weights: the stack again from the runs' models, which it left alone
                self.stack = Stack(group.models, config, dev, bf16)
                per_run = _PerRun(self.stack, group.configs, group.models, group.counters)
                self.optimizer = make_stack_optimizer(self.stack, config, graphed=False)
                if start:
                    stack_optimizer_state(group.optimizers, self.optimizer)
        if self.step_fn is None:
            self.step_fn = StackedStep(self.stack, self.optimizer, config, dev, bf16, compiled, per_run)

    def sync_runs(self, group: _Group) -> None:
        """The stack's weights and moments into each run's own model and AdamW."""
        for i, model in enumerate(group.models):
            self.stack.copy_to(i, model)
        unstack_optimizer_states(self.optimizer, group.optimizers)


def _eval_rows(group: _Group, stack: Stack, evaluator, dev: torch.device, bf16: bool, step: int,
               losses: list[float]) -> list[dict]:
    """Every run's metrics row: all at once (`stack_eval`) in the paper's shape, else run by run."""
    config = group.configs[0]
    if evaluator is None:
        rows = []
        for i, (c, model) in enumerate(zip(group.configs, group.models)):
            stack.copy_to(i, model)
            rows.append(trainer.eval_row(model, c, dev, bf16, step, losses[i], LOGGED))
        return rows
    with autocast_context(config, dev, bf16):
        rows = evaluator.rows([w.detach() for w in stack.weights], with_probe=trainer.is_probe_step(step, config))
    return [{"step": step, "loss": loss, **row} for loss, row in zip(losses, rows)]
