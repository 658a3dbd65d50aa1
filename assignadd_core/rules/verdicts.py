"""Every verdict rule of the book: a function from measured numbers to a `Verdict`, with the levels it uses.

Each rule is fixed here, stated in words in `RULES` (the chapters print it before the result, the claims
chapter lists it beside the verdict), and unit-tested on inputs that produce each outcome, on a null model that
must fail it and on the authors' released weights that must pass it where the claim is about a final model. A
chapter measures, calls the rule and records what it returns; no rule and no level lives in a notebook cell.

Claims about a final model are decided per seed (`cN_...` on one model) and then over the seeds
(`over_seeds`: "k of n composed seeds", with an exact binomial interval). A rule that was rewritten keeps its
earlier wording and the reason in `RULE_CHANGES`, and its old function stays callable, so the chapter prints the
old verdict beside the new one. Every change of a rule's code or levels, one that moves no decision too, has a
dated entry with the verdict before and after in the rule lock (`rule_lock`, `rules.lock.json`).
"""
from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Mapping, NamedTuple
import itertools

import numpy as np

from . import paper as paper_numbers
from .stats import (Rate, clopper_pearson, fisher, mcnemar_exact, sign_flip_exact,  # noqa: F401  (clopper_pearson:
                    sign_test_greater, t_interval)  # readers use it)
from .study import StudyMapping, current as study_profile

REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_YET_RUN = "reproduced", "partly", "not reproduced", "not yet run"
FINDING = "finding"  # this book's own result, no claim of the paper to compare with
INCONCLUSIVE = "inconclusive"  # the data cannot tell: an interval wider than the rule's stated width
VERDICTS = (REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_YET_RUN, FINDING, INCONCLUSIVE)

# "The run composed": it answers its own 1-var training queries. One definition for the whole book (the early stop,
# `experiments.early_stop`, reads it too).
LEARNED_LEVEL = 0.9

# R2 on the fresh crossed design (stated 2026-12-02, before its first run)
ODDS_LEVEL = 0.05
ODDS_PARTS = {"init": "the initialization", "data": "the data order", "cell": "the pair (initialization and data"
              " order together, beyond each alone)"}
CHANCE = "chance (a coin toss per run): neither the initialization, the data order nor their pair"
# R2 with replicates (stated 2026-12-04, before the nudged replicates ran): every cell needs this many runs (eager,
# compiled, two step-0 nudges), and each test's claim in the words the answer uses
R2_MIN_REPLICATES = 4
R2_CLAIMS = {"init": "the initialization decides in part", "data": "the data order decides in part",
             "cell": "the pair decides beyond its two parts, against a run's own chance"}

# Levels, named once: a chapter that prints a rule prints these numbers. Those the study sets are read from it when a
# rule uses them: the paper's numbers (`paper`; C2 reads the paper's 0-var held-out exact accuracy, C9 the paper's
# threshold) and C10's design (`c10_design`), as are the rules' words that print them (`RULES`).
HELDOUT_MARGIN = 0.01  # C2: within one point of the paper
SWAP_HELDOUT_LEVEL = 0.95  # C2: held-out pairs whose swap is held out too
POOL_LEVEL = 0.95  # C3: each var-restricted pool at the end of training
PREV_TOKEN_LEVEL, COPY_LEVEL = 0.9, 0.95  # C4: measures 2 and 5
LOOKUP_BROKEN, ADDITION_KEPT = 0.5, 0.9  # C4: ablation at value positions
IDENTITY_LEVEL, READ_LEVEL, RELABEL_LEVEL = 0.9, 0.9, 0.8  # C5: measures 3 and 6, relabel patch followed
MATCHED_LEVEL, CEILING_GAP, BASELINE_GAP, PATCH_KEPT = 0.9, 0.05, 0.2, 0.95  # C6
FEW_SHARE, SINGLE_NEURONS = 1 / 3, 3  # C7: a few = at most a third of the frequencies; some single neurons above R² 0.9
FEW_FREQUENCIES = int(FEW_SHARE * 29)  # 9 of the 29 frequencies at N = 59
SINGLE_NEURON_R2 = 0.9
OLD_MAX_KEY_FREQUENCIES, OLD_SINGLE_NEURON_SHARE = 7, 0.5  # C7's rule before 2026-12 (see RULE_CHANGES)
THRESHOLD_LEVEL, THRESHOLD_CLOSE, THRESHOLD_NEAR = 0.9, 0.1, 0.2  # C8, C9
# C9 (stated 2026-12-02, before seeds 44-46 ran beyond r = 0.268): the fit's interval may be at most as wide as the
# paper's value itself, else the verdict is inconclusive; its interval resamples seeds this many times.
C9_RESAMPLES = 2000
C10_COPY, C10_EQ, C10_IDENTITY_LOW = 0.95, 0.9, 0.5  # C10's premise window: measures 5, 4 high and 3 low
C10_MIN_WINDOW, C10_MIN_SEEDS = 3, 3  # checkpoints in a seed's window; seeds with a window
# C10 as an experiment (stated 2026-12-03, before its runs; `steer`, sweeps c10_remove and c10_add): the step up to
# which the identity component is removed, and the seeds each arm needs to be read.
C10_REMOVE_TO, C10_MIN_ARM = 6000, 3
# C10 at copying onset (stated 2026-12-04, before its runs; sweeps c10_onset and c10_onset_push, `c10_onset`): the
# design from the study profile (studies/paper.yaml, c10.onset: `c10_design`), the rule's own levels here. The
# identity pattern has formed in a window when measure 3 reaches C10_IDENTITY_LOW there (half the variables' rows peak
# on their own).
C10_COPY_MARGIN = 0.05  # the removal's mean measure 5 over the window within this of the twin's over the same steps
C10_ONSET_P = 0.05  # each exact one-sided sign test
C10_MIN_CELLS, C10_MIN_PUSH_CELLS = 8, 6  # necessity: cells that pass their checks; sufficiency: cells a push passes in


class C10Design(NamedTuple):
    """C10's design, as the study sets it (studies/paper.yaml, c10.onset and composition)."""
    C10_TRIGGER: float  # measure 5 at the eval that starts the window
    C10_WINDOW: int  # steps steered
    C10_PUSH_SHARES: tuple[float, ...]
    C10_NECESSITY_CELLS: int
    C10_PUSH_CELLS: int
    C10_HOLD: int  # evaluations composition must hold (the early stop's)
    C10_BUDGET: int  # each run's steps at most
    C10_CLAMP_MARGIN: float  # the clamp's margin (c10.onset.clamp_margin; stated 2026-12-06)


def c10_design() -> C10Design:
    """C10's design, read from the study this process runs."""
    onset, composition = study_profile()["c10"]["onset"], study_profile()["composition"]
    return C10Design(float(onset["trigger"]), int(onset["window"]), tuple(float(s) for s in onset["push_shares"]),
                     4 * len(onset["necessity_inits"]), len(onset["push_cells"]), composition["odds_hold"],
                     composition["decide_steps"], float(onset["clamp_margin"]))

# R3, the lookup's route in the held runs (stated 2026-12-06, before the route re-runs; `analysis.route`,
# `experiments.c10_route`): the causal test's levels.
ROUTE_DROP = 0.25  # the candidate's ablation lowers the in-context lookup this much more than the control's (median)
ROUTE_P = 0.05  # the exact one-sided sign test over the held runs: the candidate's drop above the control's
ROUTE_MIN_RUNS = 8  # held runs read at their composition step, at least (C10's necessity needs 8 cells)
ROUTE_IDENTITY = ("variable", "variable")  # the term of the identity pattern measure 3 reads (query, key)

# The mechanism on other tasks and shapes (chapter 14, `generality`; stated 2026-12-04, before any of its runs).
GENERAL_RATE_P = 0.05  # G4: a shape's composition rate differs from the paper shape's at Fisher's two-sided p below this
# G4 replicated (stated 2026-12-06, before its runs): fresh seeds in every shape, paired by seed
G4_FRESH_FIRST, G4_FRESH_SEEDS = 80, 20
G4_POWER = ("0.70 if each departure composes with probability 0.95 and the paper shape with 21/32 (its rate in"
            " chapter 4), 0.25 if each departure composes with 0.85")
# G5: the 2-var union at 24 variables against the same seed at 12, at the same r (the r_sweep's first two values):
# pair coverage predicts a gain (coverage at r = 0.01 goes from 9.6 % to 19.8 %, at 0.0616 from 47 % to 75 %; by
# the 12-variable curve, about +0.05 and +0.08); the share of 2-var queries is the same at both sizes.
COVERAGE_PREDICTED_GAIN = 0.05
COVERAGE_NO_GAIN = COVERAGE_PREDICTED_GAIN / 2  # "does not follow": the interval's top below half the predicted gain


@dataclass(frozen=True)
class Verdict:
    verdict: str  # one of VERDICTS
    text: str  # the numbers that decided it, in words

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")


def composed(one_var_train: float) -> bool:
    """Whether a run learned variable assignment: its 1-var training accuracy at the end is at least 0.9."""
    return bool(one_var_train >= LEARNED_LEVEL)


def rate_text(successes: int, trials: int) -> str:
    return Rate(successes, trials).text()



OVER_SEEDS = ("Per seed as stated; over the seeds: reproduced if every seed reproduces it, partly if at least"
              " one seed reproduces it or partly does, not reproduced otherwise (or without seeds); the count comes"
              " with its exact (Clopper–Pearson) 95 % interval.")


def _rules() -> dict:
    """Every rule in words (`RULES`), with the levels it prints (those the study sets read from it)."""
    # the levels the study sets, under the names the words print them by
    PAPER_HELDOUT, C9_INCONCLUSIVE_WIDTH = paper_numbers.HELDOUT_EXACT.value, paper_numbers.R_THRESHOLD.value  # noqa: N806
    (C10_TRIGGER, C10_WINDOW, C10_PUSH_SHARES, C10_NECESSITY_CELLS, C10_PUSH_CELLS, C10_HOLD, C10_BUDGET,  # noqa: N806
     C10_CLAMP_MARGIN) = c10_design()
    return {  # the words keep their indentation of a module-level table
    "C1": ("Read on every seed that composed (1-var train ≥ 0.9 at the end). A seed shows the three phases when"
           " addition, a sharp jump (a rise of the 1-var/2-var train accuracies of at least 0.1 within 100 steps,"
           " before they settle at ≥ 0.9) and the final rise of the var-restricted pools are all detected, addition"
           " comes first (variable pools below 0.9 when 0-var train reaches 0.95) and addition ≤ jump < final rise:"
           " reproduced for that seed; partly when it composed with addition first but without a sharp jump or"
           " without a final rise; not reproduced otherwise. " + OVER_SEEDS + " The steps are compared with the"
           " paper's, not judged: they are seed-specific."),
    "C2": (f"Read on every seed (adding needs no variables). A seed reproduces it with at least"
           f" {PAPER_HELDOUT - HELDOUT_MARGIN:.3f} on the 0-var held-out exact set (the paper's {PAPER_HELDOUT:.1%}"
           f" minus one point) and at least {SWAP_HELDOUT_LEVEL} on the held-out pairs whose swapped pair is held"
           " out too (where looking up (n2, n1) cannot help); partly with the first condition only, or with at"
           " least 0.9 on the full set; not otherwise. " + OVER_SEEDS),
    "C3": (f"Read on every seed that composed. A seed reproduces it when it ends with at least {POOL_LEVEL} on each"
           " of the three var-restricted pools; partly when its lowest var-restricted pool is at least 0.9; not"
           " otherwise. " + OVER_SEEDS),
    "C4": (f"Per composed seed: reproduced if measure 2 ≥ {PREV_TOKEN_LEVEL} and measure 5 ≥ {COPY_LEVEL} at the"
           " end of training and mean-ablating layer 1's output at the prefix value positions only (the"
           f" previous-token copy, nothing at `=`) drops 1-var train accuracy with a distractor from at least"
           f" {LEARNED_LEVEL} below {LOOKUP_BROKEN}"
           f" while 0-var train stays ≥ {ADDITION_KEPT}; partly if the measures hold or the ablation isolates the"
           " role, not both; not reproduced otherwise. " + OVER_SEEDS),
    "C5": (f"Per composed seed: reproduced if measure 3 ≥ {IDENTITY_LEVEL} and measure 6 ≥ {READ_LEVEL} and, when"
           " variable v′'s layer-1 copy is written onto the value token of the queried variable v (relabel patch),"
           f" layer-2 attention from `=` and the answer both follow the label in at least {RELABEL_LEVEL:.0%} of"
           " sequences; partly if the measures hold or the relabel patch is followed, not both; not reproduced"
           " otherwise. " + OVER_SEEDS),
    "C6": (f"Per composed seed: reproduced if the MLP input of a literal sequence and its variable twin has mean"
           f" cosine ≥ {MATCHED_LEVEL}, within {CEILING_GAP} of the literal-vs-literal ceiling, at least"
           f" {BASELINE_GAP} above the hardest baseline (pairs with the same sum, pairs sharing one operand,"
           " unrelated pairs), and patching the variable twin's layer-2 attention output into the literal one keeps"
           f" ≥ {PATCH_KEPT:.0%} of answers; partly if the gap to the hardest baseline holds but another condition"
           " fails; not reproduced otherwise. " + OVER_SEEDS),
    "C7": (f"Per composed seed, from the claim's words (a few key frequencies; single neurons explained above 90 %):"
           f" reproduced if at most {FEW_FREQUENCIES} of the 29 frequencies (a third of them) hold 70 % of the number"
           f" embedding's non-constant power, at least {SINGLE_NEURONS} active layer-2 neurons are explained above"
           f" R² {SINGLE_NEURON_R2} by one frequency, and the median R² of the active neurons exceeds the 99th"
           " percentile of the same median under the null models (untrained networks; shuffled operands); partly if"
           " the frequencies and the null comparison hold but fewer single neurons pass; not reproduced otherwise. "
           + OVER_SEEDS),
    "C8": (f"Only sweep runs that composed are read (whether a run composes is the composition-rate panel's"
           f" question, not the threshold's). For each seed, the crossing is the smallest grid value from which"
           f" every composed run of that seed reaches {THRESHOLD_LEVEL} on the sweep's metric, bracketed by the"
           f" largest grid value below it where a composed run of that seed was under the level. The claim's"
           f" threshold is the median over seeds of the crossings and of the brackets' lower ends, with a 95 %"
           f" bootstrap interval over seeds. Reproduced if the paper's value lies within {THRESHOLD_CLOSE} of the"
           f" median bracket, partly within {THRESHOLD_NEAR}, not reproduced otherwise or with fewer than 3 seeds"
           f" that have a crossing."),
    "C9": ("On the composed runs of the r sweep (every seed on the grid up to r = 0.629, seeds 42 and 43 beyond"
           " it) and of its added seeds 47-56 at the same first 13 values (since 2026-12-04: 15 seeds there in all,"
           " the count a power calculation chose before they ran; 30,000 steps, the paper's protocol), and their"
           " metric, the 2-var union exact set; the verdict waits until every planned run has finished, and says"
           " the device each run trained on (every one on CPU, one thread: 47-56 were planned for a GPU on"
           " 2026-12-04 and moved to CPU on 2026-12-05, before any of them ran, as none was lent). Two estimators"
           " that the grid's extent cannot move. The threshold is a logistic fit of each"
           f" run's success (metric ≥ {THRESHOLD_LEVEL}) on r over the composed runs of every seed, read where the"
           f" fitted success is 50 %, with a 95 % interval from {C9_RESAMPLES:,} resamples of the seeds (the seed"
           " is the unit: runs of one seed share its initialization and data order). Beside it, the per-seed"
           " crossings as in C8, where a seed that never crosses counts as censored above its largest value, not"
           " dropped (the median over seeds is 'above the grid' when it falls on a censored seed). Inconclusive"
           f" if the fit's interval is wider than the paper's value itself ({C9_INCONCLUSIVE_WIDTH:g}) or fewer"
           f" than 3 seeds have composed runs; otherwise reproduced if the paper's value lies inside the interval,"
           f" partly if within {THRESHOLD_CLOSE} of it, not reproduced otherwise. The same reading on held-out pairs"
           " in 2-var queries (the pool that depends on 2-var data) is reported beside it."),
    "C10": (f"A causal test at copying onset (stated 2026-12-04, before its runs; sweeps c10_onset,"
            f" c10_onset_hold and c10_onset_push). Each run starts its steering after the first evaluation at which layer 1 copies"
            f" (measure 5 ≥ {C10_TRIGGER}) and steers for {C10_WINDOW:,} steps; it stops once 1-var train ≥"
            f" {LEARNED_LEVEL} has held for {C10_HOLD} evaluations after that window ({C10_BUDGET:,} steps at most)."
            " Necessity,"
            f" on {C10_NECESSITY_CELLS} cells of the crossed design whose initialization composed in all 16 of its"
            " runs:"
            " the identity pattern held (the removal): after every step of the window, the smallest change of W_Q2"
            " that brings each row's contrast of the variable QK map (a variable's score with itself minus the"
            " row's mean) back to its value before the step, whatever moved it, W_QK2 or layer 1's copies; a sham held"
            " instead, the twelve contrasts of each variable with the next one; and no steering (the twin, from"
            " c10_onset). The removal of only the identity component of each layer-2 QK update, stated first, is"
            " read beside it with the same checks (it left the copies free to form the pattern). Manipulation checks"
            " per cell: the"
            f" removal keeps measure 3 below {C10_IDENTITY_LOW} throughout its window while its mean measure 5 there"
            f" stays within {C10_COPY_MARGIN} of the twin's over the same steps; the sham lets measure 3 reach"
            f" {C10_IDENTITY_LOW} in its window. A cell enters only if both pass (and its three arms triggered at the"
            f" same step); with fewer than {C10_MIN_CELLS} such cells necessity is inconclusive. The time to compose"
            f" (the first evaluation from which 1-var train ≥ {LEARNED_LEVEL} holds for {C10_HOLD} evaluations; a run"
            " that never does counts as later than any that does) is compared per cell, removal against twin and"
            " removal against sham, each by an exact one-sided sign test over the cells (ties left out): necessity is"
            f" shown if both give p < {C10_ONSET_P}, not shown otherwise. Sufficiency, on {C10_PUSH_CELLS} cells whose"
            " eager and compiled runs both stayed stuck: the identity component of every update set to "
            + " and to ".join(f"{share:g}" for share in C10_PUSH_SHARES) + " times the size of the change that"
            " W_Q2's own step makes to W_QK2 (a push),"
            " each beside a wrong-pairs sham pushed as hard, and the twin. The push's check: measure 3 reaches"
            f" {C10_IDENTITY_LOW} in its window while its mean measure 5 there stays within {C10_COPY_MARGIN} of the"
            " twin's. The first strength (weakest first) whose push passes in at least"
            f" {C10_MIN_PUSH_CELLS} cells is read, on those cells: sufficiency is shown if the pushed runs end"
            " composed after the window (composition holding over their last evaluations) where their twins do not"
            " more often than the reverse, and likewise against the shams at that strength (exact one-sided sign"
            f" tests, p < {C10_ONSET_P} both), not shown otherwise, untested if no strength passes its check."
            " Since 2026-12-06 (stated before the clamp's runs) sufficiency is read from a clamp, the pushes beside"
            f" it: on the same {C10_PUSH_CELLS} cells, from the same trigger for the same window, after every step"
            " the smallest change of W_Q2 that makes the rows of the variable QK map nearest to it (ten of twelve:"
            " the median measure 3 of the necessity twins at their composition) peak on their own variable by the"
            f" clamp's margin ({C10_CLAMP_MARGIN:g} in the lookup's score units: the median lead of the composing"
            " twins' identity rows at their composition), beside a wrong-pairs clamp (each row's next variable) with"
            " the same margin, and the push's twin. The clamp's check: measure 3 at least"
            f" {C10_IDENTITY_LOW} at every evaluation of its window and its mean measure 5 there within"
            f" {C10_COPY_MARGIN} of the twin's; the sham's: its mean measure 5 within {C10_COPY_MARGIN} of the"
            f" twin's. Read on the cells where both pass (at least {C10_MIN_PUSH_CELLS}, else untested): shown if the"
            " clamped runs end composed after the window where their twins do not more often than the reverse, and"
            f" likewise against the shams (exact one-sided sign tests, p < {C10_ONSET_P} both). The necessity test"
            " reads two effects: a delay (the time-to-compose tests above) and a block during the hold (the twin"
            " composed inside the window while the held run did not, in more cells than the reverse: exact one-sided"
            f" sign test, p < {C10_ONSET_P}); its words give the median delay and how many held runs composed during"
            " the hold. Reproduced if the block and sufficiency are shown; partly if any of the delay, the block or"
            " sufficiency is shown; not reproduced if none is; inconclusive if necessity is. A test that does not"
            " reject reads 'not shown', never 'not'. Beside it: the"
            " gradient's premise window read at matched state (every seed, stuck ones too, at its own copying"
            " steps with measure 3 low)."),
    "R1": ("No verdict (the paper shows one seed and makes no statement): the share of seeds in which the phase"
           " detector finds all three phases within 40,000 steps, with an exact (Clopper–Pearson) 95 % interval."),
    "R2": ("No verdict (the paper shows one seed and makes no statement). On the fresh crossed design (8"
           " initializations x 8 data orders from seeds never used before, drawn by a stated rule), with"
           f" {R2_MIN_REPLICATES} replicates in every cell (since 2026-12-04): trained eager and compiled in fp32 on"
           " CPU, and twice more with a one-time nudge of 1e-4 at step 0 (perturb seeds 1 and 2) on CPU too (planned"
           " for a GPU on 2026-12-04, moved to CPU on 2026-12-05 before any ran: none was lent); 12,000"
           " steps, each run stopped once 1-var train ≥ 0.9 has held for 5 evaluations; a run composed when its"
           " 1-var train accuracy ends at or above 0.9; only cells with every replicate are read. The"
           " initialization decides in part if shuffling the initializations' labels within each data order"
           " (cells whole) gives a variance of the per-initialization rates at least as large as the observed one"
           f" in under {ODDS_LEVEL:.0%} of 10,000 shuffles; the data order alike; the pair decides beyond its two"
           " parts, against a run's own chance, if two replicates of a cell agree (over every pair of the four)"
           " more often than under swaps that keep each replicate layer's row and column counts"
           f" (p < {ODDS_LEVEL}). R2's answer gives each test's claim with 'shown' when it rejects and 'not shown'"
           " when it does not (never 'not': a test that does not reject shows nothing either way), with its p."
           " Beside it, how much each part weighs, posterior medians with 95 % intervals of a crossed"
           " random-effects logistic model (initialization, data order and cell as random effects, the replicate"
           " kind as a fixed effect): on the latent scale (a run's own chance the logistic residual π²/3) and on"
           " the observed scale (the variance of a run's 0/1 outcome: a run's own chance the mean Bernoulli"
           " variance p(1 − p) within a cell, the initialization's and the data order's parts the variance of the"
           " cell probability's mean over the other factors, the pair's the rest of the cell probability's"
           " variance), each in a table under half-Cauchy priors of scale 0.5, 2.5 and 25 on the SDs (the"
           " sensitivity to the prior)."
           " The mode: an exact McNemar test on the 64 eager/compiled pairs (does one mode compose more often?) and"
           " the between-mode flip rate with its exact interval. Basin or chaos: on the 8 diagonal cells (the i-th"
           " initialization with the i-th data order, chosen before any result), the flip rate against the cell's"
           " own eager run for each perturbation, with the cell as the unit (the replicates of a cell share it):"
           " per cell, the flip share at a nudge of 1e-2 minus the share at 1e-7; basin-like if the mean of these"
           " differences is above 0 by an exact one-sided sign-flip test over the cells (p < 0.05), chaotic"
           " otherwise; each flip rate with an interval that resamples cells beside the exact one on runs. Earlier studies"
           " (below): "
           "A run composed when its 1-var train"
           " accuracy is at least 0.9 after 12,000 steps. The rate over seeds comes with a Clopper–Pearson interval and"
           " is compared with the sweeps' by Fisher's exact test (two-sided, 5 %). In the factorial (four seeds that"
           " composed at 40,000 steps, four that did not; a balanced half of the 8 x 8 initialization x data-order"
           " cells, 8 in each block) the initialization decides if the composers' initializations compose more often"
           " than the failers' over all data orders (Fisher's exact test on the 16 + 16 cells, p < 0.05) while the data orders show no such"
           " difference (p ≥ 0.05); the data order decides in the mirror case; both matter if both tests find a"
           " difference; neither decides alone otherwise (their combination, or chance). Counts per block come with"
           " Clopper–Pearson intervals. The early predictor: at each eval step up to 3,001, the logged quantity (and"
           " direction) with the highest AUC on the runs of even data seeds; it works from the earliest step from which"
           " the quantity chosen at every later step keeps an AUC of at least 0.9 on the runs of odd data seeds."
           " Which setting moves the rate: the same seeds at the f values next to the paper's (r = 1) and at the r"
           " value next to it (f = 0.7), 24,000 steps, each against those seeds' runs at the paper's configuration;"
           " a value moves the rate if the seeds whose outcome changes move one way more often than chance (exact"
           " McNemar test, two-sided, p < 0.05); the runs that composed by step 12,000 are reported beside it, so"
           " that a longer run alone does not make the difference (added before these runs finished)."),
    "R3": ("No verdict (the paper makes no statement): what carries the lookup when the identity pattern is held"
           " (stated 2026-12-06, before the runs it reads). The held runs (the identity pattern held), their shams"
           " and twins in the cells that passed C10's necessity checks are trained again, bit-identical to their"
           " committed metrics (checked), keeping a checkpoint every 100 steps. At each, the lookup's score margin"
           " at `=` on the measurement batch's 1-var rows (the queried value's score minus the mean score of the"
           " sequence's other assigned values) is split exactly into 25 terms, one per pair of residual parts on the"
           " query and the key side: token, position, layer 1's copy of the variable, layer 1's copy of positions,"
           " layer 1's copy of other tokens. The candidate route is the term with the largest median over the held"
           " runs at their composition step (C10's time to compose). The causal test, at that step: the candidate's"
           " key-side part is ablated (replaced at the assigned values by its mean over them), and, as the control,"
           " the other key-side part whose whole share of the margin has the smallest median size; the candidate"
           f" carries the lookup if its ablation lowers the in-context lookup more than the control's in more held"
           f" runs than the reverse (exact one-sided sign test, p < {ROUTE_P}) and by a median of at least"
           f" {ROUTE_DROP}; read on at least {ROUTE_MIN_RUNS} held runs, else not yet run. A second route exists if"
           " the carrying term is not the identity pattern's (the copy of the variable on both sides). Beside it,"
           " descriptive: the same terms and ablations in the twins, the shams and seed 42, and measure 3 (the 12 x"
           " 12 map's rows that peak on their own variable) against the same map read in context (the queried"
           " variable against the sequence's other assigned variables). Second part (stated 2026-12-06, after the"
           " first part read a second route, before its runs; sweep c10_onset_double_hold): where a second route is"
           " found, a double hold decides whether some variable matching is necessary. In the same cells, from the"
           " same trigger for the same window, after every step the smallest change of W_Q2 puts back the row"
           " contrasts of the variable QK map (the identity pattern, as the held run) and of the queries' map Q̄"
           " W_QK2 Uᵀ (Q̄: the lookup head's input at `=` averaged per queried variable, every query-side part at once,"
           " so the second route and any other route to the values' variable copies are held); its sham does the"
           " same for the wrong pairing; the twin is C10's. Read with C10's necessity test (its checks, the delay"
           " and the block during the hold, exact one-sided sign tests at p < 0.05, at least 8 cells)."),
    "G1": ("Per shape, on every seed that composed: the C1 rule (the three phases, detected from the pools as in"
           " chapter 2), over the shape's seeds as C1's; the steps of the jump and the final rise are reported beside"
           " the paper shape's seeds, not judged. Read on runs of 40,000 steps (the paper's main-run length, as the"
           " paper shape's seeds), since 2026-12-04."),
    "G2": (f"Per shape, on every seed that composed, at the end of training: reproduced if measure 2 ≥"
           f" {PREV_TOKEN_LEVEL}, measure 3 ≥ {IDENTITY_LEVEL} and measure 6 ≥ {READ_LEVEL} (the levels of C4 and C5);"
           " partly if one or two of them hold; not reproduced if none does. Where the shape has more than one"
           " candidate for a role (several heads or blocks), the roles are found on the final model before the"
           " measures are read: the copy head is the (block, head) with the highest measure 2 among the blocks before"
           " the last; the lookup is read over heads: in each block after the copy's (up to the MLP's), measure 6 is"
           " read on the union of a set of its heads' attention from `=` (the sum of their patterns: are the top 2"
           " of the sum the two operands' values?) for every non-empty set of heads, and the lookup heads are the"
           " (block, set) with the highest measure 6 (the fewest heads on a tie), so a lookup split across two heads,"
           " one per operand, is seen; measure 3 is then the lowest of the lookup heads' (each must match"
           " variables). One head's union is its own measure 6: a shape with one head per block reads as before."
           " The best single head's measure 6 is reported beside it. " + OVER_SEEDS),
    "G3": ("Per shape, on every seed whose addition is learned (0-var train ≥ 0.9 at the end): the C7 rule with the"
           " shape's own modulus (a few key frequencies: at most a third of its (N − 1)/2 frequencies hold 70 % of"
           " the embedding's power; at least 3 single neurons above R² 0.9; the median R² above the shuffled null's"
           " 99th percentile). " + OVER_SEEDS),
    "G4": ("A finding, with the seed as the unit, paired (since 2026-12-06, stated before its runs): fresh seeds"
           f" {G4_FRESH_FIRST}–{G4_FRESH_FIRST + G4_FRESH_SEEDS - 1}, never used before, each trained in the paper"
           " shape and in every departure, 12,000 steps at most, stopped once 1-var train ≥ 0.9 has held for 5"
           " evaluations; a run composed when 1-var train ≥ 0.9 at its end. Per seed: the share of the departures"
           " that composed minus whether the paper shape did. The test: an exact two-sided sign-flip test of the"
           f" mean of these differences over the seeds; a different rate is shown if p < {GENERAL_RATE_P}, 'not"
           " shown' otherwise; read only when every planned run has finished. Its power, stated before the runs"
           f" (simulated): {G4_POWER}. Beside it, descriptive: each shape's count with its exact interval and its"
           " exact McNemar test against the paper shape on the same seeds. The readings before (the three seeds of"
           " each departure against the 32 of chapter 4, below) stay in the rule's history. The rule before: "
           "A finding, with the seed as the unit: how many seeds composed (1-var train ≥ 0.9 at the end), against"
           " the paper shape's 32 seeds of chapter 4 (12,000 steps, by which every paper-shape seed that composes"
           " has). The test: every departure's seeds pooled against the paper shape's 32, Fisher's exact two-sided"
           f" test; the departures compose at a different rate if p < {GENERAL_RATE_P} ('shown'), else 'not"
           " shown'. Beside it, each shape's count with its exact 95 % interval and its own Fisher p, descriptive"
           " (with 3 seeds a shape's test cannot reject: its smallest p is 0.056); a shape whose p is not below"
           f" {GENERAL_RATE_P} reads 'not shown', never 'no difference'."),
    "G5": ("Does the 2-var threshold follow pair coverage 1 − (1 − r)^k (k = the variables a 2-var row may name on"
           " the left: 10 at 12 variables, 22 at 24)? At r = 0.01 and 0.0616, where the 12-variable sweep is still"
           " rising, each seed 42–44 is trained at 24 variables (f = 0.7, 30,000 steps) and its 2-var union exact"
           " accuracy is compared with the same seed's 12-variable run at the same r (both composed). The share of"
           " 2-var queries is the same at both sizes and the coverage about twice as high at 24: coverage predicts a"
           f" gain of about +{COVERAGE_PREDICTED_GAIN:.2f}. It follows coverage if the t-interval (95 %) of the mean"
           f" paired difference lies above 0; it does not if the interval's top is below +{COVERAGE_NO_GAIN:.3f}"
           " (half the predicted gain); inconclusive otherwise, or with fewer than 3 pairs."),
}


RULES = StudyMapping(_rules)  # every rule in words: {claim: its rule}, with the levels the study sets

OLD_C10_CAUSAL_WORDS = ("A causal test of the claim (stated 2026-12-03, before its runs). Necessity: in the first"
                        " three seeds that composed in the composition study (42, 44, 49), the identity component"
                        " of every layer-2 QK update (its part along the direction that raises the variable QK"
                        " map's same-variable scores over the others fastest) is removed over steps"
                        f" 1–{C10_REMOVE_TO:,}; each seed's twin is its unsteered run on the same machine."
                        " Sufficiency: in the first three seeds that stayed stuck (43, 45, 46), each update's"
                        " identity component is set to half the update's size over steps 4,001–8,000, then"
                        " released; a sham pushes a random direction orthogonal to it as hard. The identity"
                        f" component is necessary if removing it blocks composition (1-var train ≥ {LEARNED_LEVEL})"
                        f" up to step {C10_REMOVE_TO:,} in every seed whose twin composes by then, and sufficient if"
                        " every steered stuck seed composes and holds after the release while fewer of the shams do"
                        " (and the twins stay stuck). Reproduced if it is both; partly if one of the two; not"
                        f" reproduced if neither; inconclusive if fewer than {C10_MIN_ARM} seeds can be read in an"
                        " arm (twins composing within the removal window; twins stuck). The gradient's direction"
                        " itself (the whitened contrast of the negative gradient and of the AdamW update in the"
                        " premise window, composed seeds against stuck ones at matched steps) is reported beside"
                        " it.")  # C10's rule of 2026-12-03 (`c10_causal`; RULE_CHANGES)
OLD_C10_WORDS = ("From checkpoints every 20 steps between the end of phase 1 and just after the jump of each composed"
                 " seed, the premise window (measures 5 and 4 high, measure 3 low) and the whitened diagonal contrast"
                 " of the negative gradient on layer 2's QK averaged over the copying checkpoints before composition;"
                 " reproduced if its 95 % bootstrap interval over seeds lies above 0 and at least 3 seeds have the"
                 " window, partly if fewer have the window, not reproduced otherwise.")

# Rules rewritten after their first results, with the date, the earlier wording and why (the chapters print them
# in a collapsed "How this rule changed" note beside the rule).
RULE_CHANGES = {
    "C1": (("2026-12", "The jump was found from the mean of the 1-var and 2-var train accuracies and measure 3, and"
                       " C1 was read on the three runs of the phases chapter; now the jump is read from the"
                       " accuracies only (measure 3 flickers: it misplaced seed 51's jump and hid seed 49's) and C1"
                       " reads every composed seed."),),
    "C2": (("2026-12", "Read on the three runs of the phases chapter; now on all ten seeds."),),
    "C3": (("2026-12", "Read on the runs of the phases chapter that had a detected jump; now on every seed that"
                       " composed, with partly for a seed whose lowest var-restricted pool is at least 0.9."),),
    "C4": (("2026-12", "The ablation condition did not ask that 1-var accuracy was high before the ablation: a model"
                       " whose layer 1 copies nothing (the hand-built solver with its value weights zeroed) passed"
                       " it, its lookup already broken. The negative control found it; now the clean accuracy must"
                       " be at least 0.9."),),
    "C7": (("2026-12", f"Reproduced if the embedding's key frequencies (holding 70 % of its non-constant power)"
                       f" numbered 1 to {OLD_MAX_KEY_FREQUENCIES} of 29 and more than {OLD_SINGLE_NEURON_SHARE:.0%}"
                       " of the active neurons were explained above 90 % by one frequency. The authors' released"
                       " weights fail that rule (10.9 % of their active neurons above 0.9): it asked for more than"
                       " the paper claims ('single neurons explained to > 90 %'), so it was rewritten from the"
                       " claim's words."),
           ("2026-12-02", "Recorded late: the same rewrite also raised the bound on key frequencies from 7 to 9 (a"
                          " third of the 29); the entry above named only the neuron condition. The authors' weights"
                          " (7 frequencies) did not need it; it turns seed 42 (8 frequencies) from not reproduced"
                          " to reproduced. Verdict with the bound at 7 and the rest of today's rule: partly (4 of 5"
                          " seeds, seed 42 not); with the bound at 9: reproduced (5 of 5)."),),
    "C8": (("2026-12", "The crossing was read on the mean over seeds of every run, composed or not: one run that"
                       " had not finished composing (seed 43 at f = 0.404) set it. Now only composed runs are read,"
                       " per seed, and the threshold is the median over seeds."),),
    "C9": (("2026-12", "As C8: 9 of the 40 runs never composed and pulled the mean curve under the level at any"
                       " r; now the composition rate is its own panel and the threshold reads composed runs."),
           ("2026-12-02", "The rule was C8's: the median bracket of the per-seed crossings, reproduced within 0.1 of"
                          " the paper's value. It could not discriminate (it passed any paper value from 0.09 to"
                          " 0.34), dropped seed 45 (no crossing) and read seeds 44-46 only up to r = 0.268, where"
                          " they could give only low crossings. Verdict under it: reproduced, median bracket"
                          " (0.191, 0.242], interval of the median 0.062-0.526. Rewritten (a logistic fit with the"
                          " seed as the resampling unit, censored crossings, an 'inconclusive' width) before seeds"
                          " 44-46 were run beyond r = 0.268."),
           ("2026-12-04", "Read on seeds 42-46 (five seeds at the r grid's first 13 values, on CPU): with 5 seeds"
                          " the estimator gives an interval no wider than 0.2 in about 30 % of data sets simulated"
                          " from a random-intercept fit of the r sweep (57 % with 10 seeds, 81 % with 15, 92 % with"
                          " 20; `python -m assignadd_core power`). Verdict on them: inconclusive (interval"
                          " 0.030-0.305). Now the rule reads every seed at those values, seeds 42-46 and the added"
                          " seeds 47-56 (15 in all, chosen by that calculation before they ran; 30,000 steps, the"
                          " paper's protocol), waits until every planned run has finished, and says that the runs'"
                          " devices differ (CPU for 42-46, a GPU for 47-56). The Firth fit's Newton steps are now"
                          " halved until its penalized likelihood does not fall: on separated resamples (which more"
                          " seeds make more common) an unhalved step could stop at a meaningless midpoint (-0.72"
                          " on a clean synthetic threshold at 0.2); today's fit on seeds 42-46 is unchanged."),),
    "R2": (("2026-12", "The predictor's step was the earliest at which the held-out AUC reached 0.9. On the first 32"
                       " seeds one step did so by chance (step 601: 0.97 held out, 0.82 on the fitting half) and the"
                       " next ones fell to 0.71-0.76; so the step must now hold the level to step 3,001. Changed after"
                       " seeing those numbers, before the factorial's and the bf16 runs were in."),
           ("2026-12-02", "The factorial's answer came from Fisher's exact test on its 16 + 16 cells, as if they were"
                          " independent, though they share 4 + 4 initializations and 8 data orders, and the"
                          " 'composer' and 'failer' labels were set by the 8 diagonal cells counted among them."
                          " Verdict under it: the initialization decides (p = 0.015). Withdrawn: R2's answer now"
                          " comes from a fresh crossed design with replicates, its rule stated before its first run;"
                          " the old factorial is re-read with the initialization as the unit and without the"
                          " diagonal."),
           ("2026-12-03", "Basin or chaos was a one-sided Fisher test on the runs of the smallest and the largest"
                          " nudge, as if the 24 runs of each were independent, though they are 3 replicates in each"
                          " of 8 cells. Now the cell is the unit (a sign-flip test on the per-cell differences), and"
                          " every flip rate gets a cell-resampling interval beside its exact one. Changed when 21"
                          " and 20 of the 24 runs were in, before the rule was read (it waits for all 24): on those"
                          " runs the Fisher rule reads chaotic (p = 0.75), the cell rule chaotic (p = 1)."),
           ("2026-12-04", "Two replicates per cell (eager and compiled) could not separate the pair from a run's"
                          " own chance: the latent share printed for a run's own chance (0.02) followed the prior"
                          " (medians 0.022, 0.025 and 0.004 at half-Cauchy scales 0.5, 2.5 and 25 on the SDs;"
                          " on the observed scale 0.16, 0.18 and 0.03), and the answer read"
                          " 'chance' or a part's absence where a test had only not rejected. Now every cell has 4"
                          " replicates (two step-0 nudges added, on a GPU), the cell test agrees over every pair of"
                          " them, the shares are given on the observed scale beside the latent one with their"
                          " sensitivity to the prior scale, and each test's words are 'shown' or 'not shown'"
                          " (`r2_replicated`; `odds_answer` kept for the earlier reading). Verdict before: a"
                          " finding, 'the initialization decides' on the 2-replicate design; after: not yet run"
                          " (the replicates are training)."),),
    "G1": (("2026-12-04", "Read on runs of 20,000 steps (where the authors' figures end). There a seed without a"
                          " final rise was mostly censored, not a seed without one: four of the five paper-shape"
                          " seeds of 42-51 that composed finish it at steps 20,801-37,301. The rule is the same; it"
                          " now reads runs of 40,000 steps (the paper's main-run length), stated before they ran."
                          " Verdict on the 20,000-step runs: partly in every departure (1, 2, 1 and 1 of 3 seeds"
                          " reproduce it)."),),
    "G2": (("2026-12-04", "Measure 6 was read on one head, the lookup (block, head) with the highest measure 6: its"
                          " top-2 match cannot see a lookup split across two heads, one fetching each operand (3"
                          " layers x 2 heads). Now it is read on the union of a set of the lookup block's heads (the"
                          " sum of their patterns from `=`), the best set chosen, and measure 3 is the lowest of the"
                          " lookup heads'; a shape with one head per block reads exactly as before. Verdict before:"
                          " reproduced at modulus 97 and 113, partly at 24 variables (2 of 3) and 3 layers x 2 heads"
                          " (0 of 3; measure 6 0.34, 0.25, 0.21); on those 20,000-step runs the union reads 0.34,"
                          " 0.25, 0.21: the same verdicts."),),
    "G4": (("2026-12-04", "Each shape's 3 seeds were tested alone against the paper shape's 32 by Fisher's exact"
                          " test, which cannot reject with 3 seeds (its smallest p is 0.056), and a non-rejection"
                          " read 'no difference shown'. Now the departures' seeds are pooled against the paper"
                          " shape's (the seed as the unit) and the per-shape counts are descriptive, a"
                          " non-rejection reading 'not shown'. Verdict before: every departure 3 of 3 against 21 of"
                          " 32, p = 0.54, 'no difference shown'; the pooled test on those 20,000-step runs: 12 of 12"
                          " against 21 of 32, p = 0.021."),
           ("2026-12-06", "The pooled test was adopted after the 20,000-step runs showed 12 of 12, and the"
                          " departures reuse seeds 42-44, which are among the paper shape's 32: 11 of 12 would give"
                          " p = 0.13, and against the crossed design's 50 of 64, p = 0.11. Now G4 is replicated on"
                          " fresh seeds, paired by seed, its rule and power stated before those runs. Verdict"
                          " before: a different rate shown (the 40,000-step departures pooled, 12 of 12 against 21 of"
                          " 32, Fisher p = 0.021, post hoc); after: not yet run (the fresh seeds are training)."),),
    "C10": (("2026-12", "The window was read on the committed checkpoints of seed 42 alone (every 100 steps; it held"
                        " none), with the interval over its checkpoints; now on dense checkpoints of every composed"
                        " seed, with the interval over seeds and the failing seeds as a control."),
            ("2026-12-02", "Recorded late: the rule changed too, not only its checkpoints. The first rule read the"
                           " gradient contrast inside the premise window only, for the negative gradient and the"
                           " AdamW update, and said 'not yet run' with fewer than 3 window checkpoints; the rule"
                           " above averages every copying checkpoint before composition, reads the negative"
                           " gradient only, and turns a missing window into 'partly'. Under the first rule the one"
                           " premise window (seed 44, 3 checkpoints) gives a whitened contrast of -0.166: not"
                           " reproduced. Under the rule after it: partly."),
            ("2026-12-03", "C10 became an experiment, stated before its runs: the verdict comes from removing the"
                           " identity component of the layer-2 QK update in composing seeds and adding it in stuck"
                           " ones (`c10_causal`), not from the sign of the gradient's contrast, which a direction"
                           " that is not the cause could show too (stuck seeds' contrasts are positive as well). The"
                           " rule before it, kept as `c10_gradient`: " + OLD_C10_WORDS + " Its verdict on the"
                           " committed runs: partly; under the new rule, before its runs: not yet run."),
            ("2026-12-04", "C10 at copying onset, stated before its runs (`c10_onset`). The rule of 2026-12-03"
                           " (`c10_causal`): " + OLD_C10_CAUSAL_WORDS + " Its verdict on its runs: partly. Why it"
                           " changed: its removal arm had no sham and started at step 1, before layer 1 copies, and"
                           " damaged more than the lookup (the removed runs ended at 1-var 0.45-0.47, loss 1.27-1.31,"
                           " layer-1 copying 0.25-0.28: worse than the stuck basin, where their twins sat at 0.56-0.57,"
                           " loss about 0.94, copying 0.98-1.00), and with a per-seed chance of being stuck of"
                           " 0.2-0.34, 3 stuck of 3 happens by chance 1-4 % of the time; its push never formed the"
                           " identity pattern (measure 3 at most 0.25) and disturbed training as much as its sham, an"
                           " untested condition rather than a negative result. Now the steering starts at copying"
                           " onset, the removal has a sham in the same subspace, each arm has a manipulation check,"
                           " necessity is a paired test on the time to compose over at least 8 cells, and a push that"
                           " fails its check leaves sufficiency untested. Verdict under the new rule, before its runs:"
                           " not yet run."),
            ("2026-12-04", "Necessity reads the hold arms (`c10_onset_hold`, stated before their runs) in place of"
                           " the update removal, which stays beside it. Why: in the first six of its sixteen cells the"
                           " removal failed its own manipulation check, measure 3 rising in its window as in the"
                           " twin's (highest 0.67-1.00): removing the identity component of W_QK2's update leaves layer"
                           " 1's copies free to move the variable map U W_QK2 Uᵀ, so the pattern formed anyway. Seen"
                           " when the change was made: those six cells' readings, including their times to compose"
                           " (the removal's equal to the twin's within 400 steps), which the rule could not read"
                           " because the check failed. Verdict before (the removal arms, 18 of 48 onset runs in): not"
                           " yet run, its checks failing in every cell read so far; after: not yet run."),
            ("2026-12-06", "Two changes, stated before the clamp's runs. Sufficiency is read from a clamp"
                           " (`c10_clamp`, sweep c10_onset_clamp) in place of the pushes, none of which passed its"
                           " check (measure 3 at most 0.5 in their windows), so sufficiency was untested; the pushes"
                           " are read beside it as an arm that failed its check. And the necessity test's words and"
                           " decision: it read 'necessity shown' for what its runs show as a delay (every held run"
                           " composed, a median of 1,900 steps after its twin, 5 of 9 during the hold itself). Now it"
                           " reads two effects, a delay and a block during the hold (sign test of twin-composed,"
                           " held-not inside the window), its words give the median delay and how many held runs"
                           " composed during the hold, and reproduced needs the block with sufficiency (before: the"
                           " delay with sufficiency). Verdict before: partly (necessity shown, sufficiency untested);"
                           " after: not yet run (the clamp's runs); on the runs so far, a delay shown and a block"
                           " during the hold not shown (5 of 9 held runs composed during it, their twins 9 of 9,"
                           " p = 0.0625), so partly at best until the clamp is read."),),
}




def odds_answer(p_values: Mapping[str, float]) -> dict:
    """R2 from the crossed design's permutation tests (`analysis.odds.permutation_tests`: p for "init", "data",
    "cell"): the parts that pass at ODDS_LEVEL and the answer in words."""
    passing = [part for part in ("init", "data", "cell") if p_values[part] < ODDS_LEVEL]
    mains = [part for part in passing if part != "cell"]
    if not passing:
        answer = CHANCE
    elif not mains:
        answer = "the pair alone: " + ODDS_PARTS["cell"]
    else:
        answer = " and ".join(ODDS_PARTS[part] for part in mains)
        if len(mains) == 2:
            answer = "both " + answer
        if "cell" in passing:
            answer += ", and their pair beyond them" if len(mains) == 2 else ", and the pair beyond it"
    return {"decides": passing, "answer": answer, "p": dict(p_values)}


def r2_replicated(p_values: Mapping[str, float], cells: int, replicates: int) -> Verdict:
    """R2 with replicates (RULES["R2"], since 2026-12-04): from the permutation tests on `cells` cells of
    `replicates` runs each (`analysis.odds.permutation_tests` on `analysis.odds.replicated_cells`), each test's claim
    with 'shown' or 'not shown' and its p; not yet run without cells or with fewer than R2_MIN_REPLICATES per cell."""
    if not cells or replicates < R2_MIN_REPLICATES:
        return Verdict(NOT_YET_RUN, f"{cells} cells with {replicates} replicates each (the rule reads cells with"
                                    f" {R2_MIN_REPLICATES})")
    words = "; ".join(f"{shown_words(p_values[part] < ODDS_LEVEL, R2_CLAIMS[part])} (p = {p_values[part]:.2g})"
                      for part in ("init", "data", "cell"))
    return Verdict(FINDING, f"{cells} cells with {replicates} replicates each: {words}")


def basin_or_chaos(small, large) -> dict:
    """Basin or chaos with the cell as the unit: `small` and `large` are the (flips, runs) of each cell at the
    smallest and the largest nudge, in the same cell order. Per cell the difference of the two flip shares; basin-like
    if their mean is above 0 by an exact one-sided sign-flip test over the cells (every assignment of signs; p <
    ODDS_LEVEL), else chaotic. Beside it, the first rule's Fisher test on the runs (`basin_or_chaos_by_runs`)."""
    if len(small) != len(large) or not small:
        raise ValueError("basin_or_chaos needs the same cells, at least one, at both nudge sizes")
    diffs = np.array([fl / nl - fs / ns for (fs, ns), (fl, nl) in zip(small, large)])
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(diffs))))  # 2^cells: exact for 8 cells
    p = float(np.mean((signs * np.abs(diffs)).mean(1) >= diffs.mean() - 1e-12))
    return {"p": p, "reading": "basin-like" if p < ODDS_LEVEL else "chaotic", "cells": len(diffs),
            "mean_difference": float(diffs.mean()),
            "by_runs": basin_or_chaos_by_runs(tuple(map(sum, zip(*small))), tuple(map(sum, zip(*large))))}


def basin_or_chaos_by_runs(small: tuple[int, int], large: tuple[int, int]) -> dict:
    """R2's first basin-or-chaos rule (before 2026-12-03; RULE_CHANGES["R2"]), runs as the unit: basin-like if the
    small nudge's (flips, runs) flip less often than the large one's (one-sided Fisher's exact test, p <
    ODDS_LEVEL), else chaotic. Kept to print its reading beside the cell-level one."""
    from scipy.stats import fisher_exact  # here, not at the top: a slow import (scipy)
    table = [[small[0], small[1] - small[0]], [large[0], large[1] - large[0]]]
    p = float(fisher_exact(table, alternative="less").pvalue)
    return {"p": p, "reading": "basin-like" if p < ODDS_LEVEL else "chaotic"}


def _fails(*checks) -> str:
    """'; fails: <what> <value> (needs <level>), ...' for the checks (what, value text, level text, passed) that did
    not pass: every verdict text names the condition that made it less than reproduced."""
    failed = [f"{what} {value} (needs {level})" for what, value, level, ok in checks if not ok]
    return f"; fails: {', '.join(failed)}" if failed else ""


def _why(verdict: Verdict) -> str:
    """The failed conditions of a seed's verdict text (`_fails`), or ''."""
    return verdict.text.split("; fails: ", 1)[1] if "; fails: " in verdict.text else ""


def _fmt(steps) -> str:
    return ", ".join("–" if s is None else f"{int(s):,}" for s in steps)


def over_seeds(per_seed: Mapping[str, Verdict], who: str = "composed seeds") -> Verdict:
    """A claim's verdict from its per-seed verdicts: every seed, some, or none (`OVER_SEEDS`)."""
    n = len(per_seed)
    full = [name for name, v in per_seed.items() if v.verdict == REPRODUCED]
    part = [name for name, v in per_seed.items() if v.verdict == PARTLY]
    text = f"{rate_text(len(full), n)} {who} reproduce it"

    def named(names):  # each seed with the condition it failed
        return ", ".join(f"{name} ({_why(per_seed[name])})" if _why(per_seed[name]) else name for name in names)
    if part:
        text += f"; partly in {named(part)}"
    failed = [name for name in per_seed if name not in full and name not in part]
    if failed:
        text += f"; not in {named(failed)}"
    # the deciding numbers of every seed (each seed text's first clause: its measured values)
    text += "; per seed: " + "; ".join(f"{name} {v.text.split('; ')[0]}" for name, v in per_seed.items()) if n else ""
    if n and len(full) == n:
        return Verdict(REPRODUCED, text)
    return Verdict(PARTLY if full or part else NOT_REPRODUCED, text)


# ---------------------------------------------------------------------------- phases chapter
def shows_three_phases(p: Mapping) -> bool:
    """One run's detected phases (`analysis.phases.detect_phases`) are the paper's three, in order."""
    found = all(p.get(k) is not None for k in ("addition", "jump", "refinement"))
    return bool(found and p.get("addition_first") and p["addition"] <= p["jump"] < p["refinement"])


def c1_seed(p: Mapping) -> Verdict:
    """C1 for one composed seed, from its detected phases."""
    text = (f"addition {_fmt([p.get('addition')])}, composed {_fmt([p.get('composition')])}, jump"
            f" {_fmt([p.get('jump')])}, final rise {_fmt([p.get('refinement')])}")
    if shows_three_phases(p):
        return Verdict(REPRODUCED, text)
    if p.get("composition") is not None and p.get("addition_first"):
        return Verdict(PARTLY, text + (" (no sharp jump)" if p.get("jump") is None else " (no final rise)"))
    return Verdict(NOT_REPRODUCED, text)


def c2_seed(heldout: float, swap_heldout: float) -> Verdict:
    """C2 for one model: 0-var held-out exact accuracy, and the same on pairs whose swap is held out too."""
    paper = paper_numbers.HELDOUT_EXACT.value
    full, swap_ok = heldout >= paper - HELDOUT_MARGIN, swap_heldout >= SWAP_HELDOUT_LEVEL
    text = (f"0-var held-out exact {heldout:.1%}; on pairs whose swap is also held out {swap_heldout:.1%}"
            + _fails(("0-var held-out exact", f"{heldout:.1%}", f"≥ {paper - HELDOUT_MARGIN:.1%}", full),
                     ("swap held out too", f"{swap_heldout:.1%}", f"≥ {SWAP_HELDOUT_LEVEL:.0%}", swap_ok)))
    if full and swap_ok:
        return Verdict(REPRODUCED, text)
    return Verdict(PARTLY if full or heldout >= 0.9 else NOT_REPRODUCED, text)


def c3_seed(var_pools: Mapping[str, float]) -> Verdict:
    """C3 for one composed seed: its final accuracy on each var-restricted pool."""
    low = min(var_pools.values())
    passed = low >= POOL_LEVEL
    text = (f"lowest var-restricted pool {low:.3f} ({min(var_pools, key=var_pools.get)})"
            + _fails(("lowest var-restricted pool", f"{low:.3f}", f"≥ {POOL_LEVEL}", passed)))
    if passed:
        return Verdict(REPRODUCED, text)
    return Verdict(PARTLY if low >= 0.9 else NOT_REPRODUCED, text)


# ---------------------------------------------------------------------------- circuits chapter
def c4_previous_token(m2: float, m5: float, value_ablated_1var: float, value_ablated_0var: float,
                      clean_1var: float = 1.0) -> Verdict:
    """`clean_1var`: 1-var train accuracy (with a distractor) before the ablation, which must be at least
    LEARNED_LEVEL: an ablation cannot break a lookup that does not work."""
    prev_token, copies = m2 >= PREV_TOKEN_LEVEL, m5 >= COPY_LEVEL
    learned, broken, kept = (clean_1var >= LEARNED_LEVEL, value_ablated_1var < LOOKUP_BROKEN,
                             value_ablated_0var >= ADDITION_KEPT)
    measures, isolated = prev_token and copies, learned and broken and kept
    text = (f"measure 2 = {m2:.2f}, measure 5 = {m5:.2f}; layer 1 mean-ablated at value positions only: 1-var train"
            f" (distractor) {clean_1var:.3f} → {value_ablated_1var:.3f}, 0-var train {value_ablated_0var:.3f}"
            + _fails(("measure 2", f"{m2:.2f}", f"≥ {PREV_TOKEN_LEVEL}", prev_token),
                     ("measure 5", f"{m5:.2f}", f"≥ {COPY_LEVEL}", copies),
                     ("1-var train before the ablation", f"{clean_1var:.3f}", f"≥ {LEARNED_LEVEL}", learned),
                     ("1-var train ablated", f"{value_ablated_1var:.3f}", f"< {LOOKUP_BROKEN}", broken),
                     ("0-var train ablated", f"{value_ablated_0var:.3f}", f"≥ {ADDITION_KEPT}", kept)))
    if measures and isolated:
        return Verdict(REPRODUCED, text)
    return Verdict(PARTLY if measures or isolated else NOT_REPRODUCED, text)


def c5_identity(m3: float, m6: float, attention_follows_label: float, answer_follows_label: float) -> Verdict:
    identity, reads = m3 >= IDENTITY_LEVEL, m6 >= READ_LEVEL
    attention_ok, answer_ok = attention_follows_label >= RELABEL_LEVEL, answer_follows_label >= RELABEL_LEVEL
    measures, relabel = identity and reads, attention_ok and answer_ok
    text = (f"measure 3 = {m3:.2f}, measure 6 = {m6:.2f}; relabel patch: attention follows the label in"
            f" {attention_follows_label:.1%}, the answer in {answer_follows_label:.1%}"
            + _fails(("measure 3", f"{m3:.2f}", f"≥ {IDENTITY_LEVEL}", identity),
                     ("measure 6", f"{m6:.2f}", f"≥ {READ_LEVEL}", reads),
                     ("attention follows the label", f"{attention_follows_label:.1%}", f"≥ {RELABEL_LEVEL:.0%}",
                      attention_ok),
                     ("answer follows the label", f"{answer_follows_label:.1%}", f"≥ {RELABEL_LEVEL:.0%}", answer_ok)))
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
    matched_ok, near_ceiling, kept = matched >= MATCHED_LEVEL, matched >= ceiling - CEILING_GAP, patch_kept >= PATCH_KEPT
    full = separated and matched_ok and near_ceiling and kept
    text = (f"MLP-input cosine: matched {matched:.3f}, ceiling {ceiling:.3f}, hardest baseline {hardest}"
            f" {baselines[hardest]:.3f} (gap {gap:+.3f}); attention patch keeps {patch_kept:.1%} of answers"
            + _fails(("matched cosine", f"{matched:.3f}", f"≥ {MATCHED_LEVEL}", matched_ok),
                     ("gap to the ceiling", f"{ceiling - matched:.3f}", f"≤ {CEILING_GAP}", near_ceiling),
                     ("gap to the hardest baseline", f"{gap:+.3f}", f"≥ {BASELINE_GAP}", separated),
                     ("answers kept by the patch", f"{patch_kept:.1%}", f"≥ {PATCH_KEPT:.0%}", kept)))
    if full:
        return Verdict(REPRODUCED, text)
    return Verdict(PARTLY if separated else NOT_REPRODUCED, text)


def c7_fourier(n_key_frequencies: int, n_above_09: int, median_r2: float, null_median_r2_q99: float,
               best_r2: float = float("nan"), n_frequencies: int = 29) -> Verdict:
    """`n_key_frequencies`: fewest frequencies holding 70 % of W_E's non-constant power (of `n_frequencies`,
    29 at N = 59); `n_above_09`: active neurons with a single-frequency R² above 0.9."""
    few = 1 <= n_key_frequencies <= int(FEW_SHARE * n_frequencies)
    beats_null = median_r2 > null_median_r2_q99
    single = n_above_09 >= SINGLE_NEURONS
    text = (f"{n_key_frequencies} frequencies hold 70 % of the embedding's power; {n_above_09} active neurons with"
            f" R² > {SINGLE_NEURON_R2} (best {best_r2:.3f}); median R² {median_r2:.3f} vs null 99th percentile"
            f" {null_median_r2_q99:.3f}"
            + _fails(("key frequencies", f"{n_key_frequencies}", f"1 to {int(FEW_SHARE * n_frequencies)}", few),
                     ("median R² against the null", f"{median_r2:.3f}", f"> {null_median_r2_q99:.3f}", beats_null),
                     ("single neurons above R² 0.9", f"{n_above_09}", f"≥ {SINGLE_NEURONS}", single)))
    if few and beats_null and single:
        return Verdict(REPRODUCED, text)
    return Verdict(PARTLY if few and beats_null else NOT_REPRODUCED, text)


def c7_fourier_before_2026_12(n_key_frequencies: int, share_above_09: float, median_r2: float,
                              null_median_r2_q99: float) -> Verdict:
    """C7's earlier rule (RULE_CHANGES["C7"]), kept so the chapter prints its verdict beside the new one."""
    few = 1 <= n_key_frequencies <= OLD_MAX_KEY_FREQUENCIES
    beats_null = median_r2 > null_median_r2_q99
    text = (f"{n_key_frequencies} key frequencies; {share_above_09:.1%} of active neurons with R² > 0.9; median R²"
            f" {median_r2:.3f} vs null 99th percentile {null_median_r2_q99:.3f}")
    if few and beats_null and share_above_09 > OLD_SINGLE_NEURON_SHARE:
        return Verdict(REPRODUCED, text)
    return Verdict(PARTLY if few and beats_null else NOT_REPRODUCED, text)


# ---------------------------------------------------------------------------- data thresholds (C8, C9)
@dataclass(frozen=True)
class SeedCrossing:
    """One seed's threshold on its composed sweep runs: crossing at `value`, bracket (`below`, `value`]."""
    seed: int
    value: float | None  # None: its composed runs do not stay at or above the level up to its largest value
    below: float | None  # None: every composed run of the seed reaches the level (threshold below its grid)
    runs: int  # composed runs read


def seed_crossing(seed: int, values, accuracies, level: float = THRESHOLD_LEVEL) -> SeedCrossing:
    """Crossing of one seed's composed runs: grid `values` and their `accuracies` (any order)."""
    pairs = sorted(zip(values, accuracies))
    if not pairs or pairs[-1][1] < level:
        return SeedCrossing(seed, None, None, len(pairs))
    under = [i for i, (_, a) in enumerate(pairs) if a < level]
    if not under:
        return SeedCrossing(seed, float(pairs[0][0]), None, len(pairs))
    return SeedCrossing(seed, float(pairs[under[-1] + 1][0]), float(pairs[under[-1]][0]), len(pairs))


def median_bracket(crossings: list[SeedCrossing], n_boot: int = 2000, seed: int = 0) -> dict:
    """Median over seeds of the crossings and of the brackets' lower ends (a seed with no value under the level
    counts its crossing as both), and a 95 % bootstrap interval of the median crossing (seeds resampled)."""
    found = [c for c in crossings if c.value is not None]
    if not found:
        return {"n": 0, "crossing": None, "below": None, "interval": None}
    tops = np.array([c.value for c in found])
    lows = np.array([c.below if c.below is not None else c.value for c in found])
    rng = np.random.default_rng(seed)
    boots = np.median(tops[rng.integers(0, len(tops), (n_boot, len(tops)))], axis=1)
    return {"n": len(found), "crossing": float(np.median(tops)), "below": float(np.median(lows)),
            "interval": (float(np.quantile(boots, 0.025)), float(np.quantile(boots, 0.975)))}


def threshold_verdict(crossings: list[SeedCrossing], paper: float, symbol: str) -> Verdict:
    """C8/C9: the median bracket over seeds against the paper's value (RULES["C8"])."""
    m = median_bracket(crossings)
    per_seed = "; ".join(f"seed {c.seed}: " + ("no crossing" if c.value is None else
                         f"({'–' if c.below is None else f'{c.below:.3f}'}, {c.value:.3f}]") + f" ({c.runs} runs)"
                         for c in crossings)
    if m["n"] < 3:
        return Verdict(NOT_REPRODUCED, f"{m['n']} seed(s) with a crossing (need 3); {per_seed}")
    low, high = m["interval"]
    text = (f"median {symbol}* bracket ({m['below']:.3f}, {m['crossing']:.3f}] over {m['n']} seeds (95 % interval"
            f" of the median crossing {low:.3f}–{high:.3f}); paper {paper:g}; {per_seed}")
    distance = max(0.0, m["below"] - paper, paper - m["crossing"])
    return Verdict(REPRODUCED if distance <= THRESHOLD_CLOSE else PARTLY if distance <= THRESHOLD_NEAR
                   else NOT_REPRODUCED, text)


def c8_threshold(crossings: list[SeedCrossing]) -> Verdict:
    return threshold_verdict(crossings, paper_numbers.F_THRESHOLD.value, "f")


def c9_threshold_before_2026_12_02(crossings: list[SeedCrossing]) -> Verdict:
    """C9's earlier rule (C8's median bracket; RULE_CHANGES["C9"]), kept to print its verdict beside the new one."""
    return threshold_verdict(crossings, paper_numbers.R_THRESHOLD.value, "r")


def censored_median(crossings: list[SeedCrossing], grid_top: float) -> dict:
    """The median over every seed of the crossings, a seed without one counted as censored above `grid_top` (the
    largest value it was run at): {"n", "censored", "crossing" (None: the median is above the grid), "text"}."""
    values = np.sort([np.inf if c.value is None else c.value for c in crossings])
    censored = int(np.isinf(values).sum())
    if not len(values):
        return {"n": 0, "censored": 0, "crossing": None, "text": "no seeds"}
    middle = values[(len(values) - 1) // 2: len(values) // 2 + 1]
    crossing = None if np.isinf(middle).any() else float(middle.mean())
    where = f"{crossing:.3f}" if crossing is not None else f"above the grid (> {grid_top:.3f})"
    return {"n": len(values), "censored": censored, "crossing": crossing,
            "text": f"median crossing over {len(values)} seeds {where} ({censored} censored above the grid)"}


def c9_threshold(fit: Mapping, crossings: list[SeedCrossing], grid_top: float, runs_finished: int | None = None,
                 runs_planned: int | None = None, devices: Mapping[str, list[int]] | None = None) -> Verdict:
    """C9 (RULES["C9"]): `fit` is `analysis.thresholds.logistic_threshold` of the composed runs (its "threshold",
    95 % "interval" over resampled seeds, and "seeds"); the censored per-seed median is reported beside it. Since
    2026-12-04 the fit reads every seed at the r grid's first values, the added seeds' sweep with the r sweep's:
    while fewer than `runs_planned` runs have finished it is not yet run; `devices` ({device: seeds}) is said."""
    paper = width = paper_numbers.R_THRESHOLD.value  # the widest interval read: the paper's value itself
    if runs_planned is not None and (runs_finished or 0) < runs_planned:
        return Verdict(NOT_YET_RUN, f"{runs_finished or 0} of {runs_planned} runs finished (the rule reads them all)")
    median = censored_median(crossings, grid_top)
    if devices and len(devices) > 1:
        where = "; the runs' devices differ: " + "; ".join(f"{device} for seeds {_seed_span(seeds)}"
                                                           for device, seeds in devices.items())
    else:  # one device: said, not called a difference
        where = "".join(f"; every run on {device} (seeds {_seed_span(seeds)})" for device, seeds in (devices or {}).items())
    if fit.get("seeds", 0) < 3 or fit.get("threshold") is None or fit.get("interval") is None:
        return Verdict(INCONCLUSIVE, f"the logistic fit has {fit.get('seeds', 0)} seeds with composed runs or no"
                                     f" rise of success with r; {median['text']}{where}")
    low, high = fit["interval"]
    text = (f"logistic fit: r* = {fit['threshold']:.3f} (success 50 %), 95 % interval {low:.3f}–{high:.3f} over"
            f" {fit['seeds']} seeds resampled (width {high - low:.3f}, inconclusive above {width:g});"
            f" paper {paper:g}; {median['text']}{where}")
    if high - low > width:
        return Verdict(INCONCLUSIVE, text)
    distance = max(0.0, low - paper, paper - high)
    return Verdict(REPRODUCED if distance == 0 else PARTLY if distance <= THRESHOLD_CLOSE else NOT_REPRODUCED, text)


def _seed_span(seeds) -> str:
    """'42-46' for consecutive seeds, '42, 44, 49' otherwise."""
    seeds = sorted(int(s) for s in seeds)
    if seeds and seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))


# ---------------------------------------------------------------------------- theory chapter
def c10_gradient(window_checkpoints: Mapping[str, int], contrast_ci: tuple[float, float] | None,
                 control_ci: tuple[float, float] | None = None) -> Verdict:
    """`window_checkpoints`: per composed seed, its checkpoints in the premise window; `contrast_ci`: 95 %
    bootstrap interval over composed seeds of their mean whitened gradient contrast while layer 1 copies;
    `control_ci`: the same over the seeds that never compose (the control)."""
    with_window = [name for name, n in window_checkpoints.items() if n >= C10_MIN_WINDOW]
    text = (f"premise window (≥ {C10_MIN_WINDOW} checkpoints) in {len(with_window)} of {len(window_checkpoints)}"
            f" composed seeds (" + ", ".join(f"{name}: {n}" for name, n in window_checkpoints.items()) + ")")
    if contrast_ci is None:
        return Verdict(NOT_REPRODUCED, text + "; no gradient contrast measured")
    text += f"; whitened gradient contrast, 95 % interval over seeds [{contrast_ci[0]:+.3f}, {contrast_ci[1]:+.3f}]"
    if control_ci is not None:
        text += f"; seeds that never compose [{control_ci[0]:+.3f}, {control_ci[1]:+.3f}]"
    if contrast_ci[0] <= 0:
        return Verdict(NOT_REPRODUCED, text)
    return Verdict(REPRODUCED if len(with_window) >= C10_MIN_SEEDS else PARTLY, text)


def c10_causal(remove: list[Mapping], add: list[Mapping]) -> Verdict:
    """C10 as an experiment (`RULES["C10"]`). `remove`: per composing seed, `twin_at` and `removed_at`, the first
    eval step at which 1-var train ≥ LEARNED_LEVEL in its twin and in its run with the identity component
    removed (None: never within the run; the key absent while that run has not run); `add`: per stuck seed,
    whether its twin, steered run and sham composed and held (`twin`, `steered`, `sham`: bool, None while not run)."""
    if not any("removed_at" in r for r in remove) and not any(r.get("steered") is not None for r in add):
        return Verdict(NOT_YET_RUN, "the steered runs have not run yet")
    readable = [r for r in remove if r["twin_at"] is not None and r["twin_at"] <= C10_REMOVE_TO and "removed_at" in r]
    blocked = [r for r in readable if r["removed_at"] is None or r["removed_at"] > C10_REMOVE_TO]
    stuck = [r for r in add if r.get("twin") is False and r.get("steered") is not None and r.get("sham") is not None]
    steered, shams = sum(bool(r["steered"]) for r in stuck), sum(bool(r["sham"]) for r in stuck)

    def at(step):
        return "never composed" if step is None else f"composed at {step:,}"
    text = (f"removing the identity component blocked composition up to step {C10_REMOVE_TO:,} in {len(blocked)} of"
            f" {len(readable)} seeds whose twin composed by then ("
            + "; ".join(f"seed {r['seed']}: twin {at(r['twin_at'])}, removed {at(r['removed_at'])}"
                        for r in readable)
            + f"); steering it made {steered} of {len(stuck)} stuck seeds compose, the sham {shams} of {len(stuck)}")
    if len(readable) < C10_MIN_ARM or len(stuck) < C10_MIN_ARM:
        return Verdict(INCONCLUSIVE, text + f" (an arm with fewer than {C10_MIN_ARM} seeds to read)")
    necessary = len(blocked) == len(readable)
    sufficient = steered == len(stuck) and shams < steered
    verdict = REPRODUCED if necessary and sufficient else PARTLY if necessary or sufficient else NOT_REPRODUCED
    found = [name for name, holds in (("necessary", necessary), ("sufficient", sufficient)) if holds]
    failed = [name for name, holds in (("necessary", necessary), ("sufficient", sufficient)) if not holds]
    return Verdict(verdict, text + "; the identity component is " + (" and ".join(found) if found else "neither")
                   + (f", not {' nor '.join(failed)} (the condition that failed)" if failed and found else
                      " necessary nor sufficient (both conditions failed)" if not found else ""))


def _composed_later(a: int | None, b: int | None) -> int:
    """+1 if time to compose `a` is later than `b`, -1 if earlier, 0 if equal (None: never, later than any step)."""
    inf = float("inf")
    a_, b_ = inf if a is None else a, inf if b is None else b
    return (a_ > b_) - (a_ < b_)


def _when(step: int | None) -> str:
    return "never" if step is None else f"{step:,}"


def c10_necessity(cells: list[Mapping], what: str = "holding the identity pattern") -> dict:
    """C10's necessity at copying onset (`RULES["C10"]`) from per-cell readings (`analysis.steering.onset_cells`:
    "twin", "removal", "sham", each with "trigger", "m3_max", "m5_mean", "composed_at"): {"reading": "shown",
    "not shown" or "inconclusive", "text", "cells": those that entered, "read": the cells given, and the sign
    counts and p values the text gives: "against": {"twin"/"sham": (later, earlier, p)}}."""
    entered, failed = [], []
    for c in cells:
        twin, removal, sham = c["twin"], c["removal"], c["sham"]
        triggers = [r["trigger"] for r in (twin, removal, sham)]
        if None in triggers or len(set(triggers)) > 1:
            failed.append(f"{c['cell']} (trigger at {', '.join(_when(t) for t in triggers)}: twin, removal, sham)")
            continue
        gap = abs(removal["m5_mean"] - twin["m5_mean"])
        checks = (("removal measure 3 max", f"{removal['m3_max']:.2f}", f"< {C10_IDENTITY_LOW}",
                   removal["m3_max"] < C10_IDENTITY_LOW),
                  ("removal measure 5 mean off the twin's by", f"{gap:.3f}", f"≤ {C10_COPY_MARGIN}",
                   gap <= C10_COPY_MARGIN),
                  ("sham measure 3 max", f"{sham['m3_max']:.2f}", f"≥ {C10_IDENTITY_LOW}", sham["m3_max"] >= C10_IDENTITY_LOW))
        if all(ok for *_, ok in checks):
            entered.append(c)
        else:
            failed.append(f"{c['cell']} ({_fails(*checks)[len('; fails: '):]})")
    twin_sign = [_composed_later(c["removal"]["composed_at"], c["twin"]["composed_at"]) for c in entered]
    sham_sign = [_composed_later(c["removal"]["composed_at"], c["sham"]["composed_at"]) for c in entered]
    p_twin = sign_test_greater(twin_sign.count(1), twin_sign.count(-1))
    p_sham = sign_test_greater(sham_sign.count(1), sham_sign.count(-1))
    counts = {"read": len(cells), "against": {"twin": (twin_sign.count(1), twin_sign.count(-1), p_twin),
                                              "sham": (sham_sign.count(1), sham_sign.count(-1), p_sham)}}
    text = (f"{len(entered)} of {len(cells)} cells pass their checks"
            + (f" (not: {'; '.join(failed)})" if failed else "")
            + (f"; composed at (twin, removal, sham): " + "; ".join(
                f"{c['cell']} {_when(c['twin']['composed_at'])}, {_when(c['removal']['composed_at'])},"
                f" {_when(c['sham']['composed_at'])}" for c in entered) if entered else ""))
    if len(entered) < C10_MIN_CELLS:
        return {"reading": INCONCLUSIVE, "cells": entered, **counts,
                "text": text + f"; necessity inconclusive (fewer than {C10_MIN_CELLS} cells pass their checks)"}
    text += (f"; the removal composed later than the twin in {twin_sign.count(1)}, earlier in {twin_sign.count(-1)}"
             f" (exact sign test p = {p_twin:.3g}), later than the sham in {sham_sign.count(1)}, earlier in"
             f" {sham_sign.count(-1)} (p = {p_sham:.3g})")
    shown = p_twin < C10_ONSET_P and p_sham < C10_ONSET_P
    block = _during_hold(entered)
    return {"reading": "shown" if shown else "not shown", "cells": entered, **counts, "block": block,
            "delays": {arm: _delays(entered, arm) for arm in ("twin", "sham")},
            "text": text + f"; {_necessity_words(shown, block, entered, what)}"}


def _window_end(reading: Mapping) -> int:
    return int(reading["trigger"]) + c10_design().C10_WINDOW


def _during(reading: Mapping) -> bool:
    """Whether a run composed before its window's end (inside the hold, for a held run)."""
    return reading["composed_at"] is not None and reading["composed_at"] <= _window_end(reading)


def _delays(cells: list[Mapping], arm: str) -> list[int | None]:
    """Per cell, how many steps later the removal composed than `arm` (None where either never did)."""
    return [None if c["removal"]["composed_at"] is None or c[arm]["composed_at"] is None else
            int(c["removal"]["composed_at"]) - int(c[arm]["composed_at"]) for c in cells]


def _during_hold(cells: list[Mapping]) -> dict:
    """Does the hold prevent composition while it lasts (since 2026-12-06)? Per cell, whether the removal and the
    twin composed inside the window; "shown" if the twin composed there and the removal did not in more cells than
    the reverse (exact one-sided sign test, p < C10_ONSET_P)."""
    held, twins = [_during(c["removal"]) for c in cells], [_during(c["twin"]) for c in cells]
    only_twin = sum(t and not h for h, t in zip(held, twins))
    only_held = sum(h and not t for h, t in zip(held, twins))
    p = sign_test_greater(only_twin, only_held)
    return {"reading": "shown" if cells and p < C10_ONSET_P else "not shown", "held_during": sum(held),
            "twins_during": sum(twins), "cells": len(cells), "p": p}


def _necessity_words(delay: bool, block: Mapping, cells: list[Mapping], what: str) -> str:
    """C10's necessity in words that name its effect and its limit: a delay, and whether the hold prevented
    composition while it lasted."""
    delays = [d for d in _delays(cells, "twin") if d is not None]
    size = f"median {median(delays):,.0f} steps later than the twin" if delays else "later than the twin"
    n, held, twins = block["cells"], block["held_during"], block["twins_during"]
    during = (f"{held} of {n} held runs composed during the hold, their twins {twins} of {n}; a block during the"
              f" hold: {block['reading']} (exact sign test p = {block['p']:.3g})")
    if not delay:
        return f"a delay is not shown; {during}"
    if block["reading"] == "shown":
        return f"{what} delays composition ({size}) and prevents it during the hold ({during})"
    limit = f"did not prevent it in {held} of {n} cells" if held else "is not shown to prevent it"
    return f"{what} delays composition ({size}) but {limit} ({during})"


def c10_sufficiency(cells: list[Mapping]) -> dict:
    """C10's sufficiency at copying onset (`RULES["C10"]`) from per-cell readings ("twin"; "push" and "sham":
    {share: reading}, each with "trigger", "m3_max", "held"): {"reading": "shown", "not shown" or "untested",
    "text", "share": the strength read (None: none passed its check), "passing": {share tried: cells whose push
    passed its check}, "read": the cells given}."""
    shares = sorted({float(s) for c in cells for s in c["push"]})
    tried, chosen, passing = [], None, []

    def passes(c, share) -> bool:  # the push formed the identity pattern and left layer 1's copying as the twin's
        push, twin = c["push"].get(share), c["twin"]
        return bool(push is not None and twin is not None and push["trigger"] is not None
                    and push["m3_max"] >= C10_IDENTITY_LOW
                    and abs(push["m5_mean"] - twin["m5_mean"]) <= C10_COPY_MARGIN)
    passed = {}
    for share in shares:
        passing = [c for c in cells if passes(c, share)]
        passed[share] = len(passing)
        tried.append(f"the push at {share:g} passes its check (measure 3 ≥ {C10_IDENTITY_LOW} in the window, mean"
                     f" measure 5 within {C10_COPY_MARGIN} of the twin's) in {len(passing)} of {len(cells)} cells")
        if len(passing) >= C10_MIN_PUSH_CELLS:
            chosen = share
            break
    text = "; ".join(tried) if tried else "no push"
    if chosen is None:
        return {"reading": "untested", "share": None, "passing": passed, "read": len(cells),
                "text": text + f"; sufficiency untested (no push passes its check in {C10_MIN_PUSH_CELLS} cells)"}

    def held(reading) -> bool:
        return bool(reading is not None and reading["held"])
    pushed = [held(c["push"][chosen]) for c in passing]
    twins, shams = [held(c["twin"]) for c in passing], [held(c["sham"].get(chosen)) for c in passing]
    up_t, down_t = sum(p and not t for p, t in zip(pushed, twins)), sum(t and not p for p, t in zip(pushed, twins))
    up_s, down_s = sum(p and not s for p, s in zip(pushed, shams)), sum(s and not p for p, s in zip(pushed, shams))
    p_twin, p_sham = sign_test_greater(up_t, down_t), sign_test_greater(up_s, down_s)
    shown = p_twin < C10_ONSET_P and p_sham < C10_ONSET_P
    text += (f"; at {chosen:g}, composed and held after the window: pushed {sum(pushed)}, twins {sum(twins)}, shams"
             f" {sum(shams)} of {len(passing)} (pushed and not the twin {up_t}, the reverse {down_t}: p = {p_twin:.3g};"
             f" pushed and not the sham {up_s}, the reverse {down_s}: p = {p_sham:.3g}); sufficiency"
             f" {'shown' if shown else 'not shown'}")
    return {"reading": "shown" if shown else "not shown", "share": chosen, "passing": passed, "read": len(cells),
            "text": text}


def c10_clamp(cells: list[Mapping]) -> dict:
    """C10's sufficiency by the clamp (`RULES["C10"]`, since 2026-12-06) from per-cell readings
    (`analysis.steering.clamp_cells`: "twin", "clamp", "sham", each with "trigger", "m3_min", "m5_mean", "held"):
    {"reading": "shown", "not shown" or "untested", "text", "cells": those that entered, "read": the cells given,
    and the counts the text gives}."""
    entered, failed = [], []
    for c in cells:
        twin, clamp, sham = c["twin"], c["clamp"], c["sham"]
        triggers = [r["trigger"] for r in (twin, clamp, sham)]
        if None in triggers or len(set(triggers)) > 1:
            failed.append(f"{c['cell']} (trigger at {', '.join(_when(t) for t in triggers)}: twin, clamp, sham)")
            continue
        checks = (("clamp measure 3 lowest", f"{clamp['m3_min']:.2f}", f"≥ {C10_IDENTITY_LOW}",
                   clamp["m3_min"] >= C10_IDENTITY_LOW),
                  ("clamp measure 5 mean off the twin's by", f"{abs(clamp['m5_mean'] - twin['m5_mean']):.3f}",
                   f"≤ {C10_COPY_MARGIN}", abs(clamp["m5_mean"] - twin["m5_mean"]) <= C10_COPY_MARGIN),
                  ("sham measure 5 mean off the twin's by", f"{abs(sham['m5_mean'] - twin['m5_mean']):.3f}",
                   f"≤ {C10_COPY_MARGIN}", abs(sham["m5_mean"] - twin["m5_mean"]) <= C10_COPY_MARGIN))
        if all(ok for *_, ok in checks):
            entered.append(c)
        else:
            failed.append(f"{c['cell']} ({_fails(*checks)[len('; fails: '):]})")
    text = (f"the clamp passes its checks in {len(entered)} of {len(cells)} cells"
            + (f" (not: {'; '.join(failed)})" if failed else ""))
    if len(entered) < C10_MIN_PUSH_CELLS:
        return {"reading": "untested", "cells": entered, "read": len(cells),
                "text": text + f"; sufficiency untested (fewer than {C10_MIN_PUSH_CELLS} cells pass the checks)"}
    clamped = [bool(c["clamp"]["held"]) for c in entered]
    twins, shams = [bool(c["twin"]["held"]) for c in entered], [bool(c["sham"]["held"]) for c in entered]
    up_t, down_t = sum(p and not t for p, t in zip(clamped, twins)), sum(t and not p for p, t in zip(clamped, twins))
    up_s, down_s = sum(p and not s for p, s in zip(clamped, shams)), sum(s and not p for p, s in zip(clamped, shams))
    p_twin, p_sham = sign_test_greater(up_t, down_t), sign_test_greater(up_s, down_s)
    shown = p_twin < C10_ONSET_P and p_sham < C10_ONSET_P
    return {"reading": "shown" if shown else "not shown", "cells": entered, "read": len(cells),
            "counts": {"clamped": sum(clamped), "twins": sum(twins), "shams": sum(shams)},
            "text": text + f"; composed and held after the window: clamped {sum(clamped)}, twins {sum(twins)},"
                           f" shams {sum(shams)} of {len(entered)} (clamped and not the twin {up_t}, the reverse"
                           f" {down_t}: p = {p_twin:.3g}; clamped and not the sham {up_s}, the reverse {down_s}:"
                           f" p = {p_sham:.3g}); sufficiency {'shown' if shown else 'not shown'}"}


def c10_onset(necessity: list[Mapping], sufficiency: list[Mapping], clamp: list[Mapping] | None = None) -> Verdict:
    """C10 at copying onset (`RULES["C10"]`): `necessity`, `sufficiency` (the pushes) and `clamp` are the per-cell
    readings of their sweeps (`analysis.steering.hold_cells`, `onset_cells`, `clamp_cells`; an arm not finished yet
    is None). Since 2026-12-06 sufficiency is the clamp's (the pushes, which never passed their check, are read
    beside it) and the necessity's words say whether the hold delays composition and whether it prevents it."""
    clamp = clamp or []
    runs = [c[arm] for c in necessity for arm in ("twin", "removal", "sham")]
    runs += [r for c in sufficiency for r in (c["twin"], *c["push"].values(), *c["sham"].values())]
    runs += [c[arm] for c in clamp for arm in ("twin", "clamp", "sham")]
    done = sum(r is not None for r in runs)
    if done == 0:
        return Verdict(NOT_YET_RUN, "the onset runs have not run yet")
    if done < len(runs) or not clamp:
        return Verdict(NOT_YET_RUN, f"{done} of {len(runs)} onset runs have finished"
                       + ("" if clamp else "; the clamp's runs are stated, not run yet"))
    need, pushes, enough = c10_necessity(necessity), c10_sufficiency(sufficiency), c10_clamp(clamp)
    text = (f"necessity: {need['text']}; sufficiency (the clamp): {enough['text']}; beside it, the pushes (an arm"
            f" that failed its check): {pushes['text']}")
    if need["reading"] == INCONCLUSIVE:
        return Verdict(INCONCLUSIVE, text)
    block = need["block"]["reading"] == "shown"
    shown = [name for name, holds in (("a delay", need["reading"] == "shown"), ("a block during the hold", block),
                                      ("sufficiency", enough["reading"] == "shown")) if holds]
    verdict = REPRODUCED if block and enough["reading"] == "shown" else PARTLY if shown else NOT_REPRODUCED
    return Verdict(verdict, text + "; shown: " + (", ".join(shown) if shown else "none"))


def r1_rate(all_three: int, seeds: int) -> Verdict:
    """R1, a finding: the share of seeds that show all three phases."""
    return Verdict(FINDING, f"{rate_text(all_three, seeds)} seeds show all three phases")


def route_term(query: str, key: str) -> str:
    """The name of one term of the lookup's margin (`analysis.route`): query-side part, key-side part."""
    return f"q_{query}__k_{key}"


def r3_route(held: list[Mapping], double: list[Mapping] | None = None) -> Verdict:
    """R3, a finding (`RULES["R3"]`): `held` has one reading per held run at its composition step: {"run", "terms":
    {route_term(q, k): value}, "totals": {key part: its whole share of the margin}, "drops": {key part: how much
    ablating it lowers the in-context lookup}}. `double`: the double hold's cells in `c10_necessity`'s form (the
    double-held run as "removal"; an arm not finished is None), read where the first part finds a second route."""
    first = _route_part(held)
    if first.verdict != FINDING or "a second route" not in first.text:
        return first
    arms = [c[arm] for c in (double or []) for arm in ("removal", "sham")]  # its own runs (the twins are C10's)
    if not arms or None in arms or any(c["twin"] is None for c in double):
        return Verdict(FINDING, first.text + f"; the double hold: not yet run ({sum(a is not None for a in arms)} of"
                                             f" {len(arms)} runs finished)")
    need = c10_necessity(double, what="holding every route from the query to the values' variable copies")
    return Verdict(FINDING, first.text + f"; the double hold: {need['text']}")


def route_candidate(held: list[Mapping]) -> tuple[str, str]:
    """R3's candidate route: the term with the largest median over the held runs, as (query part, key part)."""
    names = list(held[0]["terms"])
    best = max(names, key=lambda name: float(median([h["terms"][name] for h in held])))
    query, key = best[2:].split("__k_")
    return query, key


def _route_part(held: list[Mapping]) -> Verdict:
    """R3's first part: the candidate term, its causal test and whether it is a second route."""
    if len(held) < ROUTE_MIN_RUNS:
        return Verdict(NOT_YET_RUN, f"{len(held)} held runs read at their composition step (needs {ROUTE_MIN_RUNS})")
    query, key = route_candidate(held)
    best = route_term(query, key)
    medians = {best: float(median([h["terms"][best] for h in held]))}
    others = [part for part in held[0]["totals"] if part != key]
    control = min(others, key=lambda part: float(median([abs(h["totals"][part]) for h in held])))
    gaps = [h["drops"][key] - h["drops"][control] for h in held]
    above, below = sum(g > 0 for g in gaps), sum(g < 0 for g in gaps)
    p = sign_test_greater(above, below)
    median_gap = float(median(gaps))
    carries = p < ROUTE_P and median_gap >= ROUTE_DROP
    second = carries and (query, key) != ROUTE_IDENTITY
    text = (f"in {len(held)} held runs at their composition step, the largest term of the lookup's margin is the"
            f" {query.replace('_', ' ')} part at `=` with the {key.replace('_', ' ')} part at the values (median"
            f" {medians[best]:.2f}); ablating that key part lowers the in-context lookup more than ablating the"
            f" {control.replace('_', ' ')} part in {above} runs, less in {below} (exact sign test p = {p:.3g}),"
            f" by a median of {median_gap:.2f}: it "
            + ("carries the lookup" if carries else f"is not shown to carry it (needs p < {ROUTE_P} and a median of"
                                                    f" at least {ROUTE_DROP})")
            + ("; a second route: not the identity pattern's term" if second else
               "; the identity pattern's own term" if carries else ""))
    return Verdict(FINDING, text)


# ---------------------------------------------------------------------------- the mechanism on other tasks (G1-G5)
def g1_phases(phases_by_seed: Mapping[str, Mapping]) -> Verdict:
    """G1 for one shape: C1's rule on each composed seed's detected phases (`analysis.phases.detect_phases`)."""
    return over_seeds({seed: c1_seed(p) for seed, p in phases_by_seed.items()})


def g2_seed(m2: float, m3: float, m6: float) -> Verdict:
    """G2 for one composed seed: measures 2, 3 and 6 at the end of training (read at its found roles)."""
    checks = (("measure 2", f"{m2:.2f}", f"≥ {PREV_TOKEN_LEVEL}", m2 >= PREV_TOKEN_LEVEL),
              ("measure 3", f"{m3:.2f}", f"≥ {IDENTITY_LEVEL}", m3 >= IDENTITY_LEVEL),
              ("measure 6", f"{m6:.2f}", f"≥ {READ_LEVEL}", m6 >= READ_LEVEL))
    held = sum(ok for *_, ok in checks)
    text = f"measure 2 = {m2:.2f}, measure 3 = {m3:.2f}, measure 6 = {m6:.2f}" + _fails(*checks)
    return Verdict(REPRODUCED if held == 3 else PARTLY if held else NOT_REPRODUCED, text)


def shown_words(rejected: bool, what: str) -> str:
    """The words a test allows: "<what>: shown" when it rejects its null, "<what>: not shown" otherwise. A test that
    does not reject shows nothing either way, so its words never say the effect is absent."""
    return f"{what}: {'shown' if rejected else 'not shown'}"


def g4_rate(composed_seeds: int, seeds: int, paper_composed: int, paper_seeds: int) -> Verdict:
    """G4 for one shape, descriptive: its composition rate against the paper shape's (Fisher's exact test; with 3
    seeds it cannot reject, its smallest p is 0.056 against 21 of 32)."""
    p = fisher(Rate(composed_seeds, seeds), Rate(paper_composed, paper_seeds)) if seeds else float("nan")
    return Verdict(FINDING, f"{rate_text(composed_seeds, seeds)} composed; the paper shape"
                            f" {rate_text(paper_composed, paper_seeds)}; Fisher p = {p:.2f}; "
                            + shown_words(p < GENERAL_RATE_P, "a different rate from the paper shape's"))


def g4_pooled(counts: Mapping[str, tuple[int, int]], paper_composed: int, paper_seeds: int) -> Verdict:
    """G4 (since 2026-12-04), a finding with a test that can reject: `counts` is {shape: (seeds that composed, seeds
    read)} of every departure; their seeds pooled against the paper shape's (the seed is the unit: one run each),
    Fisher's exact two-sided test at GENERAL_RATE_P; each shape's own count and p beside it, descriptive."""
    k, n = sum(c for c, _ in counts.values()), sum(s for _, s in counts.values())
    if not n:
        return Verdict(NOT_YET_RUN, "no departure's seeds have been read")
    p = fisher(Rate(k, n), Rate(paper_composed, paper_seeds))
    def alone(c, s):  # one shape's count and its own test, descriptive
        p_shape = fisher(Rate(c, s), Rate(paper_composed, paper_seeds))
        return f"{rate_text(c, s)}, p = {p_shape:.2f}, " + shown_words(p_shape < GENERAL_RATE_P, "a difference")
    return Verdict(FINDING, f"the departures pooled: {rate_text(k, n)} seeds composed; the paper shape"
                            f" {rate_text(paper_composed, paper_seeds)}; Fisher p = {p:.3f}; "
                            + shown_words(p < GENERAL_RATE_P, "a different rate from the paper shape's")
                            + "; per shape: " + "; ".join(f"{shape} {alone(c, s)}" for shape, (c, s) in counts.items()))


def g4_paired(outcomes: Mapping[int, Mapping[str, bool]], paper: str = "paper") -> Verdict:
    """G4 since 2026-12-06 (`RULES["G4"]`), a finding: `outcomes` is {fresh seed: {shape: composed}} with the paper
    shape under `paper`; only seeds with every shape finished are read. Per seed, the departures' share that composed
    minus the paper shape's outcome; an exact two-sided sign-flip test of their mean over the seeds."""
    shapes = sorted({shape for o in outcomes.values() for shape in o} - {paper})
    seeds = [seed for seed, o in sorted(outcomes.items()) if paper in o and all(shape in o for shape in shapes)]
    if len(seeds) < G4_FRESH_SEEDS or not shapes:
        return Verdict(NOT_YET_RUN, f"{len(seeds)} of {G4_FRESH_SEEDS} fresh seeds have every shape finished")
    differences = [sum(outcomes[s][shape] for shape in shapes) / len(shapes) - outcomes[s][paper] for s in seeds]
    p = sign_flip_exact(differences, unit=1 / len(shapes))
    mean = sum(differences) / len(differences)

    def paired(shape):  # one shape against the paper shape on the same seeds, descriptive
        up = sum(outcomes[s][shape] and not outcomes[s][paper] for s in seeds)
        down = sum(outcomes[s][paper] and not outcomes[s][shape] for s in seeds)
        return (f"{shape} {rate_text(sum(outcomes[s][shape] for s in seeds), len(seeds))} (McNemar p ="
                f" {mcnemar_exact(up, down):.2g})")
    return Verdict(FINDING, f"on {len(seeds)} fresh seeds the paper shape composed in"
                            f" {rate_text(sum(outcomes[s][paper] for s in seeds), len(seeds))}; the departures' share"
                            f" minus the paper shape's, per seed, has mean {mean:+.2f} (exact sign-flip p = {p:.3g}); "
                            + shown_words(p < GENERAL_RATE_P, "a different rate from the paper shape's")
                            + "; per shape: " + "; ".join(paired(shape) for shape in shapes))


def g5_coverage(differences) -> Verdict:
    """G5 from the paired differences (24 minus 12 variables, same seed and r) of the 2-var union exact accuracy."""
    d = [float(x) for x in differences]
    if len(d) < 3:
        return Verdict(INCONCLUSIVE, f"{len(d)} pairs (needs at least 3)")
    mean, low, high = t_interval(d)
    text = (f"mean paired difference {mean:+.3f} (95 % t-interval {low:+.3f} to {high:+.3f}) over {len(d)} pairs;"
            f" coverage predicts about +{COVERAGE_PREDICTED_GAIN:.2f}")
    if low > 0:
        return Verdict(REPRODUCED, text + ": the threshold follows pair coverage")
    if high < COVERAGE_NO_GAIN:
        return Verdict(NOT_REPRODUCED, text + ": it does not follow pair coverage")
    return Verdict(INCONCLUSIVE, text + ": the pairs cannot tell")
