"""The paper's numbers, each with where the paper states it (Exoo, Bietti, Sous 2026, arXiv 2605.31497), read from
the study profile `studies/paper.yaml` (`study`) on first use.

Chapters, figures and verdict rules import them from here; none writes a paper number out itself.
"""
from __future__ import annotations

from dataclasses import dataclass

from .study import current, on_first_use


@dataclass(frozen=True)
class PaperNumber:
    value: object
    where: str  # where in the paper it is stated

    def __str__(self) -> str:
        return str(self.value)


def _number(key: str) -> PaperNumber:
    entry = current()["paper_numbers"][key]
    value = entry["value"]
    return PaperNumber(tuple(value) if isinstance(value, list) else value, entry["where"])


# The paper's numbers, read from the study on first use: each under its name in lower case in the profile's
# paper_numbers.
HELDOUT_EXACT: PaperNumber
JUMP_STEPS: PaperNumber
REFINEMENT_STEPS: PaperNumber
MAIN_STEPS: PaperNumber
SWEEP_STEPS: PaperNumber
F_THRESHOLD: PaperNumber
R_THRESHOLD: PaperNumber
SEEDS_SHOWN: PaperNumber
N_PARAMS: PaperNumber


def _from_study() -> dict:
    return {name: _number(name.lower()) for name in _study.declared}


_study = __getattr__ = on_first_use(globals(), _from_study)


def steps_text(window) -> str:
    """'5,300–5,400' for a (low, high) window of steps."""
    low, high = window.value if isinstance(window, PaperNumber) else window
    return f"{low:,}–{high:,}"
