"""Study profiles: one declarative file per study (`studies/<name>.yaml` at the repository root) holding what is
particular to it: the paper's numbers with where it states them, the protocol's steps, the sweeps' grids and seeds,
the composition study's settings, the generality study's shapes. `paper.py`, `sweep/grid.py`, `generality.py` and the
chapters read their values from here, so a follow-up study changes a file, not the code.
"""
from __future__ import annotations

import functools
from pathlib import Path

STUDIES = Path(__file__).resolve().parent.parent / "studies"


@functools.lru_cache(maxsize=None)
def profile(name: str) -> dict:
    """The study profile `studies/<name>.yaml`, parsed (a clear error for a missing or empty one)."""
    import yaml
    path = STUDIES / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in STUDIES.glob("*.yaml"))) or "none"
        raise FileNotFoundError(f"no study profile {path.name} in {STUDIES} (profiles: {known})")
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"study profile {path} is empty or not a mapping")
    return data


def paper() -> dict:
    return profile("paper")


def run_name(shape: str, seed: int) -> str:
    """A run of a study of several shapes (the generality study): `<shape>_seed<seed>`."""
    return f"{shape}_seed{seed}"


def seed_range(spec: dict) -> tuple[int, ...]:
    """{first, count} -> (first, first + 1, ..., first + count - 1)."""
    return tuple(range(int(spec["first"]), int(spec["first"]) + int(spec["count"])))
