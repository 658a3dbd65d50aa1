"""`train_or_load` and `continue_run`: get a finished run, training it when needed; `seed_runs`: the finished runs
of one config over several seeds (training the missing ones only when asked).

The run folder format itself lives in `run_folder`.
"""
from __future__ import annotations

from pathlib import Path
import shutil

from ..core.checkpoint import CheckpointError, atomic_write_text
from ..core.config import ConfigError, RunConfig
from ..core.run_folder import Run, run_path
from .training import train


def train_or_load(config: RunConfig, name: str | None = None, root: Path | None = None,
                  device: str = "cpu", progress: bool = True, train_if_missing: bool = True,
                  keep_checkpoints: str = "all", compile: str = "auto", precision: str = "fp32") -> Run:
    """Load the run `name` (default: the config's hash) when it is finished, else train or resume it.

    An existing run whose config differs is refused rather than silently reused or overwritten.
    """
    run = Run(run_path(name or config.hash(), root))
    run.check_config(config, "choose another run name")
    if run.is_complete():
        return run
    if not train_if_missing:
        raise CheckpointError(f"{run.path}: run is missing or unfinished and training is switched off")
    return train(config, run.path, device=device, progress=progress, keep_checkpoints=keep_checkpoints,
                 compile=compile, precision=precision)


def continue_run(source: Run, config: RunConfig, name: str, root: Path | None = None) -> Run:
    """Start run `name` as the continuation of the finished run `source` to more steps (`config` must be
    the source's config with only `train.steps` raised). The training stream is a function of seed and
    step and AdamW has no schedule, so training on from the source's saved state at its last step gives
    exactly the run that `config` would train from scratch. The new folder gets the source's metrics and
    resume state; `train_or_load(config, name)` then trains steps source_steps + 1 .. config.train.steps.
    (Its metrics keep the source's extra row at the source's last step, and the loss of the first row after
    it averages the steps since that row only.)"""
    target = Run(run_path(name, root))
    if target.exists():
        return target  # already continued (maybe finished): train_or_load takes it from here
    old = source.config
    if old.replace(steps=config.train.steps) != config or config.train.steps <= old.train.steps:
        raise ConfigError(f"{name}: a continuation may only raise train.steps of {source.path}"
                          f" ({old.train.steps}); got a config that differs in more (or fewer steps)")
    state = source.resume_dir / "state.json"
    if not source.is_complete() or not state.is_file():
        raise CheckpointError(f"{source.path}: cannot be continued: it is unfinished or its resume state"
                              " (resume/, never committed) is gone; retrain it with the longer config instead")
    target.path.mkdir(parents=True)
    shutil.copytree(source.resume_dir, target.resume_dir)
    shutil.copy2(source.metrics_path, target.metrics_path)
    atomic_write_text(target.config_path, config.to_json() + "\n")
    return target


def finished_run(name: str, config, train_missing: bool = False, device: str = "cpu", root=None):
    """The run `name` when it is finished with `config` (or trained now, with `train_missing`), else None."""
    if train_missing:
        return train_or_load(config, name=name, device=device, root=root)  # with a progress bar
    run = Run(run_path(name, root))
    return run if run.is_complete() and run.config == config else None


def seed_runs(names, seeds, steps: int, overrides: dict | None = None, train_missing: bool = False,
              device: str = "cpu", root=None) -> tuple[dict, list[str]]:
    """({name: finished Run}, [names not trained yet]) for one config over several seeds."""
    if len(names) != len(seeds) or not names:
        raise ConfigError(f"runs and seeds must be non-empty lists of the same length, got {names} and {seeds}")
    runs, missing = {}, []
    for name, seed in zip(names, seeds):
        config = RunConfig().replace(seed=seed, steps=steps, **(overrides or {}))
        run = finished_run(name, config, train_missing, device, root)
        if run is None:
            missing.append(name)
        else:
            runs[name] = run
    return runs, missing
