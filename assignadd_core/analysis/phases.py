"""Find the three training phases of the paper's claim C1 in a run's metrics table, from its pool accuracies.

Pool accuracies are measured on 2,000 sequences, and single pools swing by tens of points from one
eval step to the next while a rule is forming (seed 44's both-forbidden pool: 0.04 ↔ 0.84), so every
rule reads a **smoothed curve** (rolling median, then rolling mean, each over `SMOOTH` eval rows) or asks for a
**sustained** crossing: the level must hold for `SUSTAIN` rows in a row. The progress measures are not read:
they corroborate a phase in the chapters, but a 12-row argmax share such as measure 3 flickers (seed 51's
dropped to 0 for 3,000 steps while the run answered 94 % of its 1-var queries). Rules, on the eval rows of
`metrics.csv` in step order:

* **addition** – the first step from which `0var_train` stays at or above `ADDITION_LEVEL` (0.95).
  It counts as "addition first" when, at that step, the variable pools (mean of `1var_train` and
  `2var_train`) are still below `VARIABLE_LOW` (0.9); `addition_first` reports it.
* **composition** – the first step from which `1var_train` stays at or above `verdicts.LEARNED_LEVEL` (0.9) for
  `SUSTAIN` rows (or to the end): the run has learned variable assignment. None when it never does.
* **jump** – up to the composition step (and after addition), the step with the largest rise, from the previous
  row, of the mean of `1var_train` and `2var_train` that is at least `JUMP_MIN_RISE` (0.1 within one eval
  interval) and lasts (the smoothed mean stays at least that much above its value before the rise for `SUSTAIN`
  rows; a one-row blip is passed over for the next largest rise). A run that composes through a gradual rise (seed 51: 1-var train 0.49 → 0.93
  over 1,200 steps, never 0.1 in 100) has a composition step and no jump; `steepest` and `steepest_rise` give
  its largest one-interval rise either way.
* **plateau and final rise** – the smoothed mean of the three var-restricted pools after the jump (or, without
  one, after the composition step). Its final level is the median of the last `FINAL_ROWS` rows; if that is at
  least `REFINED_LEVEL` (0.9), `refinement_end` is the first step from which the curve stays within
  `END_TOLERANCE` of the final level (or above it) to the end; a dip of fewer than `SUSTAIN` rows in the very
  last rows is passed over. Going back from there, the final rise starts where the curve last sat on a
  plateau (`PLATEAU_ROWS` rows within ±`PLATEAU_BAND`), or at the jump when there is none:
  `refinement_start` and `plateau` (its level). `refinement` is the step where the final rise crosses
  halfway from the plateau to the final level: the paper's refinement window is that final rise, not
  the quick partial rise right after the jump.

Step numbers are eval steps, so they are exact to the eval interval (100 steps in the paper runs).
How the jump rule changed is kept in `JUMP_RULE_HISTORY` (the chapters show it in a collapsed note).
"""
from __future__ import annotations

import pandas as pd

from ..core.data import VAR_RESTRICTED
from ..rules import paper
from ..rules.paper import steps_text
from ..rules.verdicts import LEARNED_LEVEL

ADDITION_LEVEL = 0.95
VARIABLE_LOW = 0.9
JUMP_MIN_RISE = 0.1
ROUNDING = 1e-9  # a rise written as 0.1 (0.8 -> 0.9) counts as 0.1, whatever its floating-point rounding
REFINED_LEVEL = 0.9
SMOOTH = 5  # rows in the rolling median (500 steps at the paper's eval interval)
SUSTAIN = 5  # rows a crossing must hold
FINAL_ROWS = 10
END_TOLERANCE = 0.05
PLATEAU_ROWS, PLATEAU_BAND = 10, 0.04
JUMP_SIGNAL = ("1var_train", "2var_train")
PAPER_STEPS = paper.WINDOWS  # the paper's jump and refinement windows, {"jump": (low, high), ...}

JUMP_RULE_HISTORY = (
    ("2026-11", "The jump was the largest sustained one-interval rise of the mean of 1-var train, 2-var train and"
                " measure 3. A one-row flicker of measure 3 put seed 51's jump at 10,401, long after its 1-var"
                " accuracy had passed 0.9 (4,001), and a dip of measure 3 hid seed 49's jump at 5,701."),
    ("2026-12", "The jump is read from the pool accuracies only (1-var and 2-var train), up to the step from which"
                " 1-var train stays at or above 0.9; the measures corroborate it in the chapters."),
)


def smooth(values: pd.Series) -> pd.Series:
    """A centred rolling median over `SMOOTH` rows (drops one-row spikes), then a rolling mean over as many
    (averages a pool that alternates between two values from row to row); shorter windows at the ends."""
    median = values.rolling(SMOOTH, center=True, min_periods=1).median()
    return median.rolling(SMOOTH, center=True, min_periods=1).mean()


def sustained_from(mask: pd.Series, rows: int = SUSTAIN) -> int | None:
    """Index of the first row from which `mask` holds for `rows` rows in a row (or to the end)."""
    values = mask.to_numpy()
    for i in range(len(values)):
        if values[i: i + rows].all():
            return i
    return None


def final_rise(restricted: pd.Series, jump_index: int) -> dict:
    """Positions (row indices) of the plateau start, halfway and end of the last rise to the final level."""
    curve = restricted.to_numpy()
    final = float(pd.Series(curve[-FINAL_ROWS:]).median())
    out = {"final_level": final, "start": None, "half": None, "end": None, "plateau": None}
    if final < REFINED_LEVEL:
        return out
    below = curve < final - END_TOLERANCE
    last = len(curve) - 1
    dips = [i for i in range(max(len(curve) - (SUSTAIN - 1), jump_index + 1), len(curve)) if below[i]]
    if dips:  # a dip among the last SUSTAIN - 1 rows (fewer than SUSTAIN) is passed over, wherever it ends
        last = dips[0] - 1
    end = None
    for i in range(last, jump_index - 1, -1):  # the first row from which it stays near the final level
        if below[i]:
            break
        end = i
    if end is None or end <= jump_index:
        return out  # already refined at the jump: no separate final rise
    start = jump_index
    for i in range(end - 1, jump_index + PLATEAU_ROWS - 2, -1):  # the nearest plateau before the rise
        window = curve[i - PLATEAU_ROWS + 1: i + 1]
        if window.max() - window.min() <= 2 * PLATEAU_BAND and curve[i] < final - 2 * END_TOLERANCE:
            start = i
            break
    plateau = float(curve[start])
    if final - plateau <= 0.1:
        return out
    half = next(i for i in range(start, end + 1) if curve[i] >= (plateau + final) / 2)
    out.update(start=start, half=half, end=end, plateau=plateau)
    return out


def composition_index(one_var: pd.Series) -> int | None:
    """Row from which 1-var train stays at or above `LEARNED_LEVEL` for `SUSTAIN` rows (or to the end)."""
    return sustained_from(one_var.reset_index(drop=True) >= LEARNED_LEVEL)


def detect_phases(metrics: pd.DataFrame) -> dict:
    """Phase steps of one run: keys addition, addition_first, composition, jump, jump_rise, steepest,
    steepest_rise, refinement, refinement_start, refinement_end, plateau, final_level (None where not found)."""
    missing = [c for c in ("step", "0var_train", *JUMP_SIGNAL, *VAR_RESTRICTED) if c not in metrics.columns]
    if missing:
        raise ValueError(f"metrics table lacks column(s) {', '.join(missing)}")
    m = metrics.sort_values("step").reset_index(drop=True)
    steps = m["step"]
    result = {"addition": None, "addition_first": None, "composition": None, "jump": None, "jump_rise": None,
              "steepest": None, "steepest_rise": None, "refinement": None, "refinement_start": None,
              "refinement_end": None, "plateau": None, "final_level": None}

    at = sustained_from(smooth(m["0var_train"]) >= ADDITION_LEVEL)
    if at is not None:
        result["addition"] = int(steps[at])
        row = m.iloc[at]
        result["addition_first"] = bool((row["1var_train"] + row["2var_train"]) / 2 < VARIABLE_LOW)

    composed_at = composition_index(m["1var_train"])
    if composed_at is None:
        return result
    result["composition"] = int(steps[composed_at])
    raw = m[list(JUMP_SIGNAL)].mean(axis=1)
    signal, rise = smooth(raw), raw.diff()
    window = rise[(steps <= steps[composed_at]) & ((steps > steps[at]) if at is not None else True)].dropna()
    start = composed_at
    for rank, index in enumerate(window.sort_values(ascending=False).index):  # largest rises first
        if rank == 0:
            result["steepest"], result["steepest_rise"] = int(steps[index]), float(window[index])
        if not window[index] >= JUMP_MIN_RISE - ROUNDING:
            break
        before = signal[max(index - SMOOTH, 0)]  # a jump lasts: the smoothed curve stays up after it
        if bool((signal[index + SMOOTH // 2: index + SMOOTH // 2 + SUSTAIN] >= before + JUMP_MIN_RISE - ROUNDING).all()):
            result["jump"], result["jump_rise"] = int(steps[index]), float(window[index])
            start = int(index)
            break

    restricted = smooth(m[list(VAR_RESTRICTED)].mean(axis=1))
    rise2 = final_rise(restricted, start)
    result["final_level"] = rise2["final_level"]
    if rise2["end"] is not None:
        result.update(refinement_start=int(steps[rise2["start"]]), refinement=int(steps[rise2["half"]]),
                      refinement_end=int(steps[rise2["end"]]), plateau=rise2["plateau"])
    return result


def phases_table(runs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per run with its detected steps, plus the paper's row for comparison."""
    rows = [{"run": name, **detect_phases(metrics)} for name, metrics in runs.items()]
    rows.append({"run": "paper", "jump": steps_text(paper.JUMP_STEPS),
                 "refinement": f"~{steps_text(paper.REFINEMENT_STEPS)}"})
    return pd.DataFrame(rows)


def jumps_by_step(phases: dict[str, dict], names) -> dict[int, list[str]]:
    """The runs among `names` that jump, grouped by their jump step, in step order: {2701: ['seed42', 'seed44'], ...}."""
    grouped: dict[int, list[str]] = {}
    for name in names:
        if phases[name]["jump"] is not None:
            grouped.setdefault(int(phases[name]["jump"]), []).append(name)
    return dict(sorted(grouped.items()))


def longest_plateau(metrics: dict[str, pd.DataFrame], phases: dict[str, dict], names,
                    pools=VAR_RESTRICTED) -> dict | None:
    """Of `names` (runs with a jump and a final rise), the one that waits longest between its jump and the start of its
    final rise: {'run', 'wait' (steps), 'levels': {pool: the pool's median over that stretch}}; None without one."""
    found = [n for n in names if phases[n]["jump"] is not None and phases[n]["refinement_start"] is not None]
    if not found:
        return None
    run = max(found, key=lambda n: phases[n]["refinement_start"] - phases[n]["jump"])
    p, m = phases[run], metrics[run]
    stretch = m[(m["step"] > p["jump"]) & (m["step"] < p["refinement_start"])]
    return {"run": run, "wait": int(p["refinement_start"] - p["jump"]),
            "levels": {pool: float(stretch[pool].median()) for pool in pools}}
