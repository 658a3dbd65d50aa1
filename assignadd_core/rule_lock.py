"""The rule lock: every verdict rule (its words, its functions' source and its levels) has a fingerprint, registered
in `rules.lock.json` with a dated history. A rule whose fingerprint differs from its last registered one has
changed without a record: `tests/test_rule_lock.py` fails until the change is recorded, with what changed, why, and
the verdict before and after (`python -m assignadd_core rules record ...`).

The lock also keeps, per claim, the verdict under the claim's first rule (`first_verdict`, with what it was read
on), which the claims table and the scoreboard print beside the current verdict of every changed rule.
"""
from __future__ import annotations

import hashlib
import inspect
import json
from datetime import date
from pathlib import Path

from . import stats, verdicts
from .analysis import generality, odds, phases, steering, thresholds

LOCK_PATH = Path(__file__).with_name("rules.lock.json")

# What each rule is made of: the functions that compute it and the levels it reads (by name, in their modules).
PARTS = {
    "C1": ((verdicts.c1_seed, verdicts.shows_three_phases, verdicts.over_seeds, phases.detect_phases),
           (verdicts, ("LEARNED_LEVEL",)), (phases, ("ADDITION_LEVEL", "VARIABLE_LOW", "JUMP_MIN_RISE", "SMOOTH",
                                                    "SUSTAIN", "REFINED_LEVEL", "FINAL_ROWS", "END_TOLERANCE",
                                                    "PLATEAU_ROWS", "PLATEAU_BAND"))),
    "C2": ((verdicts.c2_seed, verdicts.over_seeds),
           (verdicts, ("PAPER_HELDOUT", "HELDOUT_MARGIN", "SWAP_HELDOUT_LEVEL"))),
    "C3": ((verdicts.c3_seed, verdicts.over_seeds), (verdicts, ("POOL_LEVEL",))),
    "C4": ((verdicts.c4_previous_token, verdicts.over_seeds),
           (verdicts, ("PREV_TOKEN_LEVEL", "COPY_LEVEL", "LOOKUP_BROKEN", "ADDITION_KEPT", "LEARNED_LEVEL"))),
    "C5": ((verdicts.c5_identity, verdicts.over_seeds), (verdicts, ("IDENTITY_LEVEL", "READ_LEVEL", "RELABEL_LEVEL"))),
    "C6": ((verdicts.c6_shared_addition, verdicts.over_seeds),
           (verdicts, ("MATCHED_LEVEL", "CEILING_GAP", "BASELINE_GAP", "PATCH_KEPT"))),
    "C7": ((verdicts.c7_fourier, verdicts.over_seeds),
           (verdicts, ("FEW_SHARE", "SINGLE_NEURONS", "FEW_FREQUENCIES", "SINGLE_NEURON_R2"))),
    "C8": ((verdicts.c8_threshold, verdicts.threshold_verdict, verdicts.median_bracket, verdicts.seed_crossing),
           (verdicts, ("THRESHOLD_LEVEL", "THRESHOLD_CLOSE", "THRESHOLD_NEAR"))),
    "C9": ((verdicts.c9_threshold, verdicts._seed_span, verdicts.censored_median, verdicts.seed_crossing,
            thresholds.logistic_threshold, thresholds.firth_logistic, thresholds.c9_runs),
           (verdicts, ("THRESHOLD_LEVEL", "THRESHOLD_CLOSE", "C9_INCONCLUSIVE_WIDTH", "C9_RESAMPLES"))),
    "C10": ((verdicts.c10_onset, verdicts.c10_necessity, verdicts.c10_sufficiency, verdicts._composed_later,
             stats.sign_test_greater, steering.onset_reading, steering.time_to_compose, steering.onset_arm),
            (verdicts, ("C10_TRIGGER", "C10_WINDOW", "C10_PUSH_SHARES", "C10_NECESSITY_CELLS", "C10_PUSH_CELLS",
                        "C10_HOLD", "C10_BUDGET", "C10_COPY_MARGIN", "C10_ONSET_P", "C10_MIN_CELLS",
                        "C10_MIN_PUSH_CELLS",
                        "C10_IDENTITY_LOW", "LEARNED_LEVEL"))),
    "R1": ((verdicts.r1_rate,), (verdicts, ("LEARNED_LEVEL",))),
    "G1": ((verdicts.g1_phases, verdicts.c1_seed, verdicts.shows_three_phases, verdicts.over_seeds, phases.detect_phases),
           (verdicts, ("LEARNED_LEVEL",)), (phases, ("ADDITION_LEVEL", "VARIABLE_LOW", "JUMP_MIN_RISE", "SMOOTH",
                                                    "SUSTAIN", "REFINED_LEVEL", "FINAL_ROWS", "END_TOLERANCE",
                                                    "PLATEAU_ROWS", "PLATEAU_BAND"))),
    "G2": ((verdicts.g2_seed, verdicts.over_seeds, generality.found_roles, generality.candidates,
            generality.union_eq_to_values, generality.head_sets, generality.eq_patterns),
           (verdicts, ("PREV_TOKEN_LEVEL", "IDENTITY_LEVEL", "READ_LEVEL", "LEARNED_LEVEL"))),
    "G3": ((verdicts.c7_fourier, verdicts.over_seeds),
           (verdicts, ("FEW_SHARE", "SINGLE_NEURONS", "SINGLE_NEURON_R2"))),
    "G4": ((verdicts.g4_pooled, verdicts.g4_rate, verdicts.shown_words, stats.fisher),
           (verdicts, ("GENERAL_RATE_P", "LEARNED_LEVEL"))),
    "G5": ((verdicts.g5_coverage, generality.paired_differences, stats.t_interval),
           (verdicts, ("COVERAGE_PREDICTED_GAIN", "COVERAGE_NO_GAIN"))),
    "R2": ((verdicts.r2_replicated, verdicts.shown_words, verdicts.odds_answer, verdicts.basin_or_chaos,
            verdicts.basin_or_chaos_by_runs, odds.permutation_tests, odds.factor_permutation_p, odds.cell_permutation_p,
            odds.cluster_interval, odds.replicated_cells, odds.fit_crossed, odds.fixed_design, odds.observed_shares,
            odds.shares_table, odds.prior_sensitivity),
           (verdicts, ("ODDS_LEVEL", "LEARNED_LEVEL", "R2_MIN_REPLICATES", "R2_CLAIMS")),
           (odds, ("KINDS", "PRIOR_SCALES", "SD_PRIOR_SCALE", "FIXED_PRIOR_SD"))),
}


def components(claim: str) -> dict:
    """The parts a claim's fingerprint is made of: its rule's words, each function's source, each level's value."""
    functions, *level_groups = PARTS[claim]
    levels = {f"{module.__name__.rsplit('.', 1)[-1]}.{name}": repr(getattr(module, name))
              for module, names in level_groups for name in names}
    return {"words": verdicts.RULES[claim],
            "functions": {f"{f.__module__.rsplit('.', 1)[-1]}.{f.__name__}": inspect.getsource(f) for f in functions},
            "levels": levels}


def fingerprint(claim: str) -> str:
    text = json.dumps(components(claim), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def read_lock(path: Path | None = None) -> dict:
    path = LOCK_PATH if path is None else Path(path)
    return json.loads(path.read_text()) if path.is_file() else {}


def unrecorded(lock: dict | None = None) -> list[str]:
    """The claims whose rule differs from its last registered fingerprint (or was never registered)."""
    lock = read_lock() if lock is None else lock
    return [claim for claim in PARTS
            if claim not in lock or lock[claim]["history"][-1]["fingerprint"] != fingerprint(claim)]


REQUIRED = ("date", "fingerprint", "what", "why", "verdict_before", "verdict_after")


def record(claim: str, what: str, why: str, verdict_before: str, verdict_after: str, path: Path | None = None,
           when: str | None = None, decision_changed: bool = True) -> dict:
    """Register the claim's current rule with a dated entry naming what changed, why, and the verdict before and
    after (`decision_changed` False: only its wording or reporting changed, not what it decides); a claim
    registered for the first time also gets its `first_verdict` from `verdict_before`."""
    if claim not in PARTS:
        raise ValueError(f"unknown claim {claim!r}; rules are {', '.join(PARTS)}")
    for name, value in (("what", what), ("why", why), ("verdict_before", verdict_before),
                        ("verdict_after", verdict_after)):
        if not str(value).strip():
            raise ValueError(f"a rule change needs {name}")
    path = LOCK_PATH if path is None else Path(path)
    lock = read_lock(path)
    entry = {"date": when or date.today().isoformat(), "fingerprint": fingerprint(claim), "what": what, "why": why,
             "verdict_before": verdict_before, "verdict_after": verdict_after, "decision_changed": decision_changed}
    lock.setdefault(claim, {"first_verdict": verdict_before, "first_basis": "the verdict before the first record",
                            "history": []})["history"].append(entry)
    Path(path).write_text(json.dumps(lock, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    return entry


def first_verdict(claim: str, lock: dict | None = None) -> tuple[str, str] | None:
    """(verdict under the claim's first rule, what it was read on), for a rule that has changed; None otherwise."""
    lock = read_lock() if lock is None else lock
    entry = lock.get(claim)
    changed = claim in verdicts.RULE_CHANGES or any(h.get("decision_changed", True) for h in
                                                    (entry or {}).get("history", [])[1:])
    return (entry["first_verdict"], entry["first_basis"]) if entry and changed else None
