"""Study profiles: one declarative file per study (`studies/<name>.yaml` at the repository root) holding what is
particular to it: the paper's numbers with where it states them, the protocol's steps, the sweeps' grids and seeds,
the composition study's settings, the generality study's shapes. `paper.py`, `verdicts.py`, `sweep/designs.py`,
`generality_runs.py` and the chapters read their values from here, by calling `current()` (or `profile(name)`) when
they use them, so a follow-up study changes a file, not the code.

The study the package runs is `studies/paper.yaml` unless the environment variable ASSIGNADD_STUDY names another:
a profile's name in `studies/` or the path of a YAML file (a follow-up copies paper.yaml, edits it, and sets
ASSIGNADD_STUDY before it uses a study value: importing the package reads none). Its `overrides` (config changes,
e.g. `task.modulus: 97`) are the base of every sweep of the study.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Callable

import yaml

STUDIES = Path(__file__).resolve().parents[2] / "studies"
STUDY_ENV = "ASSIGNADD_STUDY"


@functools.lru_cache(maxsize=None)
def profile(name: str) -> dict:
    """The study profile `studies/<name>.yaml` (or the YAML file at a path), parsed (a clear error for a missing or
    empty one)."""
    path = Path(name) if name.endswith((".yaml", ".yml")) else STUDIES / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in STUDIES.glob("*.yaml"))) or "none"
        raise FileNotFoundError(f"no study profile {path} (profiles in {STUDIES}: {known})")
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"study profile {path} is empty or not a mapping")
    return data


_FIRST_READ: list[str] = []  # the study this process read first: the modules imported since took their values from it


class StudyChanged(RuntimeError):
    """ASSIGNADD_STUDY names another study than the one this process already read."""


def current_name() -> str:
    """The name of the study this process runs (`current`)."""
    name = os.environ.get(STUDY_ENV) or "paper"
    if _FIRST_READ and _FIRST_READ[0] != name:
        raise StudyChanged(f"this process already read the study {_FIRST_READ[0]!r} (the values used so far came from"
                           f" it); set {STUDY_ENV}={name} before the first use of assignadd_core's rules, sweeps or"
                           " chapters, i.e. in a new process")
    _FIRST_READ[:1] = [name]
    return name


def current() -> dict:
    """The profile of the study this process runs: the paper's (`paper`), or the one ASSIGNADD_STUDY names. Modules
    read their values from it by calling this (or `StudyMapping`) when they use them, never at import (but
    `sweep.designs` and `sweep.grid`, the study's sweeps), so a process runs one study: naming another one after the
    first read is refused (`StudyChanged`) rather than mixing the two."""
    return profile(current_name())


def study_overrides() -> dict:
    """The study's config changes (dotted keys), the base every one of its sweeps starts from: none for the paper."""
    overrides = current().get("overrides") or {}
    if not isinstance(overrides, dict):
        raise ValueError(f"a study profile's overrides must be a mapping of config keys, got {overrides!r}")
    return dict(overrides)


def run_name(shape: str, seed: int) -> str:
    """A run of a study of several shapes (the generality study): `<shape>_seed<seed>`."""
    return f"{shape}_seed{seed}"


def seed_range(spec: dict) -> tuple[int, ...]:
    """{first, count} -> (first, first + 1, ..., first + count - 1)."""
    return tuple(range(int(spec["first"]), int(spec["first"]) + int(spec["count"])))


class StudyMapping(Mapping):
    """A module's mapping of values the study sets (the rules' words, the study's sweeps), built by `build()` from the
    study this process runs when first read, not at import: a module names it as a plain constant
    (`RULES = StudyMapping(_rules)`) and reads it like a dict."""

    def __init__(self, build: Callable[[], dict]) -> None:
        self.build, self.built = build, {}

    def _values(self) -> dict:
        name = current_name()
        if name not in self.built:
            self.built[name] = self.build()
        return self.built[name]

    def __getitem__(self, key):
        return self._values()[key]

    def __iter__(self):
        return iter(self._values())

    def __len__(self) -> int:
        return len(self._values())
