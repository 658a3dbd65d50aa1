"""Study profiles: one declarative file per study (`studies/<name>.yaml` at the repository root) holding what is
particular to it: the paper's numbers with where it states them, the protocol's steps, the sweeps' grids and seeds,
the composition study's settings, the generality study's shapes. `paper.py`, `sweep/designs.py`,
`generality_runs.py` and the chapters read their values from here, on first use (`on_first_use`), so a follow-up
study changes a file, not the code.

The study the package runs is `studies/paper.yaml` unless the environment variable ASSIGNADD_STUDY names another:
a profile's name in `studies/` or the path of a YAML file (a follow-up copies paper.yaml, edits it, and sets
ASSIGNADD_STUDY before it uses a study value: importing the package reads none). Its `overrides` (config changes,
e.g. `task.modulus: 97`) are the base of every sweep of the study.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Callable

STUDIES = Path(__file__).resolve().parents[2] / "studies"
STUDY_ENV = "ASSIGNADD_STUDY"


@functools.lru_cache(maxsize=None)
def profile(name: str) -> dict:
    """The study profile `studies/<name>.yaml` (or the YAML file at a path), parsed (a clear error for a missing or
    empty one)."""
    import yaml
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


def current() -> dict:
    """The profile of the study this process runs: the paper's (`paper`), or the one ASSIGNADD_STUDY names. The rules,
    sweeps and chapters' modules take their values from it on first use (`on_first_use`), so a process runs one
    study: naming another one after that is refused (`StudyChanged`) rather than mixing the two."""
    name = os.environ.get(STUDY_ENV) or "paper"
    if _FIRST_READ and _FIRST_READ[0] != name:
        raise StudyChanged(f"this process already read the study {_FIRST_READ[0]!r} (the modules imported so far took"
                           f" their values from it); set {STUDY_ENV}={name} before the first import of assignadd_core's"
                           " rules, sweeps or chapters, i.e. in a new process")
    _FIRST_READ[:1] = [name]
    return profile(name)


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


class on_first_use:  # noqa: N801 (used as a module's `__getattr__`, read as a phrase)
    """A module's values taken from the study, read on first use rather than at import, so a process may name its
    study (ASSIGNADD_STUDY) after importing any module.

    The module declares each such name with its type and no value (`STEPS: int`) and then
    `_study = __getattr__ = on_first_use(globals(), _from_study)`, where `_from_study()` reads the study and returns
    the values by name, exactly the declared ones. The first use computes them all and stores them in the module,
    where every later use finds them as ordinary globals: from outside, `module.NAME` or `from module import NAME`
    (through the module's `__getattr__`, PEP 562); from inside, a function calls `_study.read()` before it uses
    them."""

    def __init__(self, namespace: dict, compute: Callable[[], dict]) -> None:
        self.namespace, self.compute, self.done = namespace, compute, False
        self.declared = {name for name in namespace.get("__annotations__", {}) if name not in namespace}

    def read(self) -> None:
        if not self.done:
            values = self.compute()
            if set(values) != self.declared:
                raise RuntimeError(f"{self.namespace['__name__']} declares the study values {sorted(self.declared)}"
                                   f" but computes {sorted(values)}")
            self.namespace.update(values)
            self.done = True

    def __call__(self, name: str):
        if name.startswith("__"):  # a probe for a module attribute (__path__, __all__, ...), not a study value
            raise AttributeError(f"module {self.namespace['__name__']!r} has no attribute {name!r}")
        self.read()
        try:
            return self.namespace[name]
        except KeyError:
            raise AttributeError(f"module {self.namespace['__name__']!r} has no attribute {name!r}") from None
