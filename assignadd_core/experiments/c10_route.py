"""R3, the lookup's route (chapter 9): the twin, held and sham runs of the cells that passed C10's necessity checks,
trained again with a checkpoint every 100 steps, and read part by part (`analysis.route`).

    python -m assignadd_core c10-route run [--part 1 --of 2]   # train (resumable; two processes, one part each)
    python -m assignadd_core c10-route read                    # read every checkpoint into runs/theory/route*.csv

A re-run is the committed run again (eager, one thread, on CPU: bit-identical), checked against the committed
metrics table of its sweep point (`identical`). The runs keep their metrics; their checkpoints stay on the machine
that trained them (about 60 MB a run), the tables they give are committed.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple
from statistics import median

import pandas as pd
from tqdm.auto import tqdm
import torch

from ..analysis import route, steering
from ..core.config import RunConfig
from ..core.run_folder import DEFAULT_ROOT, Run
from ..rules import verdicts
from ..rules.study import current
from .sweep import SWEEPS
from .sweep.store import finished_metrics, metrics_dir, results_frame
from .threads import set_threads
from .training import train
from .qk_steering import TRIGGER_KEY
from ..core.checkpoint import atomic_write_text
from ..measure.measures import variable_qk_map

# Each arm: the sweep that holds its committed run and the steering direction that names it there.
ARMS = {"twin": ("c10_onset", "none"), "held": ("c10_onset_hold", "identity"),
        "sham": ("c10_onset_hold", "wrong_pairs")}
SEED42 = "seed42"
WALL_CLOCK = ("elapsed_s",)  # metrics columns that time the run, not its numbers  # the main composing run, read at its committed checkpoints beside the re-runs


class Planned(NamedTuple):
    name: str  # the re-run's folder name
    cell: str  # "init/data"
    arm: str
    sweep: str
    key: str  # the committed point's key
    overrides: dict


def study_root(root: Path | None = None) -> Path:
    return Path(root or DEFAULT_ROOT) / "theory" / "route"


def table_path(root: Path | None = None, kind: str = "checkpoints") -> Path:
    """runs/theory/route.csv (every checkpoint's terms) and route_ablations.csv (at each run's composition step)."""
    return Path(root or DEFAULT_ROOT) / "theory" / ("route.csv" if kind == "checkpoints" else "route_ablations.csv")


def hold_evals() -> int:
    return int(current()["composition"]["odds_hold"])


def passing_cells(results_dir: Path | None = None) -> list[str]:
    """The cells that pass C10's necessity checks (`verdicts.c10_necessity` on the committed records), in order."""
    from .sweep.grid import onset_cells  # here, not at the top: importing `grid` reads the study profile
    frames = {name: results_frame(SWEEPS[name], results_dir) for name in ("c10_onset", "c10_onset_hold")}
    metrics = {k: v for name, frame in frames.items()
               for k, v in finished_metrics(SWEEPS[name], frame, results_dir).items()}
    cells = steering.hold_cells(frames["c10_onset"], frames["c10_onset_hold"], metrics,
                                onset_cells(SWEEPS["c10_onset"]), hold_evals())
    if any(c[arm] is None for c in cells for arm in ("twin", "removal", "sham")):
        return []
    return [c["cell"] for c in verdicts.c10_necessity(cells)["cells"]]


def plan(results_dir: Path | None = None) -> list[Planned]:
    """Every re-run: each passing cell's twin, then each one's held run, then each one's sham (the twins first: the
    clamp's margin is read from them)."""
    cells = passing_cells(results_dir)
    points = {}
    for arm, (sweep, direction) in ARMS.items():
        for p in SWEEPS[sweep].points():
            if p.overrides.get("train.steer_direction") == direction:
                points[(f"{p.params['train.init_seed']}/{p.seed}", arm)] = (sweep, p)
    out = []
    for arm in ARMS:
        for cell in cells:
            sweep, p = points[(cell, arm)]
            out.append(Planned(f"{cell.replace('/', '_')}_{arm}", cell, arm, sweep, p.key, dict(p.overrides)))
    return out


def run_part(part: int = 1, of: int = 1, root: Path | None = None, progress: bool = True) -> list[Run]:
    """Train (or resume) every `of`-th re-run starting at `part` (1-based), eager on one thread, every checkpoint
    kept; finished runs are left as they are."""
    if not 1 <= part <= of:
        raise ValueError(f"part must be between 1 and {of}, got {part}")
    set_threads(1)
    runs = []
    for item in plan()[part - 1::of]:
        run = Run(study_root(root) / item.name)
        if not run.final_path.is_file():
            run = train(RunConfig().replace(**item.overrides), run.path, progress=progress, keep_checkpoints="all",
                        compile="off")
        runs.append(run)
    return runs


def identical(run: Run, item: Planned, results_dir: Path | None = None) -> bool:
    """Whether the re-run's metrics equal its committed sweep point's, column by column (bit for bit; the wall-clock
    column aside)."""
    committed = pd.read_csv(metrics_dir(SWEEPS[item.sweep], results_dir) / f"{item.key}.csv")
    mine = run.metrics()
    shared = [c for c in committed.columns if c in mine.columns and c not in WALL_CLOCK]
    return len(mine) == len(committed) and mine[shared].reset_index(drop=True).equals(
        committed[shared].reset_index(drop=True))


def _read_run(run: Run, meta: dict, steps: list[int], compose_step: int | None) -> tuple[list[dict], dict | None]:
    rows = []
    for step in steps:
        rows.append({**meta, "step": step, **route.checkpoint_reading(run.load_model(step))})
    ablation = None
    if compose_step is not None:
        at = min((s for s in run.checkpoint_steps() if s >= compose_step), default=None)
        if at is not None:
            model = run.load_model(at)
            readout = route.ablation_reading(model)
            ablation = {**meta, "step": at, **route.checkpoint_reading(model),
                        **{f"{part}_{what}": value for part, r in readout.items() for what, value in r.items()}}
    return rows, ablation


def read(root: Path | None = None, progress: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every finished re-run (and seed 42's committed checkpoints) read at each checkpoint; the ablations at each
    run's composition step. Returns (checkpoints table, ablations table)."""
    hold = hold_evals()
    rows, ablations = [], []
    items = [item for item in plan() if Run(study_root(root) / item.name).final_path.is_file()]
    for item in tqdm(items, desc="route", disable=not progress):
        run = Run(study_root(root) / item.name)
        metrics = run.metrics()
        meta = {"run": item.name, "cell": item.cell, "arm": item.arm, "identical": identical(run, item),
                "trigger": run.final().get(steering_key()), "composed_at": steering.time_to_compose(metrics, hold)}
        got, ablation = _read_run(run, meta, run.checkpoint_steps(), meta["composed_at"])
        rows += got
        ablations += [ablation] if ablation else []
    seed42 = Run(Path(root or DEFAULT_ROOT) / SEED42)
    if seed42.final_path.is_file():
        meta = {"run": SEED42, "cell": SEED42, "arm": "seed 42", "identical": True, "trigger": None,
                "composed_at": steering.time_to_compose(seed42.metrics(), hold)}
        got, ablation = _read_run(seed42, meta, seed42.checkpoint_steps(), meta["composed_at"])
        rows += got
        ablations += [ablation] if ablation else []
    return pd.DataFrame(rows), pd.DataFrame(ablations)


def steering_key() -> str:
    return TRIGGER_KEY


def write_tables(checkpoints: pd.DataFrame, ablations: pd.DataFrame, root: Path | None = None) -> list[Path]:
    paths = []
    for kind, table in (("checkpoints", checkpoints), ("ablations", ablations)):
        path = table_path(root, kind)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, table.to_csv(index=False, float_format="%.6g"))
        paths.append(path)
    return paths


def held_inputs(ablations: pd.DataFrame, arm: str = "held") -> list[dict]:
    """R3's inputs (`verdicts.r3_route`) from the ablations table: per run of `arm` at its composition step, its
    margin's terms, each key part's whole share and the drop of the in-context lookup when each is ablated."""
    rows = ablations[ablations["arm"] == arm].to_dict("records")
    out = []
    for r in rows:
        terms = {verdicts.route_term(q, k): float(r[verdicts.route_term(q, k)]) for q in route.PARTS
                 for k in route.PARTS}
        out.append({"run": r["run"], "terms": terms, "margin": float(r["margin"]),
                    "totals": {k: sum(terms[verdicts.route_term(q, k)] for q in route.PARTS) for k in route.PARTS},
                    "drops": {k: float(r["none_lookup"]) - float(r[f"{k}_lookup"]) for k in route.PARTS}})
    return out


def identity_leads(model) -> list[float]:
    """The lead of each row of the variable QK map that peaks on its own variable over the row's next entry, in the
    lookup's score units (what the clamp's margin is read from)."""
    scores = variable_qk_map(model).double() * model.blocks[route.roles.lookup_block(model)].attn.scale
    n = scores.shape[0]
    own = scores.diagonal()
    rivals = scores.masked_fill(torch.eye(n, dtype=torch.bool), float("-inf")).max(-1).values
    return [float(x) for x in (own - rivals) if x > 0]


def clamp_margin(root: Path | None = None) -> float:
    """The clamp's margin (C10, stated 2026-12-06): over the passing cells' twins, at their composition step, the
    median lead of the identity rows (`identity_leads`); the median over the twins."""
    leads = []
    for item in plan():
        if item.arm != "twin":
            continue
        run = Run(study_root(root) / item.name)
        step = steering.time_to_compose(run.metrics(), hold_evals())
        leads.append(median(identity_leads(run.load_model(step))))
    return float(median(leads))


APART = 0.25  # measure 3 and the same map read in context "disagree" at a checkpoint when they differ by this much


def with_onset(checkpoints: pd.DataFrame) -> pd.DataFrame:
    """The checkpoints table with "since": steps after each re-run's copying onset (seed 42, without a trigger, is
    left out)."""
    table = checkpoints[checkpoints["trigger"].notna()].copy()
    table["since"] = table["step"] - table["trigger"].astype(int)
    return table


def disagreement(checkpoints: pd.DataFrame) -> dict:
    """Measure 3 (the 12 x 12 map's rows that peak on their own variable) against the same map read in context (the
    queried variable against the sequence's other assigned ones), over every checkpoint read: the largest and the
    median difference, and at how many checkpoints they differ by at least APART."""
    gap = (checkpoints["identity_in_context"] - checkpoints["m3"]).abs()
    return {"max": float(gap.max()), "median": float(gap.median()), "apart": int((gap >= APART).sum()),
            "checkpoints": int(len(gap))}


def tables(folder: str | Path = "") -> tuple[pd.DataFrame, pd.DataFrame]:
    """The route's committed tables (or those in `folder`): (checkpoints, ablations); empty tables where not made."""
    paths = [Path(folder) / table_path(None, kind).name if folder else table_path(None, kind)
             for kind in ("checkpoints", "ablations")]
    return tuple(pd.read_csv(p) if p.is_file() else pd.DataFrame(columns=["run", "arm", "step", "trigger"])
                 for p in paths)


def seed42_input(ablations: pd.DataFrame) -> dict | None:
    """Seed 42's reading at its composition step, in `held_inputs`' form (None where it was not read)."""
    rows = held_inputs(ablations, "seed 42") if len(ablations) else []
    return rows[0] if rows else None


def ablation_table(ablations: pd.DataFrame) -> pd.DataFrame | str:
    """Per arm, the median over its runs at their composition step of the in-context lookup with nothing ablated and
    with each key-side part ablated, and of the 1-var answers."""
    if not len(ablations):
        return "the route's tables are not here"
    columns = {"none_lookup": "lookup, nothing ablated",
               **{f"{p}_lookup": f"lookup, keys' {p.replace('_', ' ')} ablated" for p in route.PARTS},
               **{f"query_{p}_lookup": f"lookup, query's {p.replace('_', ' ')} ablated" for p in route.QUERY_ABLATED},
               "none_answers": "1-var answers"}
    columns = {k: v for k, v in columns.items() if k in ablations}
    table = ablations.groupby("arm", sort=False)[list(columns)].median().rename(columns=columns)
    return table.assign(runs=ablations.groupby("arm", sort=False).size()).round(2)


def query_drops(ablations: pd.DataFrame) -> dict:
    """Per arm, the median drop of the in-context lookup when each query-side part at `=` is ablated (descriptive,
    beside R3's rule): {arm: {part: drop}}."""
    out = {}
    for arm, rows in ablations.groupby("arm", sort=False):
        out[arm] = {p: float((rows["none_lookup"] - rows[f"query_{p}_lookup"]).median()) for p in route.QUERY_ABLATED
                    if f"query_{p}_lookup" in rows}
    return out
