"""The paper's numbers, each with where the paper states it (Exoo, Bietti, Sous 2026, arXiv 2605.31497), read from
the study profile `studies/paper.yaml` (`study`).

Chapters, figures and verdict rules import them from here; none writes a paper number out itself.
"""
from __future__ import annotations

from dataclasses import dataclass

from .study import paper


@dataclass(frozen=True)
class PaperNumber:
    value: object
    where: str  # where in the paper it is stated

    def __str__(self) -> str:
        return str(self.value)


def _number(key: str) -> PaperNumber:
    entry = paper()["paper_numbers"][key]
    value = entry["value"]
    return PaperNumber(tuple(value) if isinstance(value, list) else value, entry["where"])


HELDOUT_EXACT = _number("heldout_exact")
JUMP_STEPS = _number("jump_steps")
REFINEMENT_STEPS = _number("refinement_steps")
MAIN_STEPS = _number("main_steps")
SWEEP_STEPS = _number("sweep_steps")
F_THRESHOLD = _number("f_threshold")
R_THRESHOLD = _number("r_threshold")
SEEDS_SHOWN = _number("seeds_shown")
N_PARAMS = _number("n_params")


def steps_text(window) -> str:
    """'5,300–5,400' for a (low, high) window of steps."""
    low, high = window.value if isinstance(window, PaperNumber) else window
    return f"{low:,}–{high:,}"
