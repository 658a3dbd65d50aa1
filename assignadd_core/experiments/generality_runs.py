"""The mechanism on other tasks and shapes (the chapter "Beyond the paper's task"): its runs and their driver.

Planned on 2026-12-04, before any of its runs, with its rules (`verdicts.RULES` G1-G5), in the study profile
`studies/generality.yaml`: four departures from the paper's configuration, each on seeds 42-44 for 40,000 steps (the
paper's main-run length; the study's first runs stopped at 20,000, where the authors' figures end, and G1's "no final
rise" there was mostly censoring: four of the five composed paper-shape seeds of 42-51 finish their final rise at
steps 20,801-37,301):

* `mod97`, `mod113`: another modulus (a prime, as 59), 12 variables;
* `vars24`: 24 variables at modulus 59 (the first two left-only and the last two right-only, as a, b and k, l);
* `layers3_heads2`: 3 layers of 2 heads, the MLP in the last block only, at the paper's task.

Each run is an ordinary run folder under `runs/<folder>/<shape>_seed<seed>/` (`folder` in the profile:
`generality40k`; the 20,000-step runs stay in `runs/generality/`, the profile's `earlier`), trained by
`training.train` (so a killed run resumes); its metrics, final.json and final weights are committed, its checkpoints
are not kept. The 2-var question (G5) is the sweep `r_sweep_vars24` (`sweep.grid`). `python -m assignadd_core
generality run --part 1/2` trains every other planned run, `--part 2/2` the rest, so two processes share the plan.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import torch
import pandas as pd

from ..analysis import sweep_records
from ..core.config import ConfigError, RunConfig
from ..core.run_folder import DEFAULT_ROOT, Run
from ..rules.study import profile, run_name
from . import training
from ..rules import verdicts
from ..analysis.phases import detect_phases
from ..analysis.series import FINAL, series
from ..analysis.generality import paired_differences
from .stacked import train_stacked
from .sweep.driver import GPU_STATE_EVERY_S, gpu_data_workers


# The plan: the generality study's own profile, `studies/generality.yaml` (whichever study the process runs).
STUDY = profile("generality")
STEPS = STUDY["steps"]  # each run's
SEEDS = tuple(STUDY["seeds"])
SHAPES = {name: {key: tuple(v) if isinstance(v, list) else v for key, v in shape["overrides"].items()}
          for name, shape in STUDY["shapes"].items()}  # each shape's config changes
SHAPE_NAMES = {"paper": STUDY["paper_label"], **{name: shape["label"] for name, shape in STUDY["shapes"].items()}}
ROOT = DEFAULT_ROOT / STUDY["folder"]  # the runs' folder


class Planned(NamedTuple):
    name: str
    shape: str
    seed: int
    config: RunConfig


def check_shape(shape: str) -> None:
    if shape not in SHAPES:
        raise ConfigError(f"unknown shape {shape!r}; the study's shapes are {', '.join(SHAPES)}")


def shape_config(shape: str, seed: int, steps: int | None = None) -> RunConfig:
    """A shape's run config at `seed`, for `steps` (default the study's STEPS)."""
    check_shape(shape)
    return RunConfig().replace(**SHAPES[shape], **{"train.seed": seed, "train.steps": steps or STEPS})


def plan(steps: int | None = None) -> list[Planned]:
    """Every planned run, seed by seed (a study stopped early has every shape), the slow 3-layer shape last within
    each seed; `steps` other than the study's names the runs `<shape>_seed<seed>_s<steps>` (a quick look, never
    mistaken for the study's runs)."""
    steps = steps or STEPS
    suffix = "" if steps == STEPS else f"_s{steps}"
    return [Planned(run_name(shape, seed) + suffix, shape, seed, shape_config(shape, seed, steps))
            for seed in SEEDS for shape in SHAPES]


def part_of_plan(part: int, of: int, steps: int | None = None) -> list[Planned]:
    """The runs one of `of` processes trains: the fast shapes and the 3-layer runs dealt out separately, so each
    process gets an even share of both."""
    if not 1 <= part <= of:
        raise ConfigError(f"--part must be i/n with 1 <= i <= n, got {part}/{of}")
    planned = plan(steps)
    slow = [item for item in planned if not item.config.model.paper_shape]
    fast = [item for item in planned if item.config.model.paper_shape]
    # the slow runs counted from the last process, so that one process does not get both the first fast and slow run
    return [item for i, item in enumerate(fast) if i % of == part - 1] + \
           [item for i, item in enumerate(slow) if i % of == (of - part) % of]


def finished(root: Path, name: str) -> bool:
    return (root / name / "final.json").exists()


def run_part(part: int, of: int, root: Path | None = None, threads: int = 1, progress: bool = True,
             shapes: list[str] | None = None, steps: int | None = None, device: str = "cpu") -> list[str]:
    """Train this part's runs (`steps` each, default the study's) that are not finished under `root` (default ROOT;
    each resumes where it stopped), only those of `shapes` if given, on `device`; the names trained. On a GPU each
    shape's runs train as one stack (`stacked`)."""
    root = ROOT if root is None else root

    for shape in shapes or ():
        check_shape(shape)
    torch.set_num_threads(threads)
    todo = [item for item in part_of_plan(part, of, steps)
            if not finished(root, item.name) and (not shapes or item.shape in shapes)]
    if device.startswith("cuda"):
        for shape in dict.fromkeys(item.shape for item in todo):
            items = [item for item in todo if item.shape == shape]
            train_stacked([item.config for item in items], [root / item.name for item in items], device=device,
                          progress=progress, keep_checkpoints="none", state_every_s=GPU_STATE_EVERY_S,
                          data_workers=gpu_data_workers())
        return [item.name for item in todo]
    for item in todo:
        training.train(item.config, root / item.name, device=device, progress=progress, keep_checkpoints="none")
    return [item.name for item in todo]


def status(root: Path | None = None) -> list[dict]:
    """One row per planned run (under `root`, default ROOT): its name, shape, seed and whether it finished (and its
    last logged step)."""
    root = ROOT if root is None else root
    rows = []
    for item in plan():
        metrics = root / item.name / "metrics.csv"
        last = None
        if metrics.exists():
            lines = metrics.read_text().strip().splitlines()
            last = int(lines[-1].split(",")[0]) if len(lines) > 1 else None
        rows.append({"run": item.name, "shape": item.shape, "seed": item.seed, "finished": finished(root, item.name),
                     "last_step": last})
    return rows


# ---------------------------------------------------------------------------- the chapter's readings, shape by shape
def finished_runs(root, shapes, seeds) -> dict[str, dict[int, "Run"]]:
    """{shape: {seed: Run}} of the study's finished runs under `root` (a run still training is left out)."""
    out = {}
    for shape in shapes:
        runs = {seed: Run(root / run_name(shape, seed)) for seed in seeds}
        out[shape] = {seed: run for seed, run in runs.items() if run.is_complete()}
    return out


def shape_readings(runs: dict[int, "Run"]) -> dict:
    """One shape's numbers and G1-G3 verdicts: {"phases", "roles", "fourier": DataFrames by seed,
    "composed": seeds that composed, "added": seeds whose addition is learned, "G1", "G2", "G3": Verdicts}."""

    finals = {seed: run.final()["pools"] for seed, run in runs.items()}
    composed = [seed for seed, pools in finals.items() if verdicts.composed(pools["1var_train"])]
    added = [seed for seed, pools in finals.items() if pools["0var_train"] >= verdicts.LEARNED_LEVEL]
    phases = {seed: detect_phases(run.metrics()) for seed, run in runs.items()}
    roles = {seed: series(run, "found_roles", FINAL).iloc[0] for seed, run in runs.items()}
    fourier = {seed: series(run, "fourier", FINAL).iloc[0] for seed, run in runs.items()}
    name = "seed {}".format
    g1 = verdicts.g1_phases({name(s): phases[s] for s in composed}) if composed else None
    g2 = verdicts.over_seeds({name(s): verdicts.g2_seed(roles[s]["m2_l1_prev_token_qk"], roles[s]["m3_l2_var_identity_qk"],
                                                        roles[s]["m6_l2_eq_to_values"]) for s in composed}) if composed else None
    g3 = verdicts.over_seeds({name(s): verdicts.c7_fourier(
        int(fourier[s]["n_key_frequencies_70"]), int(fourier[s]["n_above_09"]), fourier[s]["median_r2"],
        fourier[s]["null_q99"], fourier[s]["best_r2"], int(fourier[s]["n_frequencies"])) for s in added},
        who="seeds whose addition is learned") if added else None
    return {"phases": pd.DataFrame(phases).T.rename_axis("seed"), "roles": pd.DataFrame(roles).T.rename_axis("seed"),
            "fourier": pd.DataFrame(fourier).T.rename_axis("seed"), "composed": composed, "added": added,
            "G1": g1, "G2": g2, "G3": g3}


def composition_count(sweep_csv) -> tuple[int, int]:
    """(runs that composed, finished runs) of a sweep's results table (1-var train at the end); a sweep not run here
    (no table) gives (0, 0)."""
    if not Path(sweep_csv).is_file():
        return 0, 0
    table = pd.read_csv(sweep_csv)
    done = sweep_records.finished(table)
    return sum(verdicts.composed(float(value)) for value in done["1var_train"]), int(len(done))


def coverage_pairs(vars24_csv, vars12_csv) -> list[dict]:
    """G5's pairs from the two sweeps' results tables (finished runs only; a missing table gives no pairs)."""
    if not (Path(vars24_csv).is_file() and Path(vars12_csv).is_file()):
        return []
    rows = [pd.read_csv(path) for path in (vars24_csv, vars12_csv)]
    done = [sweep_records.finished(table).to_dict(orient="records") for table in rows]
    return paired_differences(*done)


def fresh_outcomes(records_by_shape: dict) -> dict[int, dict[str, bool]]:
    """G4's paired outcomes since 2026-12-06: {seed: {shape: composed}} from each shape's fresh-seed sweep results
    ({shape: results table}; finished runs only, 1-var train at the end)."""
    out: dict[int, dict[str, bool]] = {}
    for shape, table in records_by_shape.items():
        for row in sweep_records.finished(table).to_dict("records"):
            out.setdefault(int(row["seed"]), {})[shape] = verdicts.composed(float(row["1var_train"]))
    return out
