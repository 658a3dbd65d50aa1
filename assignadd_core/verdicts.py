"""Every verdict rule of the book: a function from measured numbers to a `Verdict`.

Each rule is fixed here, stated in words in `RULES` (the chapters print it before the result, the claims
chapter lists it beside the verdict), and unit-tested on inputs that produce each outcome. A chapter
measures, calls the rule and records what it returns; no rule lives only in a notebook cell.

The rules were rewritten before the runs on the authors' data protocol were evaluated, after a review
found that several old ones could hardly come out negative (see each claim's chapter for what changed).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_YET_RUN = "reproduced", "partly", "not reproduced", "not yet run"
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_YET_RUN)

# Thresholds, named once: a chapter that prints a rule prints these numbers.
PAPER_HELDOUT = 0.994  # C2: the paper's 0-var held-out exact accuracy
HELDOUT_MARGIN = 0.01  # C2: within one point of the paper
SWAP_HELDOUT_LEVEL = 0.95  # C2: held-out pairs whose swap is held out too
POOL_LEVEL = 0.95  # C3: each var-restricted pool at the end of training
PREV_TOKEN_LEVEL, COPY_LEVEL = 0.9, 0.95  # C4: measures 2 and 5
LOOKUP_BROKEN, ADDITION_KEPT = 0.5, 0.9  # C4: ablation at value positions
IDENTITY_LEVEL, READ_LEVEL, RELABEL_LEVEL = 0.9, 0.9, 0.8  # C5: measures 3 and 6, relabel patch followed
MATCHED_LEVEL, CEILING_GAP, BASELINE_GAP, PATCH_KEPT = 0.9, 0.05, 0.2, 0.95  # C6
MAX_KEY_FREQUENCIES, SINGLE_NEURON_SHARE = 7, 0.5  # C7: "a few" of 29; most active neurons above R² 0.9
MIN_WINDOW = 3  # C10: checkpoints in the window


@dataclass(frozen=True)
class Verdict:
    verdict: str  # one of VERDICTS
    text: str  # the numbers that decided it, in words

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")


RULES = {
    "C1": ("Read on the runs that formed variable assignment (a jump was detected). A run shows the three phases"
           " when addition, the jump and the final rise of the var-restricted pools are all detected, addition"
           " comes first (variable pools below 0.9 when 0-var train reaches 0.95) and addition ≤ jump < final"
           " rise. Reproduced if every such run shows them; partly if some do; not reproduced if none does or no"
           " run formed variable assignment. The steps are compared with the paper's, not judged: they are"
           " seed-specific."),
    "C2": (f"Reproduced if every run reaches at least {PAPER_HELDOUT - HELDOUT_MARGIN:.3f} on the 0-var held-out"
           f" exact set (the paper's {PAPER_HELDOUT:.1%} minus one point) and at least {SWAP_HELDOUT_LEVEL} on the"
           " held-out pairs whose swapped pair is held out too (where looking up (n2, n1) cannot help); partly"
           " if every run passes the first condition only, or some run reaches 0.9 on the full set; not"
           " reproduced otherwise."),
    "C3": (f"Read on the runs that formed variable assignment. Reproduced if every such run ends with at least"
           f" {POOL_LEVEL} on each of the three var-restricted pools; partly if some do; not reproduced if none"
           " does or no run formed variable assignment."),
    "C4": (f"Reproduced if measure 2 ≥ {PREV_TOKEN_LEVEL} and measure 5 ≥ {COPY_LEVEL} at the end of training and"
           " mean-ablating layer 1's output at the prefix value positions only (the previous-token copy, nothing"
           f" at `=`) drops 1-var train accuracy with a distractor below {LOOKUP_BROKEN} while 0-var train stays"
           f" ≥ {ADDITION_KEPT}; partly if the measures hold or the ablation isolates the role, not both; not"
           " reproduced otherwise."),
    "C5": (f"Reproduced if measure 3 ≥ {IDENTITY_LEVEL} and measure 6 ≥ {READ_LEVEL} and, when variable v′'s"
           " layer-1 copy is written onto the value token of the queried variable v (relabel patch), layer-2"
           f" attention from `=` and the answer both follow the label in at least {RELABEL_LEVEL:.0%} of"
           " sequences; partly if the measures hold or the relabel patch is followed, not both; not reproduced"
           " otherwise."),
    "C6": (f"Reproduced if the MLP input of a literal sequence and its variable twin has mean cosine ≥"
           f" {MATCHED_LEVEL}, within {CEILING_GAP} of the literal-vs-literal ceiling, at least {BASELINE_GAP}"
           " above the hardest baseline (pairs with the same sum, pairs sharing one operand, unrelated pairs), and"
           f" patching the variable twin's layer-2 attention output into the literal one keeps ≥ {PATCH_KEPT:.0%}"
           " of answers; partly if the gap to the hardest baseline holds but another condition fails; not"
           " reproduced otherwise."),
    "C7": (f"Reproduced if the embedding's key frequencies (holding 70 % of its non-constant power) number 1 to"
           f" {MAX_KEY_FREQUENCIES} of 29, more than {SINGLE_NEURON_SHARE:.0%} of the active neurons are explained"
           " above 90 % by one frequency, and the median R² of the active neurons exceeds the 99th percentile of"
           " the same median under the null models (untrained network; shuffled inputs); partly if the key"
           " frequencies and the null comparison hold but fewer neurons are above 90 %; not reproduced"
           " otherwise."),
    "C10": ("In the window where layer 1 copies variables and `=` attends to the operands (measures 5 and 4 both"
            " ≥ their levels) and the identity pattern has not formed (measure 3 < 0.5): reproduced if the"
            " 95 % bootstrap interval (over checkpoints) of the whitened diagonal contrast lies above 0 — the"
            " value an isotropic direction gives — for both the negative gradient and the AdamW update;"
            " partly if for one of them; not reproduced if for neither; not yet run with fewer than"
            f" {MIN_WINDOW} checkpoints in the window."),
    "C8": ("Not yet run until every grid value has a result for at least one seed. Then, on the seed mean, the"
           " crossing is the smallest grid value from which every value reaches the level (0.9): reproduced if"
           " the paper's value lies within 0.1 of the bracket (last value below the level, crossing], partly"
           " within 0.2, not reproduced otherwise or without a threshold inside the grid; a curve that reached"
           " the level earlier and dipped again gets at most partly."),
    "C9": "As C8, on the r sweep and the 2-var union exact set.",
    "R1": ("No verdict (the paper shows one seed and makes no statement): the share of seeds in which the phase"
           " detector finds all three phases within 40,000 steps, with an exact (Clopper–Pearson) 95 % interval."),
}


def _fmt(steps) -> str:
    return ", ".join("–" if s is None else f"{int(s):,}" for s in steps)


# ---------------------------------------------------------------------------- phases chapter
def shows_three_phases(p: Mapping) -> bool:
    """One run's detected phases (`analysis.phases.detect_phases`) are the paper's three, in order."""
    found = all(p.get(k) is not None for k in ("addition", "jump", "refinement"))
    return bool(found and p.get("addition_first") and p["addition"] <= p["jump"] < p["refinement"])


def composed(phases: Mapping[str, Mapping]) -> list[str]:
    """Runs that formed variable assignment: the detector found a jump."""
    return [name for name, p in phases.items() if p.get("jump") is not None]


def c1_phases(phases: Mapping[str, Mapping]) -> Verdict:
    runs = composed(phases)
    shown = [name for name in runs if shows_three_phases(phases[name])]
    text = (f"{len(runs)} of {len(phases)} runs formed variable assignment; {len(shown)} of them show all three"
            f" phases (jump at {_fmt(phases[n]['jump'] for n in runs) or '–'}; final rise at"
            f" {_fmt(phases[n].get('refinement') for n in runs) or '–'})")
    if runs and len(shown) == len(runs):
        return Verdict(REPRODUCED, text)
    return Verdict(PARTLY if shown else NOT_REPRODUCED, text)


def c2_heldout(heldout: Mapping[str, float], swap_heldout: Mapping[str, float]) -> Verdict:
    """`heldout`: 0-var held-out exact accuracy per run; `swap_heldout`: the same on the held-out pairs whose
    swap (n2, n1) is held out too."""
    floor = PAPER_HELDOUT - HELDOUT_MARGIN
    full = all(v >= floor for v in heldout.values())
    swap = all(swap_heldout[n] >= SWAP_HELDOUT_LEVEL for n in heldout)
    text = ("0-var held-out exact " + ", ".join(f"{n} {v:.1%}" for n, v in heldout.items())
            + "; on pairs whose swap is also held out " + ", ".join(f"{n} {swap_heldout[n]:.1%}" for n in heldout))
    if heldout and full and swap:
        return Verdict(REPRODUCED, text)
    if heldout and (full or max(heldout.values()) >= 0.9):
        return Verdict(PARTLY, text)
    return Verdict(NOT_REPRODUCED, text)


def c3_positions(var_pools: Mapping[str, Mapping[str, float]], composed_runs: list[str]) -> Verdict:
    """`var_pools`: run -> {var-restricted pool: final accuracy}."""
    passed = [n for n in composed_runs if min(var_pools[n].values()) >= POOL_LEVEL]
    text = (f"lowest var-restricted pool at the end, runs that formed variable assignment: "
            + (", ".join(f"{n} {min(var_pools[n].values()):.3f}" for n in composed_runs) or "none")
            + f" ({len(passed)} of {len(composed_runs)} ≥ {POOL_LEVEL})")
    if composed_runs and len(passed) == len(composed_runs):
        return Verdict(REPRODUCED, text)
    return Verdict(PARTLY if passed else NOT_REPRODUCED, text)


# ---------------------------------------------------------------------------- circuits chapter
def c4_previous_token(m2: float, m5: float, value_ablated_1var: float, value_ablated_0var: float) -> Verdict:
    measures = m2 >= PREV_TOKEN_LEVEL and m5 >= COPY_LEVEL
    isolated = value_ablated_1var < LOOKUP_BROKEN and value_ablated_0var >= ADDITION_KEPT
    text = (f"measure 2 = {m2:.2f}, measure 5 = {m5:.2f}; layer 1 mean-ablated at value positions only: 1-var train"
            f" (distractor) {value_ablated_1var:.3f}, 0-var train {value_ablated_0var:.3f}")
    if measures and isolated:
        return Verdict(REPRODUCED, text)
    return Verdict(PARTLY if measures or isolated else NOT_REPRODUCED, text)


def c5_identity(m3: float, m6: float, attention_follows_label: float, answer_follows_label: float) -> Verdict:
    measures = m3 >= IDENTITY_LEVEL and m6 >= READ_LEVEL
    relabel = min(attention_follows_label, answer_follows_label) >= RELABEL_LEVEL
    text = (f"measure 3 = {m3:.2f}, measure 6 = {m6:.2f}; relabel patch: attention follows the label in"
            f" {attention_follows_label:.1%}, the answer in {answer_follows_label:.1%}")
    if measures and relabel:
        return Verdict(REPRODUCED, text)
    return Verdict(PARTLY if measures or relabel else NOT_REPRODUCED, text)


# ---------------------------------------------------------------------------- addition and Fourier chapters
def c6_shared_addition(matched: float, ceiling: float, baselines: Mapping[str, float], patch_kept: float) -> Verdict:
    """Mean cosines of the MLP input: literal vs variable twin (`matched`), literal vs literal with another
    prefix (`ceiling`), and each baseline; `patch_kept`: share of answers unchanged by the attention patch."""
    hardest = max(baselines, key=baselines.get)
    gap = matched - baselines[hardest]
    separated = gap >= BASELINE_GAP
    full = separated and matched >= MATCHED_LEVEL and matched >= ceiling - CEILING_GAP and patch_kept >= PATCH_KEPT
    text = (f"MLP-input cosine: matched {matched:.3f}, ceiling {ceiling:.3f}, hardest baseline {hardest}"
            f" {baselines[hardest]:.3f} (gap {gap:+.3f}); attention patch keeps {patch_kept:.1%} of answers")
    if full:
        return Verdict(REPRODUCED, text)
    return Verdict(PARTLY if separated else NOT_REPRODUCED, text)


def c7_fourier(n_key_frequencies: int, share_above_09: float, median_r2: float, null_median_r2_q99: float) -> Verdict:
    few = 1 <= n_key_frequencies <= MAX_KEY_FREQUENCIES
    beats_null = median_r2 > null_median_r2_q99
    text = (f"{n_key_frequencies} key frequencies; {share_above_09:.1%} of active neurons with R² > 0.9; median R²"
            f" {median_r2:.3f} vs null 99th percentile {null_median_r2_q99:.3f}")
    if few and beats_null and share_above_09 > SINGLE_NEURON_SHARE:
        return Verdict(REPRODUCED, text)
    return Verdict(PARTLY if few and beats_null else NOT_REPRODUCED, text)


# ---------------------------------------------------------------------------- theory chapter
def c10_gradient(n_window: int, gradient_ci: tuple[float, float], update_ci: tuple[float, float]) -> Verdict:
    """95 % bootstrap intervals of the mean whitened diagonal contrast (0 = isotropic) over the window."""
    if n_window < MIN_WINDOW:
        return Verdict(NOT_YET_RUN, f"{n_window} checkpoints in the window (need {MIN_WINDOW})")
    above = [lo > 0 for lo, _ in (gradient_ci, update_ci)]
    text = (f"{n_window} checkpoints; whitened contrast, 95 % interval: gradient [{gradient_ci[0]:+.3f},"
            f" {gradient_ci[1]:+.3f}], AdamW update [{update_ci[0]:+.3f}, {update_ci[1]:+.3f}]")
    if all(above):
        return Verdict(REPRODUCED, text)
    return Verdict(PARTLY if any(above) else NOT_REPRODUCED, text)

