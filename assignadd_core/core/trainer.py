"""The training loop (book/protocol.md, "Training"): AdamW on the cross-entropy at `=`, evaluation and a checkpoint at
steps 1, 1 + eval_every, ... and the last step; resumable; bit-identical reruns on CPU.

Training data is a pure function of (seed, step) (`data.TrainStream`), and the model and optimizer state are saved at
every eval step, so a killed run resumes to exactly the metrics of an uninterrupted one. One process trains a run at a
time (the run folder's writer lock).

The loop knows nothing of any experiment. What a run logs at an eval step comes from above (`Logged`), and
interventions plug in at named points (`Plugin`): before the first step, on the gradient, after the update, at an
eval, whether to stop. A plug-in is registered once (`register`), brings its settings (`config.Settings`) into every
run's config and hash, and acts in every run that sets them, trained alone or stacked (`experiments.stacked` calls
each run's plug-ins at the same points). The package's own: `experiments.perturb` (jitter, gradient noise),
`experiments.qk_steering` (steering), `experiments.early_stop`.

Speed defaults: torch's own thread count and OpenMP wait policy (a sweep's single-thread workers wait passively), and
bf16 autocast only where the device computes bf16 natively (`use_bf16`); final.json records all three.
"""
from __future__ import annotations

import copy
import csv
import json
import math
import os
import platform
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Callable, ClassVar, NamedTuple, Sequence

import torch
from tqdm.auto import tqdm

from .checkpoint import (atomic_write_text, load_torch_dict, load_weights_into, save_model,
                         save_torch_dict)
from .config import COMPILE_CHOICES, ConfigError, RunConfig, load_builtin_interventions, register_settings
from .data import TrainStream, exact_set_sizes, make_split, stream_chunk
from .evaluation import evaluate
from .loss import autocast_context, fused_loss
from .model import initial_model
from .run_folder import Run

KEEP_CHOICES = ("all", "none")
PRECISIONS = ("fp32", "fp64")


class Logged(NamedTuple):
    """What an eval step writes besides the step, the mean training loss and the elapsed time: `row(model, step,
    with_probe)` gives the values of `columns` (always all of them, in order); `versions` names the version of each
    logged quantity (a resumed run must log the same ones)."""
    columns: tuple[str, ...]
    versions: dict
    row: Callable[..., dict]
    shown: tuple[tuple[str, str], ...] = ()  # (label, column): shown on the progress bar

    def metric_columns(self) -> tuple[str, ...]:
        return ("step", "loss", *self.columns, "elapsed_s")


class Plugin:
    """An intervention on training, called at the loop's named points (each does nothing unless overridden), built for
    every run, alone or stacked (`plugins_for`), with its settings from the run's config (`self.settings`: defaults,
    with which it must do nothing, where the run does not set them). `counters`: the run's dict saved with every
    resume state (a plug-in keeps its own entries there)."""

    Settings: ClassVar[type | None] = None  # its settings (a `config.Settings` dataclass; None: it has none)
    order: ClassVar[int] = 50  # where it acts among the plug-ins at the same point (lower first)

    def __init__(self, config: RunConfig):
        self.config = config
        self.settings = config.interventions.of(self.Settings.name) if self.Settings is not None else None

    @property
    def acts_on_steps(self) -> bool:
        """Whether it may act in `on_gradient` or `after_update` (a stack whose plug-ins do not is one CUDA graph)."""
        cls = type(self)
        return cls.on_gradient is not Plugin.on_gradient or cls.after_update is not Plugin.after_update

    def restore(self, state: dict) -> dict:
        """This plugin's counters, from a saved resume state (a fresh run's state: {})."""
        return {}

    def before_training(self, model, start: int, counters: dict) -> None:
        """Once, before the first step this process trains (`start`: the resumed step, 0 for a fresh run)."""

    def on_gradient(self, model, step: int, counters: dict) -> None:
        """After the backward pass of `step`, before the optimizer's update."""

    def after_update(self, model, step: int, counters: dict) -> None:
        """After the optimizer's update of `step` (a state saved from here on holds what it did)."""

    def at_eval(self, row: dict, counters: dict) -> None:
        """At an eval step, with its metrics row, before the resume state is saved."""

    def should_stop(self, counters: dict, step: int) -> bool:
        """Whether training may end at `step` (an eval step, or the resumed one)."""
        return False

    def holds_back(self, counters: dict, step: int) -> bool:
        """Whether this plugin's work is not behind the run at `step` (no stop until it is)."""
        return False

    def final_fields(self, counters: dict, last_step: int) -> dict:
        """What final.json says of this plugin's work (`last_step`: where training ended)."""
        return {}


PLUGINS: list[type[Plugin]] = []  # every registered plug-in, in the order they act


def register(plugin: type[Plugin]) -> type[Plugin]:
    """Register a plug-in (a class decorator): its settings join every run's config (and so its hash), and every
    run, trained alone, stacked or in a sweep, calls it."""
    if plugin.Settings is not None:
        register_settings(plugin.Settings)
    if plugin not in PLUGINS:
        PLUGINS.append(plugin)
        PLUGINS.sort(key=lambda p: p.order)
    return plugin


def plugins_for(config: RunConfig) -> list[Plugin]:
    """The plug-ins of one run, in the order they act."""
    load_builtin_interventions()
    return [plugin(config) for plugin in PLUGINS]


def stop_now(plugins: Sequence[Plugin], counters: dict, step: int) -> bool:
    """A plugin asks to stop at `step` and none holds it back."""
    return any(p.should_stop(counters, step) for p in plugins) and not any(p.holds_back(counters, step)
                                                                            for p in plugins)


def is_eval_step(step: int, config: RunConfig) -> bool:
    return (step - 1) % config.train.eval_every == 0 or step == config.train.steps


def is_probe_step(step: int, config: RunConfig) -> bool:
    return (step - 1) % config.train.probe_every == 0 or step == config.train.steps


class DeviceError(RuntimeError):
    """The requested device is not available on this machine (an environment problem, not a config one)."""


def resolve_device(device: str) -> torch.device:
    if device not in ("cpu", "cuda") and not device.startswith("cuda:"):
        raise ConfigError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise DeviceError(f"device {device!r} requested but torch sees no CUDA GPU on this machine")
    return torch.device(device)


def native_bf16(device: torch.device) -> bool:
    """Whether `device` computes bf16 in hardware (where it does not, autocast emulates it, slowly)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported(including_emulation=False)
    try:
        if not (torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported()):
            return False
        if platform.machine().lower() in ("x86_64", "amd64"):
            # oneDNN's check also passes on plain AVX-512 (bf16 emulated); only AVX512-BF16 or AMX compute it
            return torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()
        return True  # aarch64: the check above already asks for the bf16 extension
    except (AttributeError, RuntimeError):  # a torch without these probes
        return False


def use_bf16(config: RunConfig, device: torch.device) -> bool:
    """bf16 autocast when the config asks for it and the device has native bf16; else fp32, said in one line."""
    if not config.train.bf16:
        return False
    if native_bf16(device):
        return True
    print(f"warning: bf16 requested but this {device.type} has no native bf16 (emulated bf16 is several"
          " times slower than fp32); training in fp32, recorded as bf16_used false in final.json", file=sys.stderr)
    return False


def optimizer_settings(config: RunConfig) -> dict:
    """AdamW's settings of a run (a branch that changes them updates its optimizer's groups with these)."""
    t = config.train
    return {"lr": t.lr, "betas": (t.beta1, t.beta2), "eps": t.eps, "weight_decay": t.weight_decay}


def make_optimizer(parameters, config: RunConfig, **options) -> torch.optim.AdamW:
    """The run's AdamW over a module's parameters (or an iterable of them); `options` as torch's (e.g. fused)."""
    if isinstance(parameters, torch.nn.Module):
        parameters = parameters.parameters()
    return torch.optim.AdamW(parameters, **optimizer_settings(config), **options)


def train_step(model, optimizer, tokens, answers, config: RunConfig, device: torch.device, bf16: bool | None = None,
               step: int | None = None, counters: dict | None = None, plugins: Sequence[Plugin] = ()) -> float:
    """One eager optimizer step (the reference every faster path is tested against)."""
    return _step(model, optimizer, fused_loss(model, tokens, answers, config, device, bf16), step, counters, plugins)


def _step(model, optimizer, loss, step: int | None, counters: dict | None, plugins: Sequence[Plugin]) -> float:
    """The update from `loss`, with the plug-ins' `on_gradient` and `after_update` around it (a step without its
    number, a benchmark's, runs none)."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    active = plugins if step is not None else ()
    for plugin in active:
        plugin.on_gradient(model, step, counters)
    optimizer.step()
    for plugin in active:
        plugin.after_update(model, step, counters)
    return loss.item()


COMPILE_MIN_STEPS = 2_000  # below this, compiling (a few seconds, ~20 s with a cold cache) costs more than it saves


def compile_wanted(setting: str, device: torch.device, steps: int) -> bool:
    """Whether to compile the training step. 'auto': on a CPU at one thread, for a run of at least `COMPILE_MIN_STEPS`
    steps (there about 1.4x faster, benchmarks/train_step.py; slower at two threads; not measured on a GPU)."""
    if setting not in COMPILE_CHOICES:
        raise ConfigError(f"compile must be one of {', '.join(COMPILE_CHOICES)}, got {setting!r}")
    if setting == "auto":
        return device.type == "cpu" and torch.get_num_threads() == 1 and steps >= COMPILE_MIN_STEPS
    return setting == "on"


class TrainingStep:
    """`step(tokens, answers, step, counters) -> loss`: one AdamW step on the fused loss, eager or compiled
    (`torch.compile` of the whole loss, or `make_loss(model, config, device, bf16)`: a loss compiled some other way,
    e.g. in stages).

    Compiling changes no setting of the run: same parameters, optimizer, stream and config hash, so a run
    resumes across a compiled and an eager process. The compiled loss differs from the eager one only in
    floating-point rounding (tests bound logits and gradients). Where compilation is unavailable or fails,
    the step falls back to eager with one line on stderr and stays eager."""

    def __init__(self, model, optimizer, config: RunConfig, device: torch.device, bf16: bool, compiled: bool,
                 make_loss: Callable | None = None, plugins: Sequence[Plugin] = ()):
        self.model, self.optimizer, self.config, self.device, self.bf16 = model, optimizer, config, device, bf16
        self.plugins = plugins
        self._compiled_loss = None
        if compiled or make_loss is not None:
            try:
                self._compiled_loss = (make_loss(model, config, device, bf16) if make_loss is not None
                                       else torch.compile(self._loss))
            except Exception as err:  # noqa: BLE001  (e.g. a platform torch.compile does not support)
                self._fall_back(err)

    @property
    def compiled(self) -> bool:
        return self._compiled_loss is not None

    def _loss(self, tokens, answers):
        return fused_loss(self.model, tokens, answers, self.config, self.device, self.bf16)

    def _fall_back(self, err: BaseException) -> None:
        first = (str(err).strip().splitlines() or [""])[0][:200]
        print(f"warning: torch.compile is unavailable here ({type(err).__name__}: {first}); training eager",
              file=sys.stderr)
        self._compiled_loss = None

    def __call__(self, tokens, answers, step: int | None = None, counters: dict | None = None) -> float:
        if self._compiled_loss is not None:
            try:  # compilation happens at the first forward and backward; nothing is applied before step()
                return _step(self.model, self.optimizer, self._compiled_loss(tokens, answers), step, counters,
                             self.plugins)
            except Exception as err:  # noqa: BLE001
                self._fall_back(err)
        return train_step(self.model, self.optimizer, tokens, answers, self.config, self.device, self.bf16, step,
                          counters, self.plugins)


# ---------------------------------------------------------------------------- resume state
# One dict saved and loaded together: the step, the counters, and the model and optimizer state dicts.
RESUME_FILE = "state.pt"


def save_resume_state(run: Run, model, optimizer, step: int, extra: dict) -> None:
    weights = {k: v.clone() for k, v in model.state_dict().items()}  # a stacked run's views: its slice, not the stack
    save_torch_dict({"step": step, **extra, "model": weights, "optimizer": optimizer.state_dict()},
                    run.resume_dir / RESUME_FILE)
    # a readable copy of the counters, for people and `runs.continue_run`; the state file itself is the record
    atomic_write_text(run.resume_dir / "state.json", json.dumps({"step": step, **extra}))


def load_resume_state(run: Run, model, optimizer) -> dict | None:
    """Load the saved state into model and optimizer; returns the step and counters (None: nothing saved)."""
    path = run.resume_dir / RESUME_FILE
    if not path.is_file():
        return None
    state = load_torch_dict(path)
    load_weights_into(model, state.pop("model"), path)
    optimizer.load_state_dict(state.pop("optimizer"))  # moves the moments to the parameters' device
    return state


def last_saved_step(run: Run) -> int:
    info = run.resume_dir / "state.json"
    return json.loads(info.read_text())["step"] if info.is_file() else 0


# ---------------------------------------------------------------------------- metrics file
def truncate_metrics(path: Path, last_step: int) -> None:
    """Drop rows past the resumed step (written after the last saved state, before an interruption)."""
    if not path.is_file():
        return
    lines = path.read_text().splitlines(keepends=True)
    kept = lines[:1] + [line for line in lines[1:] if int(line.split(",", 1)[0]) <= last_step]
    atomic_write_text(path, "".join(kept))


LOGGED_VERSIONS_FILE = "metrics.json"  # the versions of the logged quantities metrics.csv was written with


def check_logged_versions(run: Run, start: int, versions: dict) -> None:
    """A fresh run records the versions of the quantities it logs; a resumed one must log the same ones
    (a run written before versions were recorded logged version 1 of each)."""
    path = run.path / LOGGED_VERSIONS_FILE
    if start == 0 or not run.metrics_path.is_file():
        atomic_write_text(path, json.dumps({"versions": versions}, sort_keys=True) + "\n")
        return
    written = json.loads(path.read_text())["versions"] if path.is_file() else {k: 1 for k in versions}
    if written != versions:
        raise ConfigError(f"{run.metrics_path} was logged with quantity versions {written}; this code logs"
                          f" {versions}: train it into a new run folder")


def append_metrics(path: Path, row: dict, columns: Sequence[str]) -> None:
    new = not path.is_file()
    with open(path, "a", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        if new:
            writer.writeheader()
        writer.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})


def cpu_name() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        return next(line.split(":", 1)[1].strip() for line in lines if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "cpu"


def environment_info(device: torch.device) -> dict:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                              cwd=Path(__file__).parent)
        commit = done.stdout.strip() if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        commit = None
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name()
    return {"device": device.type, "device_name": name, "threads": torch.get_num_threads(),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default"),
            "python": platform.python_version(), "torch": torch.__version__,
            "transformer_lens": version("transformer-lens"), "git_commit": commit}


# ---------------------------------------------------------------------------- the loop
def fit(config: RunConfig, run_dir: Path, logged: Logged, device: str = "cpu", progress: bool = True,
        keep_checkpoints: str = "all", compile: str = "auto", precision: str = "fp32",
        make_loss: Callable | None = None, chunks: Callable = stream_chunk) -> Run:
    """Train (or resume) the run in `run_dir`, logging `logged` at every eval step, with the registered plug-ins
    (`plugins_for`); returns the finished Run. `compile` ('auto', 'on', 'off': `compile_wanted`; with `make_loss`, the
    name of that compiled loss) and `precision` ('fp32'; 'fp64', a reference evaluated in fp32) change how steps are
    computed, never the config or hash (final.json records both); `chunks` builds the same stream chunks as
    `data.stream_chunk` (faster). Gradients are on here (a notebook that turned them off can still train a missing
    run). Raises BusyError at once when another process trains this run."""
    if keep_checkpoints not in KEEP_CHOICES:
        raise ConfigError(f"keep_checkpoints must be one of {KEEP_CHOICES}, got {keep_checkpoints!r}")
    if precision not in PRECISIONS:
        raise ConfigError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
    if precision == "fp64" and config.train.bf16:
        raise ConfigError("precision fp64 and bf16 exclude each other")
    dev = resolve_device(device)
    compiled = make_loss is None and compile_wanted(compile, dev, config.train.steps)
    make_split(config.task)  # refuse a bad split before creating anything on disk
    run = Run(run_dir)
    run.check_config(config)
    run.path.mkdir(parents=True, exist_ok=True)
    with torch.enable_grad(), run.writer_lock():  # a second process on this run stops here, naming the first
        write_or_check_config(run, config)
        environment = {**environment_info(dev), "precision": precision}  # at the start: the commit training it
        bf16 = use_bf16(config, dev)
        model = initial_model(config).to(dev)
        if precision == "fp64":
            model = model.double()  # before resuming: a saved fp64 state loads as fp64
        optimizer = make_optimizer(model, config)
        plugins = plugins_for(config)
        start, counters = resume(run, model, optimizer, config, logged, plugins)
        if start and counters["precision"] != precision:
            raise ConfigError(f"{run.path} was trained in {counters['precision']} up to step {start}; resume it in"
                              f" that precision (or train {precision} into a new run folder)")
        counters["precision"] = precision
        step_fn = TrainingStep(model, optimizer, config, dev, bf16, compiled, make_loss, plugins)
        stream = TrainStream(config.task, config.train.batch_size, config.train.stream_seed, chunks=chunks)
        last = _loop(config, run, model, optimizer, step_fn, stream, start, counters, logged, plugins, dev, bf16,
                     keep_checkpoints, progress)
        finish_run(run, model, config, environment, counters, compile, plugins, last_step=last)
    return run


def _loop(config: RunConfig, run: Run, model, optimizer, step_fn: TrainingStep, stream: TrainStream, start: int,
          counters: dict, logged: Logged, plugins: Sequence[Plugin], dev: torch.device, bf16: bool,
          keep_checkpoints: str, progress: bool) -> int:
    """Steps `start + 1` to the last (or to a plugin's stop); returns the last step trained."""
    for plugin in plugins:
        plugin.before_training(model, start, counters)
    loss_sum, loss_count = 0.0, 0  # training loss averaged over the steps since the last eval row
    bar = tqdm(total=config.train.steps, initial=start, disable=not progress, desc=run.name, unit="step",
               mininterval=2.0, dynamic_ncols=True)
    tic, step = time.perf_counter(), start
    # a run that a plugin stopped is finished at its last saved step
    todo = range(0) if start and stop_now(plugins, counters, start) else range(start + 1, config.train.steps + 1)
    try:
        for step in todo:
            tokens, answers = stream.batch(step)
            loss = step_fn(tokens.to(dev), answers.to(dev), step, counters)
            if not math.isfinite(loss):
                raise FloatingPointError(f"training loss became {loss} at step {step}; lower lr or disable bf16")
            loss_sum, loss_count = loss_sum + loss, loss_count + 1
            counters["bf16_steps"] += bf16
            counters["compiled_steps"] += step_fn.compiled
            bar.update(1)
            if not is_eval_step(step, config):
                continue
            row = eval_row(model, config, dev, bf16, step, loss_sum / loss_count, logged)
            now = time.perf_counter()
            counters["elapsed_s"], tic = counters["elapsed_s"] + now - tic, now
            for plugin in plugins:
                plugin.at_eval(row, counters)  # before the state is saved: a resume keeps what they record
            save_eval_step(run, model, optimizer, row, counters, keep_checkpoints, logged)
            loss_sum, loss_count = 0.0, 0
            bar.set_postfix(loss=f"{row['loss']:.3f}", **{label: f"{row[name]:.2f}" for label, name in logged.shown},
                            refresh=False)
            if stop_now(plugins, counters, step):
                break
    except KeyboardInterrupt:
        # An interrupted optimizer step may be half applied, so the state saved at the last eval
        # step (at most eval_every - 1 steps back) is what a resume continues from.
        bar.close()
        print(f"\ninterrupted; {run.path} resumes from step {last_saved_step(run)}")
        raise
    bar.close()
    return step


# ---------------------------------------------------------------------------- shared with stacked training
# A run's folder is written by these alone: a run trained alone or in a stack (`experiments.stacked`) has the same files.
def write_or_check_config(run: Run, config: RunConfig) -> None:
    """Under the run's lock: write config.json of a new run, refuse a folder holding another config."""
    run.check_config(config)
    if not run.exists():
        atomic_write_text(run.config_path, config.to_json() + "\n")


def resume(run: Run, model, optimizer, config: RunConfig, logged: Logged, plugins: Sequence[Plugin] = ()
           ) -> tuple[int, dict]:
    """Load the saved state (if any) into model and optimizer and trim the metrics to it; returns the step and the
    counters saved with every state (elapsed_s, bf16_steps, compiled_steps, stacked_steps, precision, plug-ins')."""
    state = load_resume_state(run, model, optimizer) or {"step": 0, "elapsed_s": 0.0, "bf16_steps": 0}
    start = state["step"]
    counters = {"elapsed_s": state["elapsed_s"],
                # steps trained under bf16 so far (a state saved before this was counted: as the config asked)
                "bf16_steps": state.get("bf16_steps", start if config.train.bf16 else 0),
                "compiled_steps": state.get("compiled_steps", 0),  # saved before compiling existed: all eager
                "stacked_steps": state.get("stacked_steps", 0),  # steps trained in a stack of 2 or more runs
                "precision": state.get("precision", "fp32")}  # what the saved weights and moments are
    for plugin in plugins:
        counters.update(plugin.restore(state))
    truncate_metrics(run.metrics_path, start)
    check_logged_versions(run, start, logged.versions)
    return start, counters


def eval_row(model, config: RunConfig, dev: torch.device, bf16: bool, step: int, loss: float, logged: Logged) -> dict:
    """The metrics row of an eval step (`loss`: the mean training loss since the last row), elapsed_s aside."""
    model.eval()
    with autocast_context(config, dev, bf16):
        row = {"step": step, "loss": loss, **logged.row(in_fp32(model), step, with_probe=is_probe_step(step, config))}
    model.train()
    return row


def in_fp32(model):
    """The model itself, or an fp32 copy of an fp64 one (evaluation and the saved models are fp32)."""
    return model if next(model.parameters()).dtype != torch.float64 else copy.deepcopy(model).float()


def save_eval_step(run: Run, model, optimizer, row: dict, counters: dict, keep_checkpoints: str, logged: Logged,
                   save_state: bool = True) -> None:
    """Append the row (with the elapsed time), keep a checkpoint if asked, save the resume state (unless
    `save_state` is False: a stack may save it less often; a resumed run then drops the rows after its state)."""
    append_metrics(run.metrics_path, {**row, "elapsed_s": round(counters["elapsed_s"], 2)}, logged.metric_columns())
    if keep_checkpoints == "all":
        run.checkpoint_dir.mkdir(exist_ok=True)
        save_model(model, run.checkpoint_path(row["step"]))
    if save_state:
        save_resume_state(run, model, optimizer, row["step"], counters)


def finish_run(run: Run, model, config: RunConfig, environment: dict, counters: dict, compile: str,
               plugins: Sequence[Plugin] = (), stacked: int = 1, last_step: int | None = None) -> None:
    """The final model and final.json (`stacked`: how many runs the finishing process trained together;
    `last_step`: where training ended, before `train.steps` when a plugin stopped it)."""
    model.eval()
    model = in_fp32(model)
    save_model(model, run.model_path)
    results = evaluate(model)
    bf16_steps, compiled_steps = counters["bf16_steps"], counters["compiled_steps"]
    last_step = config.train.steps if last_step is None else last_step
    final = {"last_step": last_step}
    for plugin in plugins:
        final.update(plugin.final_fields(counters, last_step))
    final.update({"exact": results["exact"], "pools": results["pools"],
                  "wall_time_s": round(counters["elapsed_s"], 1), **environment, "bf16_used": bf16_steps > 0,
                  "bf16_steps": bf16_steps, "compiled": compiled_steps > 0, "compiled_steps": compiled_steps,
                  "compile": compile, "stacked": stacked, "stacked_steps": counters["stacked_steps"]})
    sampled = {name: list(sizes) for name, sizes in exact_set_sizes(config.task).items() if sizes[0] < sizes[1]}
    if sampled:  # a task larger than the paper's: which exact sets were a sample ([evaluated, whole])
        final["exact_sampled"] = sampled
    atomic_write_text(run.final_path, json.dumps(final, indent=2) + "\n")
