"""Which checkpoints of a run are committed: the few the chapters need, not the 100-step series.

The final model is always kept (`model.safetensors`). From `checkpoints/` we keep the eval steps
just before and after each detected phase transition (`analysis.phases`), a handful spread evenly
over training, and any extra steps a chapter asks for (rounded to the nearest existing eval step).
"""
from __future__ import annotations

from .analysis.phases import detect_phases
from .runs import Run

SPREAD_POINTS = 5
PHASE_KEYS = ("addition", "jump", "refinement_start", "refinement", "refinement_end")


def neighbours(steps: list[int], step: int) -> list[int]:
    """The eval step before `step` and `step` itself (the 'just before and after' pair)."""
    if step not in steps:
        return []
    i = steps.index(step)
    return steps[max(i - 1, 0): i + 1]


def checkpoints_to_keep(run: Run, extra: tuple[int, ...] = (), spread_points: int = SPREAD_POINTS) -> list[int]:
    available = run.checkpoint_steps()
    if not available:
        return []
    keep: set[int] = set()
    phases = detect_phases(run.metrics())
    for key in PHASE_KEYS:
        if phases.get(key) is not None:
            keep.update(neighbours(available, phases[key]))
    for k in range(spread_points):
        target = available[0] + k * (available[-1] - available[0]) / max(spread_points - 1, 1)
        keep.add(min(available, key=lambda s: abs(s - target)))
    for step in extra:
        keep.add(min(available, key=lambda s: abs(s - step)))
    keep.discard(run.config.train.steps)  # the last step is model.safetensors, committed anyway
    return sorted(keep)
