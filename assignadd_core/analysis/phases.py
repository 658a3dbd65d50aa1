"""Find the three training phases of SPEC §7 (C1) in a run's metrics table.

Rules (each on the eval rows of `metrics.csv`, in step order):

* **addition** – the first step at which `0var_train` reaches `ADDITION_LEVEL` (0.95). The phase
  counts as "addition first" when, at that step, the variable pools (mean of `1var_train` and
  `2var_train`) are still below `VARIABLE_LOW` (0.9); `addition_first` reports it.
* **jump** – the variable-assignment jump: after the addition step (variable pools also rise
  while addition is being learned, by guessing from the literal operand), the step whose row shows
  the largest rise, from the previous row, of the mean of `1var_train`, `2var_train` and the
  layer-2 identity measure `m3_l2_var_identity_qk`. Only a rise of at least `JUMP_MIN_RISE` (0.1
  in one eval interval) counts; otherwise None.
* **refinement** – the mean of the three var-restricted pools after the jump: its plateau is the
  lowest value after the jump; if it later reaches `REFINED_LEVEL` (0.9), the refinement window
  runs from the first step 10 % of the way from plateau to its maximum (`refinement_start`) to
  the first step 90 % of the way (`refinement_end`), and `refinement` is the 50 % crossing.
  Otherwise (never refined, or already high without a dip) the keys are None.

Step numbers are eval steps, so they are exact to the eval interval (100 steps in the paper runs).
"""
from __future__ import annotations

import pandas as pd

ADDITION_LEVEL = 0.95
VARIABLE_LOW = 0.9
JUMP_MIN_RISE = 0.1
REFINED_LEVEL = 0.9
VAR_RESTRICTED = ("1var_var_restricted", "2var_var_restricted_1", "2var_var_restricted_2")
JUMP_SIGNAL = ("1var_train", "2var_train", "m3_l2_var_identity_qk")
PAPER_STEPS = {"jump": (5300, 5400), "refinement": (14500, 16000)}


def _first_step(steps: pd.Series, mask: pd.Series) -> int | None:
    hits = steps[mask.to_numpy()]
    return int(hits.iloc[0]) if len(hits) else None


def detect_phases(metrics: pd.DataFrame) -> dict:
    """Phase steps of one run: keys addition, addition_first, jump, jump_rise, refinement,
    refinement_start, refinement_end, plateau (values None where a phase is not found)."""
    missing = [c for c in ("step", "0var_train", *JUMP_SIGNAL, *VAR_RESTRICTED) if c not in metrics.columns]
    if missing:
        raise ValueError(f"metrics table lacks column(s) {', '.join(missing)}")
    m = metrics.sort_values("step").reset_index(drop=True)
    steps = m["step"]
    result = {"addition": None, "addition_first": None, "jump": None, "jump_rise": None, "refinement": None,
              "refinement_start": None, "refinement_end": None, "plateau": None}

    addition = _first_step(steps, m["0var_train"] >= ADDITION_LEVEL)
    if addition is not None:
        row = m[steps == addition].iloc[0]
        result["addition"] = addition
        result["addition_first"] = bool((row["1var_train"] + row["2var_train"]) / 2 < VARIABLE_LOW)

    signal = m[list(JUMP_SIGNAL)].mean(axis=1)
    rise = signal.diff()
    if addition is not None:
        rise = rise[steps > addition]
    if len(rise.dropna()) and rise.max() >= JUMP_MIN_RISE:
        at = int(rise.idxmax())
        result["jump"], result["jump_rise"] = int(steps[at]), float(rise[at])

    if result["jump"] is not None:
        restricted = m[list(VAR_RESTRICTED)].mean(axis=1)
        after = restricted[steps >= result["jump"]]
        low_at = after.idxmin()
        plateau = float(after[low_at])
        later = restricted[low_at:]
        top = float(later.max())
        result["plateau"] = plateau
        if top >= REFINED_LEVEL and top - plateau > 0.1:
            span = top - plateau
            later_steps = steps[low_at:]
            for key, fraction in (("refinement_start", 0.1), ("refinement", 0.5), ("refinement_end", 0.9)):
                result[key] = _first_step(later_steps, later >= plateau + fraction * span)
    return result


def phases_table(runs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per run with its detected steps, plus the paper's row for comparison."""
    rows = [{"run": name, **detect_phases(metrics)} for name, metrics in runs.items()]
    rows.append({"run": "paper", "jump": "5,300–5,400", "refinement": "~14,500–16,000"})
    return pd.DataFrame(rows)
