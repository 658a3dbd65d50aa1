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

from ..experiments import generality_runs as shapes
from ..rules import paper, stats, verdicts
from ..experiments import c10_route, per_seed
from ..analysis import composition, generality, odds, phases, reliability, steering, sweep_records, thresholds

# The one filter of a sweep's finished points, and its status (C9, C10, G4, G5 and R2 read their sweeps through it).
FINISHED = (sweep_records.finished,)
FINISHED_LEVEL = (sweep_records, ("DONE",))

LOCK_PATH = Path(__file__).with_name("rules.lock.json")

# Parts that several rules share. Over the seeds: k of n with its exact interval and each seed's failed conditions.
OVER_SEEDS = (verdicts.over_seeds, verdicts.rate_text, verdicts._why, stats.Rate, stats.clopper_pearson)
# The phase detector (C1, R1, G1; R2's study table reads its composition step) and its levels.
DETECTOR = (phases.detect_phases, phases.smooth, phases.sustained_from, phases.final_rise, phases.composition_index)
DETECTOR_LEVELS = (phases, ("ADDITION_LEVEL", "VARIABLE_LOW", "JUMP_MIN_RISE", "JUMP_SIGNAL", "ROUNDING", "SMOOTH",
                            "SUSTAIN", "REFINED_LEVEL", "FINAL_ROWS", "END_TOLERANCE", "PLATEAU_ROWS", "PLATEAU_BAND"))
# A final-model claim (C4-C7) read over the composed seeds: each seed's deciding numbers and its rule (`per_seed`).
FINAL_MODEL = (per_seed.composed_runs, per_seed.seed_claims, per_seed.numbers, per_seed.rule, per_seed.values_of,
               verdicts.composed, verdicts._fails, *OVER_SEEDS)
# G1-G3 are read together, shape by shape (`generality_runs.shape_readings`): each is locked with all it reads.
SHAPE_READINGS = ((shapes.shape_readings, verdicts.g1_phases, verdicts.c1_seed, verdicts.shows_three_phases,
                   verdicts.g2_seed, verdicts.c7_fourier, verdicts.composed, verdicts._fails, verdicts._fmt,
                   *OVER_SEEDS, *DETECTOR),
                  (verdicts, ("LEARNED_LEVEL", "PREV_TOKEN_LEVEL", "IDENTITY_LEVEL", "READ_LEVEL", "FEW_SHARE",
                              "SINGLE_NEURONS", "SINGLE_NEURON_R2")), DETECTOR_LEVELS)

# What each rule is made of: the functions that compute it and the levels it reads (by name, in their modules):
# everything its verdict reads from the measured numbers on, found by following its calls (`rule_reach`, tested).
PARTS = {
    "C1": ((verdicts.c1_seed, verdicts.shows_three_phases, verdicts.composed, verdicts._fmt, *OVER_SEEDS, *DETECTOR),
           (verdicts, ("LEARNED_LEVEL",)), DETECTOR_LEVELS),
    "C2": ((verdicts.c2_seed, verdicts._fails, *OVER_SEEDS),
           (verdicts, ("HELDOUT_MARGIN", "SWAP_HELDOUT_LEVEL")), (paper, ("HELDOUT_EXACT",))),
    "C3": ((verdicts.c3_seed, verdicts.composed, verdicts._fails, *OVER_SEEDS),
           (verdicts, ("POOL_LEVEL", "LEARNED_LEVEL"))),
    "C4": ((verdicts.c4_previous_token, *FINAL_MODEL),
           (verdicts, ("PREV_TOKEN_LEVEL", "COPY_LEVEL", "LOOKUP_BROKEN", "ADDITION_KEPT", "LEARNED_LEVEL"))),
    "C5": ((verdicts.c5_identity, *FINAL_MODEL),
           (verdicts, ("IDENTITY_LEVEL", "READ_LEVEL", "RELABEL_LEVEL", "LEARNED_LEVEL"))),
    "C6": ((verdicts.c6_shared_addition, *FINAL_MODEL),
           (verdicts, ("MATCHED_LEVEL", "CEILING_GAP", "BASELINE_GAP", "PATCH_KEPT", "LEARNED_LEVEL"))),
    "C7": ((verdicts.c7_fourier, *FINAL_MODEL),
           (verdicts, ("FEW_SHARE", "SINGLE_NEURONS", "FEW_FREQUENCIES", "SINGLE_NEURON_R2", "LEARNED_LEVEL"))),
    "C8": ((verdicts.c8_threshold, verdicts.threshold_verdict, verdicts.median_bracket, verdicts.seed_crossing,
            verdicts.SeedCrossing, thresholds.seed_crossings, thresholds.composed_runs, verdicts.composed),
           (verdicts, ("THRESHOLD_LEVEL", "THRESHOLD_CLOSE", "THRESHOLD_NEAR", "LEARNED_LEVEL")),
           (paper, ("F_THRESHOLD",))),
    "C9": ((verdicts.c9_threshold, verdicts._seed_span, verdicts.censored_median, verdicts.seed_crossing,
            verdicts.SeedCrossing, verdicts.median_bracket, verdicts.composed, thresholds.seed_crossings,
            thresholds.logistic_threshold, thresholds._midpoint, thresholds.firth_logistic, thresholds.c9_runs,
            thresholds.composed_runs, thresholds.cpu_independent, *FINISHED),
           (verdicts, ("THRESHOLD_LEVEL", "THRESHOLD_CLOSE", "C9_RESAMPLES", "LEARNED_LEVEL")),
           (paper, ("R_THRESHOLD",)), (thresholds, ("NUMBER_DIGITS",)), FINISHED_LEVEL),
    # the rule in force (c10_onset on the onset sweeps' cells) and, while the chapter records C10 from them, the
    # rule of 2026-12-03 (c10_causal) and its inputs
    "C10": ((verdicts.c10_onset, verdicts.c10_necessity, verdicts.c10_sufficiency, verdicts._composed_later,
             verdicts.c10_clamp, verdicts._window_end, verdicts.c10_design, verdicts.C10Design, verdicts._during,
             verdicts._delays, verdicts._during_hold, verdicts._necessity_words, steering.clamp_cells,
             verdicts._fails, verdicts._when, stats.sign_test_greater, steering.onset_cells, steering.hold_cells,
             steering.onset_reading, steering.time_to_compose, steering.onset_arm,
             verdicts.c10_causal, steering.arms_table, steering.arm, steering.first_composed, steering.removal_inputs,
             steering.addition_inputs, steering._step, *FINISHED),
            (verdicts, ("C10_COPY_MARGIN", "C10_ONSET_P", "C10_MIN_CELLS", "C10_MIN_PUSH_CELLS", "C10_IDENTITY_LOW",
                        "LEARNED_LEVEL", "C10_REMOVE_TO", "C10_MIN_ARM")),
            (verdicts.c10_design, verdicts.C10Design._fields),  # the design, as the study sets it
            (steering, ("ARMS",)), FINISHED_LEVEL),
    "R1": ((verdicts.r1_rate, verdicts.rate_text, stats.Rate, stats.clopper_pearson, reliability.phase_steps,
            reliability.step_statistics, reliability.composition_rate, verdicts.composed, *DETECTOR),
           (verdicts, ("LEARNED_LEVEL",)), DETECTOR_LEVELS, (reliability, ("TRANSITIONS",))),
    # the route's reading of its tables (`c10_route.held_inputs`); the tables are measured by `analysis.route`
    # its second part, the double hold, reads C10's necessity test on its own cells
    "R3": ((verdicts.r3_route, verdicts._route_part, verdicts.route_candidate, verdicts.route_term, c10_route.held_inputs,
            stats.sign_test_greater, verdicts.c10_necessity, verdicts._composed_later, verdicts._fails, verdicts._when,
            verdicts._window_end, verdicts.c10_design, verdicts.C10Design, verdicts._during, verdicts._delays,
            verdicts._during_hold, verdicts._necessity_words, steering.hold_cells, steering.onset_cells, steering.onset_reading, steering.time_to_compose,
            steering.onset_arm, *FINISHED),
           (verdicts, ("ROUTE_DROP", "ROUTE_P", "ROUTE_MIN_RUNS", "ROUTE_IDENTITY", "C10_IDENTITY_LOW",
                       "C10_COPY_MARGIN", "C10_ONSET_P", "C10_MIN_CELLS", "LEARNED_LEVEL")),
           (verdicts.c10_design, ("C10_WINDOW",)), FINISHED_LEVEL),
    "G1": SHAPE_READINGS,
    "G2": ((*SHAPE_READINGS[0], generality.found_roles, generality.candidates, generality.union_eq_to_values,
            generality.head_sets, generality.eq_patterns, generality.with_roles),
           *SHAPE_READINGS[1:], (generality, ("M3", "M6"))),
    "G3": SHAPE_READINGS,
    "G4": ((verdicts.g4_paired, stats.sign_flip_exact, stats.mcnemar_exact, shapes.fresh_outcomes,
            verdicts.g4_pooled, verdicts.g4_rate, verdicts.shown_words, stats.fisher, stats.Rate, stats.clopper_pearson,
            verdicts.rate_text, shapes.composition_count, verdicts.composed, *FINISHED),
           (verdicts, ("GENERAL_RATE_P", "LEARNED_LEVEL", "G4_FRESH_FIRST", "G4_FRESH_SEEDS", "G4_POWER")),
           FINISHED_LEVEL),
    "G5": ((verdicts.g5_coverage, generality.paired_differences, stats.t_interval, shapes.coverage_pairs,
            verdicts.composed, *FINISHED),
           (verdicts, ("COVERAGE_PREDICTED_GAIN", "COVERAGE_NO_GAIN", "LEARNED_LEVEL")), FINISHED_LEVEL),
    # every number of R2's record (chapter 4): the crossed design's tests and shares, the modes, the perturbations'
    # flips, the earlier studies (their table, the near-paper values, the old factorial) and the predictor
    "R2": ((verdicts.r2_replicated, verdicts.shown_words, verdicts.odds_answer, verdicts.basin_or_chaos,
            verdicts.basin_or_chaos_by_runs, odds.permutation_tests, odds.factor_permutation_p, odds.cell_permutation_p,
            odds._swap_chain, odds.cell_array, odds.cluster_interval, odds.replicated_cells, odds.complete_cells,
            odds.fit_crossed, odds.design_arrays, odds.fixed_design, odds.interval, odds.observed_shares, odds._expit,
            odds.shares_table, odds.prior_sensitivity, odds.mode_comparison, odds.flip_rate, odds.flip_table,
            odds.flips_by_cell, odds.perturbation_label, odds.paired_cells,
            composition.study_table, composition.outcome_changes, composition.factorial_answer,
            composition.factorial_by_initialization, composition.feature_table, composition.predictor_on_new_seeds,
            composition.auc, stats.rate, stats.Rate, stats.clopper_pearson, stats.fisher, stats.mcnemar_exact,
            verdicts.composed, *DETECTOR, *FINISHED),
           (verdicts, ("ODDS_LEVEL", "LEARNED_LEVEL", "R2_MIN_REPLICATES", "R2_CLAIMS", "ODDS_PARTS", "CHANCE")),
           (odds, ("KINDS", "PRIOR_SCALES", "SD_PRIOR_SCALE", "FIXED_PRIOR_SD", "RESIDUAL_VARIANCE", "CHAIN_GRID")),
           (composition, ("FISHER_LEVEL", "REPLICATE_FIELDS")), DETECTOR_LEVELS, FINISHED_LEVEL),
}


def components(claim: str) -> dict:
    """The parts a claim's fingerprint is made of: its rule's words, each function's source, each level's value."""
    functions, *level_groups = PARTS[claim]
    names = {}
    for f in functions:  # two parts under one name would hide one of them
        if names.setdefault(f"{f.__module__.rsplit('.', 1)[-1]}.{f.__name__}", f) is not f:
            raise ValueError(f"{claim}: two parts named {f.__module__.rsplit('.', 1)[-1]}.{f.__name__}")
    levels = {}
    for source, names in level_groups:  # a module's constants, or the values a function reads from the study
        values = source if inspect.ismodule(source) else source()
        prefix = (source.__name__ if inspect.ismodule(source) else source.__module__).rsplit(".", 1)[-1]
        levels.update({f"{prefix}.{name}": repr(getattr(values, name)) for name in names})
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
