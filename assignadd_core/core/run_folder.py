"""The run directory format: where a run's files are and how to read them (no training here).

    runs/<name>/config.json        the RunConfig (JSON)
    runs/<name>/metrics.csv        one row per eval step: loss, nine pool accuracies, progress measures
    runs/<name>/final.json         the last step trained (`last_step`; `config.train.steps` is the budget), exact-set
                                   accuracies, final pools, wall time, device, versions, commit
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

from .checkpoint import CheckpointError, load_model, read_json
from .config import ConfigError, RunConfig
from .locks import exclusive

PACKAGE_ROOT = Path(__file__).resolve().parents[2] / "runs"
DEFAULT_ROOT = Path(os.environ.get("ASSIGNADD_RUNS", PACKAGE_ROOT))
_STEP_FILE = re.compile(r"step_(\d+)\.safetensors$")
# Keys of final.json (and of a sweep's records, copied from it) renamed since runs were committed: old name -> new.
# `steps` was the last step trained, easily read as the budget (config.train.steps); readers see the new names.
RENAMED_FINAL_KEYS = {"steps": "last_step"}


def upgraded(record: dict) -> dict:
    """A final.json or sweep record with its keys under their current names (`RENAMED_FINAL_KEYS`)."""
    return {RENAMED_FINAL_KEYS.get(k, k): v for k, v in record.items()}


def current_root() -> Path:
    """The runs folder a process started now would use (ASSIGNADD_RUNS read now, not at import)."""
    return Path(os.environ.get("ASSIGNADD_RUNS", PACKAGE_ROOT))


class Run:
    def __init__(self, path: Path):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r})"

    # its name and its files (see the module's text)
    name = property(lambda self: self.path.name)
    config_path = property(lambda self: self.path / "config.json")
    metrics_path = property(lambda self: self.path / "metrics.csv")
    final_path = property(lambda self: self.path / "final.json")
    model_path = property(lambda self: self.path / "model.safetensors")
    checkpoint_dir = property(lambda self: self.path / "checkpoints")
    resume_dir = property(lambda self: self.path / "resume")
    lock_path = property(lambda self: self.path / ".lock")

    def writer_lock(self):
        """Context manager: this process is the run's only writer, or BusyError names the one that is."""
        return exclusive(self.lock_path, f"run {self.path}")

    def exists(self) -> bool:
        return self.config_path.is_file()

    def check_config(self, config: RunConfig, advice: str = "pick a new run directory") -> None:
        """Refuse a folder that holds a run of another config (the one check of every writer)."""
        if self.exists() and self.config != config:
            raise ConfigError(f"{self.path} holds a run with another config (hash {self.config.hash()}, not"
                              f" {config.hash()}); {advice}")

    def is_complete(self) -> bool:
        return self.final_path.is_file() and self.model_path.is_file()

    @property
    def config(self) -> RunConfig:
        if not self.config_path.is_file():
            raise CheckpointError(f"{self.path}: not a run directory (no config.json)")
        try:
            return RunConfig.from_json(self.config_path.read_text())
        except ConfigError as err:
            raise CheckpointError(f"{self.config_path}: {err}") from None

    def metrics(self) -> pd.DataFrame:
        if not self.metrics_path.is_file():
            raise CheckpointError(f"{self.metrics_path}: no metrics yet")
        return pd.read_csv(self.metrics_path)

    def final(self) -> dict:
        return upgraded(read_json(self.final_path))

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
