"""The paper's numbers, each once, with where the paper states it (Exoo, Bietti, Sous 2026, arXiv 2605.31497).

Chapters, figures and verdict rules import them from here; none writes a paper number out itself.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PaperNumber:
    value: object
    where: str  # where in the paper it is stated

    def __str__(self) -> str:
        return str(self.value)


HELDOUT_EXACT = PaperNumber(0.994, "abstract and results: 0-var held-out exact set after training")
JUMP_STEPS = PaperNumber((5300, 5400), "training-dynamics figure: the jump when variable assignment forms")
REFINEMENT_STEPS = PaperNumber((14500, 16000), "training-dynamics figure: refinement of the var-restricted pools")
MAIN_STEPS = PaperNumber(40_000, "training setup: the main run")
SWEEP_STEPS = PaperNumber(30_000, "training setup: each run of the data-threshold sweeps")
F_THRESHOLD = PaperNumber(0.25, "data thresholds: generalization to unseen pairs needs f ≈ 0.25")
R_THRESHOLD = PaperNumber(0.2, "data thresholds: 2-var generalization needs r ≈ 0.2")
SEEDS_SHOWN = PaperNumber(1, "the paper shows one training run (seed 42)")


def steps_text(window) -> str:
    """'5,300–5,400' for a (low, high) window of steps."""
    low, high = window.value if isinstance(window, PaperNumber) else window
    return f"{low:,}–{high:,}"
