"""The paper's numbers, each with where the paper states it (Exoo, Bietti, Sous 2026, arXiv 2605.31497), read from
the study profile `studies/paper.yaml` (`study`) when used.

Chapters, figures and verdict rules import them from here; none writes a paper number out itself.
"""
from __future__ import annotations

from .study import StudyMapping, current


class PaperNumber:
    """One of the paper's numbers, by its name in the study profile's `paper_numbers`: `value` (a window as a tuple)
    and `where` (where in the paper it is stated) are read from the study this process runs when used."""

    def __init__(self, key: str) -> None:
        self.key = key

    def _entry(self) -> dict:
        return current()["paper_numbers"][self.key]

    @property
    def value(self):
        value = self._entry()["value"]
        return tuple(value) if isinstance(value, list) else value

    @property
    def where(self) -> str:
        return self._entry()["where"]

    def __repr__(self) -> str:  # as the dataclass it was: the rule lock fingerprints a paper number by its repr
        return f"PaperNumber(value={self.value!r}, where={self.where!r})"

    def __str__(self) -> str:
        return str(self.value)


# The paper's numbers, each under its name in lower case in the profile's paper_numbers.
HELDOUT_EXACT = PaperNumber("heldout_exact")
JUMP_STEPS = PaperNumber("jump_steps")
REFINEMENT_STEPS = PaperNumber("refinement_steps")
MAIN_STEPS = PaperNumber("main_steps")
SWEEP_STEPS = PaperNumber("sweep_steps")
F_THRESHOLD = PaperNumber("f_threshold")
R_THRESHOLD = PaperNumber("r_threshold")
SEEDS_SHOWN = PaperNumber("seeds_shown")
N_PARAMS = PaperNumber("n_params")
# The paper's jump and refinement windows, {"jump": (low, high), "refinement": (low, high)}.
WINDOWS = StudyMapping(lambda: {"jump": JUMP_STEPS.value, "refinement": REFINEMENT_STEPS.value})


def steps_text(window) -> str:
    """'5,300–5,400' for a (low, high) window of steps."""
    low, high = window.value if isinstance(window, PaperNumber) else window
    return f"{low:,}–{high:,}"
