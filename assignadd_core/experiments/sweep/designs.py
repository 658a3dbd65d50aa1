"""The study's sweeps (`SWEEPS`): each design's grid, seeds, base and run order, with the values it is built from,
read from the study profile (`studies/paper.yaml` unless ASSIGNADD_STUDY names another) when this module is imported,
i.e. when a sweep is first used (`named.get_sweep`, `sweep.SWEEPS`, `grid`): the sweep machinery reads none."""
from __future__ import annotations

from dataclasses import replace
from functools import partial

import numpy as np

from ...rules import paper
from ...rules.verdicts import G4_FRESH_FIRST, G4_FRESH_SEEDS
from ...rules.study import current, profile, seed_range, study_overrides
from .definition import Point, Sweep, evenly_spaced

STUDY = current()
PAPER_SWEEP_STEPS = paper.SWEEP_STEPS.value  # the paper's sweep runs (book/protocol.md, "Training")
# Long enough to decide whether a run of the paper's configuration composes (studies/paper.yaml, "composition").
DECIDE_STEPS = STUDY["composition"]["decide_steps"]
COMPOSITION_BASE = {"train.steps": DECIDE_STEPS}  # eval every 100 steps, as the main runs: the jump's step
NEAR_PAPER_SEEDS = seed_range(STUDY["composition"]["near_paper_seeds"])
NEAR_PAPER_STEPS = STUDY["composition"]["near_paper_steps"]
FACTORIAL_SEEDS = tuple(STUDY["composition"]["factorial_seeds"])  # four that composed at 40,000 steps, four did not


def balanced_half(point: "Point") -> bool:
    """Half of the 8 x 8 cells, 8 in each 4 x 4 block (composer or failer initialization x composer or failer
    data): the cells whose initialization and data positions in FACTORIAL_SEEDS sum to an even number. Every
    initialization meets four data orders and every data order four initializations; the diagonal (a seed's own
    run) is in."""
    return (FACTORIAL_SEEDS.index(point.params["train.init_seed"]) + FACTORIAL_SEEDS.index(point.seed)) % 2 == 0


# The fresh crossed design (chapter 4, "Composition as odds"), drawn on 2026-12-02 before any of its runs: 16
# distinct seeds from 1,000-9,999 by numpy's default_rng(ODDS_DRAW).choice (none used by an earlier run: those are
# 42-73); the first 8 seed the initial weights, the last 8 the data orders. Every cell is trained eager and compiled
# (fp32), each run stops once 1-var train >= 0.9 has held for ODDS_HOLD evaluations, within DECIDE_STEPS.
ODDS_DRAW = STUDY["composition"]["odds_draw"]
ODDS_HOLD = STUDY["composition"]["odds_hold"]  # as the phase detector's sustained crossing (5 eval rows)


def fresh_seeds(draw: int = ODDS_DRAW, n: int = 16) -> tuple[int, ...]:
    return tuple(int(s) for s in np.random.default_rng(draw).choice(np.arange(1000, 10000), n, replace=False))


ODDS_INITS, ODDS_DATA = fresh_seeds()[:8], fresh_seeds()[8:]
ODDS_BASE = {"train.steps": DECIDE_STEPS, "train.stop_when_composed": ODDS_HOLD}


def odds_diagonal(point: "Point") -> bool:
    """The 8 cells of the perturbation studies, chosen by rule before any result: the i-th initialization with the
    i-th data order (each initialization and each data order once)."""
    return ODDS_INITS.index(point.params["train.init_seed"]) == ODDS_DATA.index(point.seed)


def odds_wrapped_diagonal(point: "Point") -> int:
    """Run order of the design: wrapped diagonals (init i with data i + d, mod 8) one after the other, each holding
    every initialization and every data order once, so a design stopped early is still balanced."""
    if point.seed not in ODDS_DATA:  # a seed chosen with --seeds outside the design: after the design's points
        return len(ODDS_DATA)
    return (ODDS_DATA.index(point.seed) - ODDS_INITS.index(point.params["train.init_seed"])) % len(ODDS_DATA)


def flips_by_replicate(point: "Point") -> int:
    """Run order of the perturbation study: every setting's first replicate on all cells, then the second, ..."""
    return point.perturbation.get("train.perturb_seed", 0)


def replicates(seeds, **perturbation) -> tuple[dict, ...]:
    """One perturbation at each of `seeds` (perturb_seed), e.g. replicates((1, 2, 3), jitter=1e-4)."""
    return tuple({**{f"train.{k}": v for k, v in perturbation.items()}, "train.perturb_seed": s} for s in seeds)


# On the diagonal cells, against each cell's own eager run: a one-time nudge at step 0 of three sizes (basin or
# chaos), the nudge of 1e-4 later in training (steps 1,000 and 3,000), and a noise added to every step's gradient.
FLIP_PERTURBATIONS = (*replicates((1, 2, 3), jitter=1e-7), *replicates((1, 2, 3), jitter=1e-4),
                      *replicates((1, 2, 3), jitter=1e-2),
                      *replicates((1, 2), jitter=1e-4, jitter_step=1000), *replicates((1, 2), jitter=1e-4, jitter_step=3000),
                      *replicates((1, 2), grad_noise=1e-7), *replicates((1, 2), grad_noise=1e-5))

# R2's replicates (stated 2026-12-04, before their runs): every cell of the crossed design with a one-time nudge at
# step 0 (jitter 1e-4, the flips study's middle size) at perturb seeds 1 and 2; with the cell's eager and compiled
# runs, 4 replicates per cell, so the pair and a run's own chance can be told apart. The diagonal cells' nudged runs
# have the configs of composition_flips' jitter-1e-4 replicates 1 and 2 (trained eager on CPU there): the same runs
# on another machine.
ODDS_NUDGE = STUDY["composition"]["odds_nudge"]
ODDS_NUDGED = replicates(ODDS_NUDGE["perturb_seeds"], jitter=float(ODDS_NUDGE["jitter"]))  # at step 0


def nudged_by_replicate(point: "Point") -> tuple[int, int]:
    """Run order of the nudged design: the first replicate on every cell (wrapped diagonals, so a design stopped early
    is balanced), then the second."""
    return point.perturbation.get("train.perturb_seed", 0), odds_wrapped_diagonal(point)


# C10's causal test (`steer`, `verdicts.c10_causal`), fixed before its runs: the first three seeds of
# composition_seeds that composed (42, 44, 49: at steps 2,501-5,501) have the identity component of every layer-2
# QK update removed over steps 1-6,000; the first three that stayed stuck (43, 45, 46: layer 1 copies from
# steps 3,601-4,201) have it set to half of each update over steps 4,001-8,000, then released, beside a sham that
# pushes a random direction orthogonal to it as hard. Each seed's twin is its unsteered run on the same machine.
C10_REMOVE_SEEDS, C10_ADD_SEEDS = tuple(STUDY["c10"]["remove_seeds"]), tuple(STUDY["c10"]["add_seeds"])
C10_REMOVE = {f"train.{k}": v for k, v in STUDY["c10"]["remove"].items()}
C10_ADD = {f"train.{k}": v for k, v in STUDY["c10"]["add"].items()}
C10_SHAM = {**C10_ADD, "train.steer_sham": True, "train.perturb_seed": 1}

# C10 at copying onset (`steer`, `verdicts.c10_onset`; studies/paper.yaml, c10.onset), stated 2026-12-04 before its
# runs: each arm starts after the first eval at which measure 5 reaches the trigger and steers (the twin: waits) for
# the window's steps; the design's budget and early stop, eager.
ONSET = STUDY["c10"]["onset"]
C10_NECESSITY_INITS = tuple(ONSET["necessity_inits"])
C10_PUSH_CELLS = tuple((int(i), int(d)) for i, d in ONSET["push_cells"])
C10_PUSH_SHARES = tuple(float(s) for s in ONSET["push_shares"])


def onset_arm(direction: str, share: float = 0.0, write: str | None = None) -> dict:
    """One arm at copying onset: what is steered (`config.STEER_DIRECTIONS`), its share and how it is written."""
    return {"train.steer_trigger": float(ONSET["trigger"]), "train.steer_window": int(ONSET["window"]),
            "train.steer_direction": direction, "train.steer_share": float(share),
            "train.steer_write": write or ONSET["write"]}


C10_ONSET_ARMS = (onset_arm("none"), onset_arm("identity"), onset_arm("wrong_pairs"))  # twin, removal, sham
# the hold arms (removal and sham of the map's row contrasts); their twin is c10_onset's
C10_HOLD_ARMS = (onset_arm("identity", write=ONSET["hold_write"]), onset_arm("wrong_pairs", write=ONSET["hold_write"]))
C10_PUSH_ARMS = (onset_arm("none"), *(onset_arm(direction, share) for share in C10_PUSH_SHARES
                                      for direction in ("identity", "wrong_pairs")))  # twin, then push and sham
# R3's double hold (stated 2026-12-06, before its runs): in the cells that passed C10's necessity checks, the hold of
# both maps and its sham; their twin is c10_onset's
C10_ROUTE_CELLS = tuple((int(i), int(d)) for i, d in ONSET["route_cells"])
C10_DOUBLE_HOLD_ARMS = tuple(onset_arm(direction, write=ONSET["double_hold_write"])
                             for direction in ("identity", "wrong_pairs"))


def route_cell(point: "Point") -> bool:
    return (point.params["train.init_seed"], point.seed) in C10_ROUTE_CELLS


# the clamp (stated 2026-12-06, before its runs): the identity pattern held on in the push cells, and its sham; their
# twin is c10_onset_push's
C10_CLAMP_MARGIN = float(ONSET["clamp_margin"])
C10_CLAMP_ARMS = tuple(onset_arm(direction, C10_CLAMP_MARGIN, write="clamp") for direction in ("identity", "wrong_pairs"))


def necessity_cell(point: "Point") -> bool:
    """The necessity cells: an always-composing initialization (C10_NECESSITY_INITS) in the design's balanced half
    (its position and the data order's in the design have the same parity): four data orders each, each twice."""
    init = point.params["train.init_seed"]
    return init in C10_NECESSITY_INITS and point.seed in ODDS_DATA and \
        (ODDS_INITS.index(init) + ODDS_DATA.index(point.seed)) % 2 == 0


def push_cell(point: "Point") -> bool:
    return (point.params["train.init_seed"], point.seed) in C10_PUSH_CELLS


def onset_cells(sweep: "Sweep") -> list[tuple[int, int]]:
    """The (initialization, data order) cells of an onset sweep, in run order."""
    return list(dict.fromkeys((p.params["train.init_seed"], p.seed) for p in sweep.run_order()))


# The thresholds' verdicts need at least three seeds: the added seeds run only where the thresholds are decided.
R_ADDED_VALUES = STUDY["sweeps"]["r_added_values"]
ADDED_SEEDS = tuple(STUDY["sweeps"]["added_seeds"])
MAIN_SWEEP_SEEDS = tuple(STUDY["sweeps"]["seeds"])
F_GRID = evenly_spaced(*(STUDY["sweeps"]["f_grid"][k] for k in ("low", "high", "n")))
R_GRID = evenly_spaced(*(STUDY["sweeps"]["r_grid"][k] for k in ("low", "high", "n")))
F_ADDED = slice(*STUDY["sweeps"]["f_added_values"])
# C9's added seeds (stated 2026-12-04 from the power calculation, `analysis.power`): new seeds at the r grid's first
# R_ADDED_VALUES values, the paper's 30,000 steps; with seeds 42-46 they are every seed C9 reads there.
POWER_SEEDS = seed_range(STUDY["sweeps"]["power_seeds"])
POWER_STEPS = STUDY["sweeps"]["power_steps"]


def added_seeds_where_decided(key: str, values: tuple, point: "Point") -> bool:
    """The main seeds (42, 43) at every grid value; the added seeds only at `values` of the field `key`."""
    return point.seed not in ADDED_SEEDS or point.params[key] in values


# Only the final numbers count in a sweep, and evaluating never changes training (the data stream is
# a function of seed and step), so pools and measures are logged every 1,000 steps instead of 100:
# the same results for ~15 % less compute.
SWEEP_EVAL_EVERY = STUDY["sweeps"]["eval_every"]
COVERAGE = profile("generality")["coverage_sweep"]
# G4 replicated (stated 2026-12-06, before its runs): fresh seeds in the paper shape and in every departure of the
# generality study, paired by seed, as the composition study (12,000 steps at most, stopped once composed).
G4_SHAPES = {"paper": {}, **{name: shape["overrides"] for name, shape in profile("generality")["shapes"].items()}}
G4_SEEDS = tuple(range(G4_FRESH_FIRST, G4_FRESH_FIRST + G4_FRESH_SEEDS))


def g4_sweep(shape: str) -> Sweep:
    overrides = {key: tuple(v) if isinstance(v, list) else v for key, v in G4_SHAPES[shape].items()}
    return Sweep(f"g4_{shape}", {}, metric="1var_train", base={**ODDS_BASE, **overrides}, seeds=G4_SEEDS,
                 metric_label="1-var train accuracy",
                 description=f"G4 replicated: fresh seeds {G4_SEEDS[0]}-{G4_SEEDS[-1]} in "
                             + ("the paper's shape" if shape == "paper" else f"the {shape} departure")
                             + f", {DECIDE_STEPS:,} steps at most, stopped once composed (stated 2026-12-06)")
def c10_onset_sweep(name: str, keep, arms, description: str) -> Sweep:
    """One of C10's onset sweeps: the crossed design's cells `keep` chooses, each arm steered from the trigger, eager."""
    return Sweep(name, {"train.init_seed": ODDS_INITS}, metric="1var_train", base=ODDS_BASE, seeds=ODDS_DATA,
                 keep=keep, perturbations=arms, modes=("eager",), run_first=odds_wrapped_diagonal,
                 x_label="initialization seed", metric_label="1-var train accuracy", description=description)


_SWEEPS = {
    "f_sweep": Sweep(
        "f_sweep", {"task.train_fraction": F_GRID}, metric="0var_heldout",
        base={"task.two_var_rate": 1.0, "train.steps": PAPER_SWEEP_STEPS, "train.eval_every": SWEEP_EVAL_EVERY},
        seeds=(*MAIN_SWEEP_SEEDS, *ADDED_SEEDS), keep=partial(added_seeds_where_decided, "task.train_fraction", F_GRID[F_ADDED]),
        description="training fraction f of the addition pairs (C8); metric: 0-var held-out exact",
        paper_value=0.25, x_label="training fraction f", metric_label="0-var held-out exact accuracy"),
    "r_sweep": Sweep(
        "r_sweep", {"task.two_var_rate": R_GRID}, metric="2var_union",
        base={"task.train_fraction": 0.7, "train.steps": PAPER_SWEEP_STEPS, "train.eval_every": SWEEP_EVAL_EVERY},
        seeds=(*MAIN_SWEEP_SEEDS, *ADDED_SEEDS), keep=partial(added_seeds_where_decided, "task.two_var_rate", R_GRID[:R_ADDED_VALUES]),
        description="2-var rate r: 2-var rows kept, as the paper defines it (C9); metric: 2-var union exact",
        paper_value=0.2, x_label="2-var rate r (2-var rows kept)", metric_label="2-var union exact accuracy"),
    # C9's added seeds: their own results file, so r_sweep (complete, 79 runs on CPU) stays as it was; C9 reads both.
    "r_sweep_power": Sweep(
        "r_sweep_power", {"task.two_var_rate": R_GRID[:R_ADDED_VALUES]}, metric="2var_union",
        base={"task.train_fraction": 0.7, "train.steps": POWER_STEPS, "train.eval_every": SWEEP_EVAL_EVERY},
        seeds=POWER_SEEDS, description=f"C9's added seeds {POWER_SEEDS[0]}-{POWER_SEEDS[-1]} at the r grid's first"
                                       f" {R_ADDED_VALUES} values (f = 0.7, {POWER_STEPS:,} steps; chosen by the power"
                                       " calculation, stated 2026-12-04); metric: 2-var union exact",
        paper_value=0.2, x_label="2-var rate r (2-var rows kept)", metric_label="2-var union exact accuracy"),
    "r_sweep_share_only": Sweep(
        "r_sweep_share_only", {"task.two_var_rate": R_GRID}, metric="2var_union",
        base={"task.train_fraction": 0.7, "task.two_var_rule": "ablation_share_only",
              "train.steps": PAPER_SWEEP_STEPS, "train.eval_every": SWEEP_EVAL_EVERY},
        description="ablation, not the paper's: r scales only the 2-var share, every pair stays in 2-var queries;"
                    " metric: 2-var union exact",
        x_label="2-var rate r (share only)", metric_label="2-var union exact accuracy"),
    # The composition study: does a run of the paper's configuration learn variable assignment?
    "composition_seeds": Sweep(
        "composition_seeds", {}, metric="1var_train", base=COMPOSITION_BASE, seeds=seed_range(STUDY["composition"]["seeds"]),
        description="the paper's configuration, 32 seeds, 12,000 steps: the share of runs that compose",
        metric_label="1-var train accuracy"),
    "composition_factorial": Sweep(
        "composition_factorial", {"train.init_seed": FACTORIAL_SEEDS}, metric="1var_train", base=COMPOSITION_BASE,
        seeds=FACTORIAL_SEEDS, x_label="initialization seed", metric_label="1-var train accuracy", keep=balanced_half,
        description="initialization x data order: seeds' initial weights trained on other seeds' streams"
                    " (train.seed sets the data order), a balanced half of the 8 x 8 cells (32), 12,000 steps"),
    # Which setting moves the rate (chapter 4)? The same 16 seeds at the f and r values next to the paper's
    # (grid neighbours of f = 0.7 and r = 1), long enough for late composition (f-sweep runs composed up to step
    # 20,001), beside those seeds at the paper's configuration in composition_seeds.
    "composition_near_f": Sweep(
        "composition_near_f", {"task.train_fraction": (F_GRID[12], F_GRID[14])}, metric="1var_train",
        base={"task.two_var_rate": 1.0, "train.steps": NEAR_PAPER_STEPS}, seeds=NEAR_PAPER_SEEDS,
        x_label="training fraction f", metric_label="1-var train accuracy",
        description="seeds 42-57 at the f values next to the paper's 0.7 (r = 1), 24,000 steps: does f move the rate?"),
    "composition_near_r": Sweep(
        "composition_near_r", {"task.two_var_rate": (R_GRID[18],)}, metric="1var_train",
        base={"task.train_fraction": 0.7, "train.steps": NEAR_PAPER_STEPS}, seeds=NEAR_PAPER_SEEDS,
        x_label="2-var rate r", metric_label="1-var train accuracy",
        description="seeds 42-57 at the r value next to the paper's 1 (f = 0.7), 24,000 steps: does r move the rate?"),
    "composition_odds": Sweep(
        "composition_odds", {"train.init_seed": ODDS_INITS}, metric="1var_train", base=ODDS_BASE, seeds=ODDS_DATA,
        modes=("eager", "compiled"), run_first=odds_wrapped_diagonal, x_label="initialization seed", metric_label="1-var train accuracy",
        description="the fresh crossed design: 8 initializations x 8 data orders never used before, each cell eager"
                    " and compiled (fp32), 12,000 steps, stopped once composition holds"),
    "composition_odds_nudged": Sweep(
        "composition_odds_nudged", {"train.init_seed": ODDS_INITS}, metric="1var_train", base=ODDS_BASE,
        seeds=ODDS_DATA, perturbations=ODDS_NUDGED, run_first=nudged_by_replicate, x_label="initialization seed",
        metric_label="1-var train accuracy",
        description="R2's replicates: every cell of the crossed design with a one-time nudge of 1e-4 at step 0"
                    " (perturb seeds 1 and 2), 12,000 steps, stopped once composition holds; with the eager and"
                    " compiled runs, 4 replicates per cell (stated 2026-12-04; trained on CPU)"),
    "composition_flips": Sweep(
        "composition_flips", {"train.init_seed": ODDS_INITS}, metric="1var_train", base=ODDS_BASE, seeds=ODDS_DATA,
        keep=odds_diagonal, perturbations=FLIP_PERTURBATIONS, modes=("eager",), run_first=flips_by_replicate,
        x_label="initialization seed",
        metric_label="1-var train accuracy",
        description="the design's 8 diagonal cells, eager, under one-time nudges (1e-7, 1e-4, 1e-2 at step 0; 1e-4"
                    " at steps 1,000 and 3,000) and per-step gradient noise (1e-7, 1e-5): which perturbation flips"
                    " an outcome"),
    "c10_remove": Sweep(
        "c10_remove", {}, metric="1var_train", base=ODDS_BASE, seeds=C10_REMOVE_SEEDS, perturbations=({}, C10_REMOVE),
        modes=("eager",), metric_label="1-var train accuracy",
        description="C10's necessity test: three composing seeds with the identity component of every layer-2 QK"
                    " update removed over steps 1-6,000, beside their unsteered twins (12,000 steps, eager)"),
    "c10_add": Sweep(
        "c10_add", {}, metric="1var_train", base=ODDS_BASE, seeds=C10_ADD_SEEDS, perturbations=({}, C10_ADD, C10_SHAM),
        modes=("eager",), metric_label="1-var train accuracy",
        description="C10's sufficiency test: three stuck seeds with each layer-2 QK update's identity component set"
                    " to half its size over steps 4,001-8,000 (then released), a sham push of a random direction,"
                    " and their unsteered twins (12,000 steps, eager)"),
    "c10_onset": c10_onset_sweep(
        "c10_onset", necessity_cell, C10_ONSET_ARMS,
        description=f"C10's necessity at copying onset: {4 * len(C10_NECESSITY_INITS)} always-composing cells of the"
                    f" crossed design, from the eval at which layer 1 copies (measure 5 >= {ONSET['trigger']}) for"
                    f" {ONSET['window']:,} steps: the identity component of every layer-2 QK update removed, a"
                    f" wrong-pairs sham removed, or nothing (the twin); {DECIDE_STEPS:,} steps, eager"),
    "c10_onset_hold": c10_onset_sweep(
        "c10_onset_hold", necessity_cell, C10_HOLD_ARMS,
        description=f"C10's necessity at copying onset, held: the {4 * len(C10_NECESSITY_INITS)} cells of c10_onset,"
                    f" from the eval at which layer 1 copies for {ONSET['window']:,} steps: each row's contrast of the"
                    " variable QK map held at its value before every step, for the identity pairing (the removal) or"
                    f" the wrong pairing (the sham); the twin is c10_onset's; {DECIDE_STEPS:,} steps, eager"),
    "c10_onset_push": c10_onset_sweep(
        "c10_onset_push", push_cell, C10_PUSH_ARMS,
        description=f"C10's sufficiency at copying onset: {len(C10_PUSH_CELLS)} cells of the crossed design stuck"
                    f" eager and compiled, from the eval at which layer 1 copies for {ONSET['window']:,} steps: the"
                    " identity component of every layer-2 QK update pushed to "
                    + " and ".join(f"{share:g}" for share in C10_PUSH_SHARES) + " times the change W_Q2's own step"
                    f" makes, a wrong-pairs sham as hard, and the twin; {DECIDE_STEPS:,} steps, eager"),
    "c10_onset_double_hold": c10_onset_sweep(
        "c10_onset_double_hold", route_cell, C10_DOUBLE_HOLD_ARMS,
        description=f"R3's double hold: the {len(C10_ROUTE_CELLS)} cells that passed C10's necessity checks, from the"
                    f" eval at which layer 1 copies for {ONSET['window']:,} steps: the row contrasts of the variable QK"
                    " map and of the queries' map (the lookup's input at `=` averaged per queried variable, against"
                    " the values' variable copies) held for the identity pairing or the wrong pairing (the sham); the"
                    f" twin is c10_onset's; {DECIDE_STEPS:,} steps, eager"),
    "c10_onset_clamp": c10_onset_sweep(
        "c10_onset_clamp", push_cell, C10_CLAMP_ARMS,
        description=f"C10's sufficiency by the clamp: the {len(C10_PUSH_CELLS)} stuck cells of c10_onset_push, from"
                    f" the eval at which layer 1 copies for {ONSET['window']:,} steps: after every step, ten of the"
                    " twelve rows of the variable QK map made to peak on their own variable by the margin"
                    f" {C10_CLAMP_MARGIN:g} (the clamp) or on the next variable (the sham); the twin is"
                    f" c10_onset_push's; {DECIDE_STEPS:,} steps, eager"),
    "composition_bf16": Sweep(
        "composition_bf16", {}, metric="1var_train", base={**COMPOSITION_BASE, "train.bf16": True},
        seeds=tuple(range(42, 52)), metric_label="1-var train accuracy",
        description="the ten main seeds again with bf16 autocast (the authors' precision), 12,000 steps"),
    "composition_seeds_cuda_bf16": Sweep(
        "composition_seeds_cuda_bf16", {}, metric="1var_train", base={**COMPOSITION_BASE, "train.bf16": True},
        seeds=seed_range(STUDY["composition"]["seeds"]), metric_label="1-var train accuracy",
        description="the composition study's 32 seeds with bf16 autocast on a GPU (the authors' numerical mode),"
                    " 12,000 steps: a row of chapter 4's numerical modes (stated 2026-12-04)"),
    # G5 (the generality chapter; stated 2026-12-04 before its runs): the r_sweep's first two values, where its
    # 2-var union is still rising, at 24 variables, paired by seed with the 12-variable runs.
    "r_sweep_vars24": Sweep(
        "r_sweep_vars24", {"task.two_var_rate": R_GRID[:COVERAGE["r_values"]]}, metric="2var_union",
        base={"task.n_vars": COVERAGE["n_vars"], "task.train_fraction": 0.7, "train.steps": PAPER_SWEEP_STEPS,
              "train.eval_every": SWEEP_EVAL_EVERY}, seeds=tuple(COVERAGE["seeds"]),
        description="the 2-var rate r at 24 variables (pair coverage 1 - (1 - r)^22 against 1 - (1 - r)^10 at 12)"
                    " at the r_sweep's first two values; metric: 2-var union exact",
        x_label="2-var rate r (2-var rows kept)", metric_label="2-var union exact accuracy"),
    **{f"g4_{shape}": g4_sweep(shape) for shape in G4_SHAPES},
}
# The study's own config changes under every sweep's base (a sweep's base wins where both set a key).
SWEEPS = {name: replace(sweep, base={**study_overrides(), **sweep.base}) for name, sweep in _SWEEPS.items()}
