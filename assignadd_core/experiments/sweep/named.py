"""The study's sweeps by name (`designs.SWEEPS`), for the sweep machinery: `designs` is imported when a sweep is first
asked for, since importing it reads the study profile."""
from __future__ import annotations

from ...core.config import ConfigError
from .definition import Sweep


def study_sweeps() -> dict[str, Sweep]:
    """The study's sweeps by name (`designs.SWEEPS`)."""
    from .designs import SWEEPS  # not at the top: importing `designs` reads the study profile
    return SWEEPS


def get_sweep(name: str) -> Sweep:
    sweeps = study_sweeps()
    if name not in sweeps:
        raise ConfigError(f"unknown sweep {name!r}; sweeps are {', '.join(sweeps)}")
    return sweeps[name]
