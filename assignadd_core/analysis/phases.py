"""Find the three training phases of the paper's claim C1 in a run's metrics table.

Pool accuracies are measured on 2,000 sequences, and single pools swing by tens of points from one
eval step to the next while a rule is forming (seed 44's both-forbidden pool: 0.04 ↔ 0.84), so every
rule reads a **smoothed curve** (rolling median, then rolling mean, each over `SMOOTH` eval rows) and asks for a **sustained** crossing: the level
must hold for `SUSTAIN` rows in a row. Rules, on the eval rows of `metrics.csv` in step order:

* **addition** – the first step from which `0var_train` stays at or above `ADDITION_LEVEL` (0.95).
  It counts as "addition first" when, at that step, the variable pools (mean of `1var_train` and
  `2var_train`) are still below `VARIABLE_LOW` (0.9); `addition_first` reports it.
* **jump** – after addition, the step with the largest rise, from the previous row, of the mean of
  `1var_train`, `2var_train` and the layer-2 identity measure `m3_l2_var_identity_qk` (raw: a jump is a
  rise of at least `JUMP_MIN_RISE`, 0.1, within one eval interval), provided it lasts: the smoothed mean
  stays at least that much above its value before the rise for `SUSTAIN` rows; otherwise the next largest
  rise is tried, and None when no rise qualifies. (A first version measured the one-interval rise on the
  smoothed curve, where smoothing spreads a 300-step jump over nine rows; it missed seed 42's jump.)
* **plateau and final rise** – the smoothed mean of the three var-restricted pools after the jump. Its
  final level is the median of the last `FINAL_ROWS` rows; if that is at least `REFINED_LEVEL` (0.9),
  `refinement_end` is the first step from which the curve stays within `END_TOLERANCE` of the final
  level (or above it) to the end; a dip of fewer than `SUSTAIN` rows in the very last rows is passed
  over (before, such a dip hid the whole final rise; mutation testing found it, no run had it). Going back from there, the final rise starts where the curve last sat on a
  plateau (`PLATEAU_ROWS` rows within ±`PLATEAU_BAND`), or at the jump when there is none:
  `refinement_start` and `plateau` (its level). `refinement` is the step where the final rise crosses
  halfway from the plateau to the final level: the paper's refinement window is that final rise, not
  the quick partial rise right after the jump.

Step numbers are eval steps, so they are exact to the eval interval (100 steps in the paper runs).
"""
from __future__ import annotations

import pandas as pd

ADDITION_LEVEL = 0.95
VARIABLE_LOW = 0.9
JUMP_MIN_RISE = 0.1
REFINED_LEVEL = 0.9
SMOOTH = 5  # rows in the rolling median (500 steps at the paper's eval interval)
SUSTAIN = 5  # rows a crossing must hold
FINAL_ROWS = 10
END_TOLERANCE = 0.05
PLATEAU_ROWS, PLATEAU_BAND = 10, 0.04
VAR_RESTRICTED = ("1var_var_restricted", "2var_var_restricted_1", "2var_var_restricted_2")
JUMP_SIGNAL = ("1var_train", "2var_train", "m3_l2_var_identity_qk")
PAPER_STEPS = {"jump": (5300, 5400), "refinement": (14500, 16000)}


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


def detect_phases(metrics: pd.DataFrame) -> dict:
    """Phase steps of one run: keys addition, addition_first, jump, jump_rise, refinement,
    refinement_start, refinement_end, plateau, final_level (values None where a phase is not found)."""
    missing = [c for c in ("step", "0var_train", *JUMP_SIGNAL, *VAR_RESTRICTED) if c not in metrics.columns]
    if missing:
        raise ValueError(f"metrics table lacks column(s) {', '.join(missing)}")
    m = metrics.sort_values("step").reset_index(drop=True)
    steps = m["step"]
    result = {"addition": None, "addition_first": None, "jump": None, "jump_rise": None, "refinement": None,
              "refinement_start": None, "refinement_end": None, "plateau": None, "final_level": None}

    at = sustained_from(smooth(m["0var_train"]) >= ADDITION_LEVEL)
    if at is not None:
        result["addition"] = int(steps[at])
        row = m.iloc[at]
        result["addition_first"] = bool((row["1var_train"] + row["2var_train"]) / 2 < VARIABLE_LOW)

    raw = m[list(JUMP_SIGNAL)].mean(axis=1)
    signal = smooth(raw)
    rise = raw.diff()  # a jump is sharp: one eval interval on the raw curve ...
    if at is not None:
        rise = rise[steps > steps[at]]
    for index in rise.sort_values(ascending=False).index:  # largest rises first; the first sustained one
        if not rise[index] >= JUMP_MIN_RISE:
            break
        before = signal[max(index - SMOOTH, 0)]  # ... and it lasts: the smoothed curve stays up
        if bool((signal[index + SMOOTH // 2: index + SMOOTH // 2 + SUSTAIN] >= before + JUMP_MIN_RISE).all()):
            result["jump"], result["jump_rise"] = int(steps[index]), float(rise[index])
            jump_index = int(index)
            break

    if result["jump"] is not None:
        restricted = smooth(m[list(VAR_RESTRICTED)].mean(axis=1))
        rise2 = final_rise(restricted, jump_index)
        result["final_level"] = rise2["final_level"]
        if rise2["end"] is not None:
            result.update(refinement_start=int(steps[rise2["start"]]), refinement=int(steps[rise2["half"]]),
                          refinement_end=int(steps[rise2["end"]]), plateau=rise2["plateau"])
    return result


def phases_table(runs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per run with its detected steps, plus the paper's row for comparison."""
    rows = [{"run": name, **detect_phases(metrics)} for name, metrics in runs.items()]
    rows.append({"run": "paper", "jump": "5,300–5,400", "refinement": "~14,500–16,000"})
    return pd.DataFrame(rows)
