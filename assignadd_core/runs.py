"""The run directory format and `train_or_load`.

    runs/<name>/config.json        the RunConfig (JSON)
    runs/<name>/metrics.csv        one row per eval step: loss, nine pool accuracies, progress measures
    runs/<name>/final.json         exact-set accuracies, final pools, wall time, device, versions, commit
    runs/<name>/model.safetensors  final weights (config in the file's metadata)
    runs/<name>/checkpoints/step_NNNNNN.safetensors   weights at eval steps (only a few are committed)
    runs/<name>/resume/            model + optimizer state of the last eval step (never committed)
    runs/<name>/.lock, .lock.json  held while a process trains the run, and who that is (never committed)

One process trains a run at a time (`Run.writer_lock`); reading a run never needs the lock.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd

from .checkpoint import CheckpointError, atomic_write_text, load_model, read_json
from .config import ConfigError, RunConfig
from .locks import exclusive

PACKAGE_ROOT = Path(__file__).resolve().parent.parent / "runs"
DEFAULT_ROOT = Path(os.environ.get("ASSIGNADD_RUNS", PACKAGE_ROOT))
_STEP_FILE = re.compile(r"step_(\d+)\.safetensors$")


def current_root() -> Path:
    """The runs folder a process started now would use (ASSIGNADD_RUNS read now, not at import)."""
    return Path(os.environ.get("ASSIGNADD_RUNS", PACKAGE_ROOT))


class Run:
    def __init__(self, path: Path):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def config_path(self) -> Path:
        return self.path / "config.json"

    @property
    def metrics_path(self) -> Path:
        return self.path / "metrics.csv"

    @property
    def final_path(self) -> Path:
        return self.path / "final.json"

    @property
    def model_path(self) -> Path:
        return self.path / "model.safetensors"

    @property
    def checkpoint_dir(self) -> Path:
        return self.path / "checkpoints"

    @property
    def resume_dir(self) -> Path:
        return self.path / "resume"

    @property
    def lock_path(self) -> Path:
        return self.path / ".lock"

    def writer_lock(self):
        """Context manager: this process is the run's only writer, or BusyError names the one that is."""
        return exclusive(self.lock_path, f"run {self.path}")

    def exists(self) -> bool:
        return self.config_path.is_file()

    def is_complete(self) -> bool:
        return self.final_path.is_file() and self.model_path.is_file()

    @property
    def config(self) -> RunConfig:
        if not self.config_path.is_file():
            raise CheckpointError(f"{self.path}: not a run directory (no config.json)")
        text = self.config_path.read_text()
        if '"two_var_rule"' not in text:  # written before the paper's split and 2-var rows were adopted
            raise CheckpointError(f"{self.path}: trained on the project's earlier data protocol (other held-out"
                                  " pairs, other meaning of r); retrain it (delete the folder) with this code")
        try:
            return RunConfig.from_json(text)
        except ConfigError as err:
            raise CheckpointError(f"{self.config_path}: {err}") from None

    def metrics(self) -> pd.DataFrame:
        if not self.metrics_path.is_file():
            raise CheckpointError(f"{self.metrics_path}: no metrics yet")
        return pd.read_csv(self.metrics_path)

    def final(self) -> dict:
        return read_json(self.final_path)

    def checkpoint_steps(self) -> list[int]:
        if not self.checkpoint_dir.is_dir():
            return []
        return sorted(int(m.group(1)) for p in self.checkpoint_dir.iterdir() if (m := _STEP_FILE.search(p.name)))

    def checkpoint_path(self, step: int) -> Path:
        return self.checkpoint_dir / f"step_{step:06d}.safetensors"

    def load_model(self, step: int | None = None):
        """Final weights, or those of an eval step that has a checkpoint."""
        if step is None:
            if not self.model_path.is_file():
                raise CheckpointError(f"{self.path}: run has no final model yet (not finished?)")
            return load_model(self.model_path, self.config)
        path = self.checkpoint_path(step)
        if not path.is_file():
            steps = self.checkpoint_steps()
            raise CheckpointError(f"{path}: no checkpoint at step {step}; this run has {len(steps)}"
                                  f" ({', '.join(map(str, steps[:12]))}{' …' if len(steps) > 12 else ''})")
        return load_model(path, self.config)

    def nearest_checkpoint(self, step: int) -> int:
        steps = self.checkpoint_steps()
        if not steps:
            raise CheckpointError(f"{self.path}: run has no checkpoints")
        return min(steps, key=lambda s: (abs(s - step), s))


def run_path(name: str, root: Path | None = None) -> Path:
    if not name or "/" in name or name.startswith("."):
        raise ConfigError(f"run name must be a plain folder name, got {name!r}")
    return Path(root or DEFAULT_ROOT) / name


def train_or_load(config: RunConfig, name: str | None = None, root: Path | None = None,
                  device: str = "cpu", progress: bool = True, train_if_missing: bool = True,
                  keep_checkpoints: str = "all") -> Run:
    """Load the run `name` (default: the config's hash) when it is finished, else train or resume it.

    An existing run whose config differs is refused rather than silently reused or overwritten.
    """
    run = Run(run_path(name or config.hash(), root))
    if run.exists() and run.config != config:
        raise ConfigError(f"run {run.path} exists with a different config (hash {run.config.hash()} vs"
                          f" {config.hash()}); choose another run name")
    if run.is_complete():
        return run
    if not train_if_missing:
        raise CheckpointError(f"{run.path}: run is missing or unfinished and training is switched off")
    from .trainer import train  # torch-heavy; only needed when we actually train
    return train(config, run.path, device=device, progress=progress, keep_checkpoints=keep_checkpoints)


def continue_run(source: Run, config: RunConfig, name: str, root: Path | None = None) -> Run:
    """Start run `name` as the continuation of the finished run `source` to more steps (`config` must be
    the source's config with only `train.steps` raised). The training stream is a function of seed and
    step and AdamW has no schedule, so training on from the source's saved state at its last step gives
    exactly the run that `config` would train from scratch. The new folder gets the source's metrics and
    resume state; `train_or_load(config, name)` then trains steps source_steps + 1 .. config.train.steps.
    (Its metrics keep the source's extra row at the source's last step, and the loss of the first row after
    it averages the steps since that row only.)"""
    import shutil
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
