"""Which checkpoints of a run are committed: the few the chapters need, not the 100-step series.

The final model is always kept (`model.safetensors`). From `checkpoints/` we keep the eval steps
just before and after each detected phase transition (`analysis.phases`), a handful spread evenly
over training, and any extra steps a chapter asks for (rounded to the nearest existing eval step).
`chapter_steps` names what the chapters and the provenance test read: steps 1 and 201 (the provenance
test retrains them), and one checkpoint every 1,000 steps from the jump to 1,000 steps after the
final rise of the var-restricted pools (the circuits and generalization chapters follow the repair there).

    python -m assignadd_core.experiments.artifacts runs/seed42      # prints the checkpoint files to commit (git add -f)
"""
from __future__ import annotations

import sys

from ..analysis.phases import detect_phases
from ..core.run_folder import Run

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


PROVENANCE_STEPS = (1, 201)
WINDOW_EVERY = 1000


def chapter_steps(run: Run) -> tuple[int, ...]:
    """The steps the chapters read beyond the phase transitions (see the module docstring)."""
    phases = detect_phases(run.metrics())
    start = phases.get("jump")
    end = phases.get("refinement_end") or start
    steps = list(PROVENANCE_STEPS)
    if start is not None:
        steps += list(range(start, end + WINDOW_EVERY + 1, WINDOW_EVERY))
    return tuple(steps)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m assignadd_core.experiments.artifacts RUN_DIR", file=sys.stderr)
        return 2
    run = Run(args[0])
    for step in checkpoints_to_keep(run, extra=chapter_steps(run)):
        print(run.checkpoint_path(step))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
