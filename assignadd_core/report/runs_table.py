"""The README's list of what `runs/` holds, written by the book build from the runs folder itself: every top-level
folder (the main runs and their continuations grouped) with what it is for, its runs' steps and how many finished,
and every sweep with its finished points of the planned ones and its description (`sweep.grid`). The purposes come
from the study profiles where they name the folder; a folder nobody describes is listed as such, never left out."""
from __future__ import annotations

import json
import re
from pathlib import Path

from ..core.run_folder import DEFAULT_ROOT
from ..rules.study import current, profile
from ..rules.verdicts import composed
from ..experiments.sweep import SWEEPS
from ..experiments.sweep.store import grid_status, results_path

MARKERS = ("<!-- committed:start -->", "<!-- committed:end -->")
UNKNOWN = "not described (add its purpose in assignadd_core/report/runs_table.py)"
MAIN, CONTINUED = re.compile(r"seed(\d+)$"), re.compile(r"seed(\d+)_to(\d+)$")
# The files beside the sweeps' results that describe no sweep: what each holds.
SWEEP_FILES = {"c9_power.json": "C9's power calculation (`python -m assignadd_core power`)",
               "r2_power.json": "the power of R2's tests on the replicated design (`python -m assignadd_core power r2`)"}


def run_folders(folder: Path, depth: int = 2) -> list[Path]:
    """The run folders (those with a config.json) at or under `folder`, `depth` levels down at most."""
    if (folder / "config.json").is_file():
        return [folder]
    if depth == 0 or not folder.is_dir():
        return []
    return [run for child in sorted(folder.iterdir()) if child.is_dir() and not child.name.startswith(".")
            for run in run_folders(child, depth - 1)]


def _finished(runs: list[Path]) -> list[Path]:
    return [run for run in runs if (run / "final.json").is_file()]


def _steps(runs: list[Path]) -> str:
    steps = sorted({json.loads((run / "config.json").read_text())["train"]["steps"] for run in runs})
    return f"{steps[0]:,} steps" if len(steps) == 1 else f"{steps[0]:,}–{steps[-1]:,} steps"


def _composed(runs: list[Path]) -> list[str]:
    return [run.name for run in _finished(runs)
            if composed(json.loads((run / "final.json").read_text())["pools"]["1var_train"])]


def _names(runs: list[Path]) -> str:
    """The folders' names; main runs of consecutive seeds as `seed42` … `seed51`."""
    seeds = [int(m.group(1)) for m in (MAIN.match(run.name) for run in runs) if m]
    if len(seeds) == len(runs) > 3 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"`{runs[0].name}` … `{runs[-1].name}`"
    return ", ".join(f"`{run.name}`" for run in runs)


def _count(runs: list[Path], planned: int | None = None) -> str:
    return f"{len(_finished(runs))} of {planned or len(runs)} finished"


def purposes() -> dict[str, tuple[str, int | None]]:
    """What each known top-level folder is for, from the study profiles where they say it, and how many runs it
    plans (None: as many as it holds)."""
    study, shapes = current(), profile("generality")
    labels = ", ".join(shape["label"] for shape in shapes["shapes"].values())
    planned = len(shapes["shapes"]) * len(shapes["seeds"])
    return {
        "dense": ("C10 and chapter 6: seeds again with a checkpoint every 20 steps to just past the jump (the stuck"
                  " ones longer); metrics and cached quantities only", None),
        shapes["folder"]: (f"chapter 14: {labels}, seeds {', '.join(map(str, shapes['seeds']))}", planned),
        shapes["earlier"]["folder"]: ("chapter 14's first runs of the same plan, kept and readable"
                                      f" (`-p study_folder {shapes['earlier']['folder']}`)", planned),
        "modes": (f"chapter 4: seed {study['runs']['mode_seed']} in several numerical modes and where they part"
                  " (`distances.csv`, `step_differences.csv`); no weights", None),
        "rescue": (f"chapter 4: `{study['runs']['rescue_source']}`'s final state branched under other settings; no"
                   " weights", None),
        "theory": ("C10's premise window read at matched steps (`c10_window.csv`) and its re-runs; R3's route: C10's"
                   " held runs, shams and twins trained again with checkpoints (`route/`) and read part by part"
                   " (`route.csv`, `route_ablations.csv`); metrics only", None),
    }


def committed_runs(root: Path | None = None) -> str:
    """The README's block: a markdown table of what `root` (the runs folder) holds."""
    root = DEFAULT_ROOT if root is None else Path(root)
    rows = ["| in `runs/` | what it is for | runs |", "|---|---|---|"]
    entries = sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.is_dir() else []
    main = [p for p in entries if MAIN.match(p.name) and run_folders(p, 0)]
    later = [p for p in entries if CONTINUED.match(p.name) and run_folders(p, 0)]
    if main:
        kept = [f"`{p.name}` {len(list((p / 'checkpoints').glob('*.safetensors')))} checkpoints" for p in main
                if list((p / "checkpoints").glob("*.safetensors"))]
        resume = [f"`{p.name}`" for p in main if (p / "resume").is_dir()]
        rows.append(f"| {_names(main)} | the main runs of the paper's configuration, {_steps(main)} each; composed:"
                    f" {', '.join(_composed(main)) or 'none'}" + (f"; kept: {', '.join(kept)}" if kept else "")
                    + (f"; final optimizer state (`resume/`, to continue): {', '.join(resume)}" if resume else "")
                    + f" | {_count(main)} |")
    if later:
        rows.append(f"| {_names(later)} | main seeds that did not compose, continued to {_steps(later)}; composed:"
                    f" {', '.join(_composed(later)) or 'none'} | {_count(later)} |")
    known = purposes()
    for entry in entries:
        if entry in main or entry in later or entry.name in ("sweeps", "claims", "claims.csv"):
            continue
        runs = run_folders(entry)
        purpose, planned = known.get(entry.name, (UNKNOWN, None))
        steps = f"; {_steps(runs)}" if runs else ""
        rows.append(f"| `{entry.name}{'/' if entry.is_dir() else ''}` | {purpose}{steps} |"
                    f" {_count(runs, planned) if runs else '—'} |")
    if (root / "claims").is_dir():
        records = len(list((root / "claims").glob("*.json")))
        rows.append(f"| `claims/`, `claims.csv` | the chapters' verdict records and the claims table (written by the"
                    f" book build) | {records} claims |")
    sweeps = root / "sweeps"
    stated = []
    for name, sweep in SWEEPS.items():
        if not results_path(sweep, sweeps).is_file():
            stated.append(f"`{name}` ({len(sweep.points())} points)")
            continue
        status = grid_status(sweep, sweeps)
        rows.append(f"| `sweeps/{name}` | {sweep.description} | {int((status['status'] == 'done').sum())} of"
                    f" {len(status)} points |")
    others = sorted(p.name for p in sweeps.iterdir() if p.is_file() and p.suffix not in (".jsonl", ".csv")
                    and not p.name.startswith(".")) if sweeps.is_dir() else []
    strays = sorted(p.stem for p in sweeps.glob("*.jsonl") if p.stem not in SWEEPS) if sweeps.is_dir() else []
    for name in others:
        rows.append(f"| `sweeps/{name}` | {SWEEP_FILES.get(name, UNKNOWN)} | — |")
    for name in strays:
        rows.append(f"| `sweeps/{name}.jsonl` | a sweep this version does not plan | — |")
    if stated:
        rows.append(f"| `sweeps/`: stated, not run yet | {', '.join(stated)} | none |")
    return "\n".join(rows)
