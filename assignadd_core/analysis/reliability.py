"""How reliable are the three phases? Statistics of the detected phases over many seeds of one config.

* `phase_steps`: one row per run with the detector's steps and whether the run composed (a jump was found).
* `step_statistics`: median and range of each transition over the runs that reached it.
* `composition_rate`: the share of runs that composed, with an exact (Clopper–Pearson) binomial interval.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from .phases import detect_phases

TRANSITIONS = ("addition", "jump", "refinement_start", "refinement", "refinement_end")


def phase_steps(metrics_by_run: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Detected steps per run (None where not found), plus `composed` and the last step of the run."""
    rows = []
    for name, metrics in metrics_by_run.items():
        p = detect_phases(metrics)
        rows.append({"run": name, **{k: p[k] for k in TRANSITIONS}, "composed": p["jump"] is not None,
                     "all_three": p["jump"] is not None and p["refinement"] is not None,
                     "last_step": int(metrics["step"].max())})
    return pd.DataFrame(rows).set_index("run")


def step_statistics(steps: pd.DataFrame) -> pd.DataFrame:
    """Per transition: how many runs reached it, median, min and max step."""
    rows = []
    for key in TRANSITIONS:
        values = pd.to_numeric(steps[key], errors="coerce").dropna()
        rows.append({"transition": key, "runs": int(len(values)),
                     "median": float(values.median()) if len(values) else None,
                     "min": int(values.min()) if len(values) else None,
                     "max": int(values.max()) if len(values) else None})
    return pd.DataFrame(rows).set_index("transition")


@dataclass(frozen=True)
class Rate:
    successes: int
    trials: int
    low: float
    high: float

    @property
    def value(self) -> float:
        return self.successes / self.trials if self.trials else float("nan")

    def describe(self) -> str:
        return (f"{self.successes} of {self.trials} ({self.value:.0%}; 95 % interval {self.low:.0%}–{self.high:.0%})"
                if self.trials else "no runs")


def composition_rate(successes: int, trials: int, level: float = 0.95) -> Rate:
    """The share with its exact binomial (Clopper–Pearson) interval."""
    from scipy.stats import binomtest
    if trials == 0:
        return Rate(0, 0, float("nan"), float("nan"))
    ci = binomtest(successes, trials).proportion_ci(confidence_level=level, method="exact")
    return Rate(successes, trials, float(ci.low), float(ci.high))
