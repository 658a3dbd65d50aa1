"""Branches of a run: train on from a run's saved state under other settings, or with part of the model re-drawn.

The composition chapter asks what makes a stuck run (seed 43 at 40,000 steps) compose. Each experiment is a
branch: a new run folder that starts from the source's resume state at its last eval step, with a config that
may change any setting except the model's shape (the data mix through r, the learning rate, the data seed, ...),
optionally with some weights re-drawn first (`EDITS`), and trains on to its own `train.steps`. A branch of a
branch gives a temporary change (r = 0.1 for 2,000 steps, then the paper's r again).

The branch's config describes its own steps only (the steps before the branch point ran under the source's
config), so every branch folder carries `branch.json`: the source run, the step, the settings that changed and
the edit. `history(run)` follows those files back to the first run.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import torch

from ..measure import roles
from ..core.checkpoint import CheckpointError, atomic_write_text
from ..core.config import ConfigError, RunConfig
from ..core.run_folder import Run, current_root, run_path
from ..core.model import initial_model
from ..core.trainer import load_resume_state, make_optimizer, optimizer_settings, save_resume_state
from .named_runs import train_or_load

BRANCH_FILE = "branch.json"
EDIT_SEED = 0


def _redraw_qk(role: str):
    """An edit that re-draws W_Q and W_K of the role's head with the model's own init (std 0.8 / sqrt(d_model))
    and clears their AdamW moments, as if those weights had just been initialised."""
    def edit(model, optimizer) -> None:
        generator = torch.Generator().manual_seed(EDIT_SEED)
        std = model.config.model.init_std_scale / math.sqrt(model.config.model.d_model)
        attn, h = roles.attention(model, role), roles.head(model, role)
        with torch.no_grad():
            for param in (attn.W_Q, attn.W_K):
                param[h].normal_(0.0, std, generator=generator)
                state = optimizer.state.get(param, {})
                for key in ("exp_avg", "exp_avg_sq"):
                    if key in state:
                        state[key][h].zero_()
    return edit


EDITS = {  # named by the paper's layers: the copy head is layer 1, the lookup head layer 2
    "redraw_layer1_qk": _redraw_qk(roles.COPY),
    "redraw_layer2_qk": _redraw_qk(roles.LOOKUP),
}


def changed_settings(old: RunConfig, new: RunConfig) -> dict:
    """{'section.field': [old, new]} for every setting that differs (train.steps included)."""
    a, b = old.to_dict(), new.to_dict()

    def value(config: RunConfig, data: dict, section: str, key: str):  # an intervention's default is not written
        return data[section][key] if key in data[section] else getattr(config.interventions, key)

    pairs = {f"{section}.{key}": [value(old, a, section, key), value(new, b, section, key)]
             for section in a for key in {**a[section], **b[section]}}
    return {key: pair for key, pair in pairs.items() if pair[0] != pair[1]}


def branch(source: Run, name: str, config: RunConfig, edit: str | None = None, root: Path | None = None) -> Run:
    """Create run `name` from `source`'s saved state with `config` (and `edit` applied); returns it unfinished:
    `runs.train_or_load(config, name)` then trains it on. An existing branch with the same config is returned as
    it is (its training may be under way or done)."""
    target = Run(run_path(name, root))
    if target.exists():
        target.check_config(config, "pick another branch name")
        return target
    if edit is not None and edit not in EDITS:
        raise ConfigError(f"edit must be one of {', '.join(EDITS)}, got {edit!r}")
    old = source.config
    if (old.model, old.task.vocab_size, old.task.seq_len, old.task.modulus) != (
            config.model, config.task.vocab_size, config.task.seq_len, config.task.modulus):
        raise ConfigError(f"{name}: a branch keeps the model's shape (model settings, vocabulary, sequence length)")
    model = initial_model(old)
    optimizer = make_optimizer(model, old)
    state = load_resume_state(source, model, optimizer)
    if state is None:
        raise CheckpointError(f"{source.path}: no saved state to branch from (resume/ is not kept for this run)")
    step = int(state["step"])
    if config.train.steps <= step:
        raise ConfigError(f"{name}: train.steps ({config.train.steps}) must go beyond the branch point ({step})")
    for group in optimizer.param_groups:  # the branch's optimizer settings from its first step on
        group.update(optimizer_settings(config))
    if edit is not None:
        EDITS[edit](model, optimizer)
    target.path.mkdir(parents=True)
    save_resume_state(target, model, optimizer, step, {k: v for k, v in state.items() if k != "step"})
    kept = [line for i, line in enumerate(source.metrics_path.read_text().splitlines(keepends=True))
            if i == 0 or int(line.split(",", 1)[0]) <= step]
    atomic_write_text(target.metrics_path, "".join(kept))
    atomic_write_text(target.path / BRANCH_FILE, json.dumps(
        {"source": source.name, "source_path": os.path.relpath(source.path, target.path), "step": step,
         "changed": changed_settings(old, config), "edit": edit},
        indent=2, sort_keys=True) + "\n")
    atomic_write_text(target.config_path, config.to_json() + "\n")
    return target


def history(run: Run) -> list[dict]:
    """The branch points from the first run to `run`: [{"run", "source", "step", "changed", "edit"}, ...],
    oldest first."""
    chain, current = [], run
    while (current.path / BRANCH_FILE).is_file():
        info = json.loads((current.path / BRANCH_FILE).read_text())
        chain.append({"run": current.name, **info})
        current = Run((current.path / info["source_path"]).resolve())
    return chain[::-1]


# ---------------------------------------------------------------------------- the chapter's rescue experiments
RESCUE_STEPS = 10_000  # each arm trains this long after the branch point
CHANGE_STEPS = 2_000  # a temporary change lasts this long, then the source's settings come back
# arm -> stages: (settings changed from the source's, steps of the stage, edit before it)
ARMS = {
    "continue": [({}, RESCUE_STEPS, None)],
    "fewer_2var_queries": [({"task.two_var_rate": 0.1}, CHANGE_STEPS, None), ({}, RESCUE_STEPS - CHANGE_STEPS, None)],
    "higher_lr": [({"train.lr": 3e-3}, CHANGE_STEPS, None), ({}, RESCUE_STEPS - CHANGE_STEPS, None)],
    "lower_lr": [({"train.lr": 3e-4}, RESCUE_STEPS, None)],
    "redraw_layer1_qk": [({}, RESCUE_STEPS, "redraw_layer1_qk")],
    "redraw_layer2_qk": [({}, RESCUE_STEPS, "redraw_layer2_qk")],
    "other_data_seed": [({"train.data_seed": 42}, RESCUE_STEPS, None)],
}


def arm_stages(arm: str, source: Run) -> list[tuple[str, RunConfig, str | None]]:
    """(run name, config, edit) of each stage of `arm` branched from `source` at its last step."""
    if arm not in ARMS:
        raise ConfigError(f"unknown rescue arm {arm!r}; arms are {', '.join(ARMS)}")
    stages, steps = [], source.config.train.steps
    for index, (changes, length, edit) in enumerate(ARMS[arm]):
        steps += length
        name = f"{source.name}_{arm}" + (f"_{index + 1}" if len(ARMS[arm]) > 1 else "")
        stages.append((name, source.config.replace(**changes, **{"train.steps": steps}), edit))
    return stages


def rescue(arm: str, source: Run, root: Path | None = None, train_missing: bool = False,
           progress: bool = False) -> list[Run] | None:
    """The finished stages of `arm` (training them first with `train_missing`); None when not all are there.
    A stage is finished when its `final.json` is there for its config: the committed branches keep their metrics,
    not their weights. `root`: the folder of the branches (default: `rescue/` in the runs folder)."""
    root = Path(root) if root is not None else current_root() / "rescue"
    runs, parent = [], source
    for name, config, edit in arm_stages(arm, source):
        existing = Run(run_path(name, root))
        if not (existing.final_path.is_file() and existing.config == config):
            if not train_missing:
                return None
            branch(parent, name, config, edit, root)
            existing = train_or_load(config, name=name, root=root, progress=progress)
        runs.append(existing)
        parent = existing
    return runs
