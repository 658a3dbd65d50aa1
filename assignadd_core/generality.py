"""The mechanism on other tasks and shapes (the chapter "Beyond the paper's task"): its runs and their driver.

Planned on 2026-12-04, before any of its runs, with its rules (`verdicts.RULES` G1-G5), in the study profile
`studies/generality.yaml`: four departures from the paper's configuration, each on seeds 42-44 for 20,000 steps (the authors' figures run to step 20,000, past their
refinement window of 14,500-16,000; our paper-shape seeds finish their final rise by step 7,000):

* `mod97`, `mod113`: another modulus (a prime, as 59), 12 variables;
* `vars24`: 24 variables at modulus 59 (the first two left-only and the last two right-only, as a, b and k, l);
* `layers3_heads2`: 3 layers of 2 heads, the MLP in the last block only, at the paper's task.

Each run is an ordinary run folder under `runs/generality/<shape>_seed<seed>/`, trained by `trainer.train` (so a
killed run resumes); its metrics, final.json and final weights are committed, its checkpoints are not kept. The
2-var question (G5) is the sweep `r_sweep_vars24` (`sweep.grid`). `python -m assignadd_core generality run --part 1/2`
trains every other planned run, `--part 2/2` the rest, so two processes share the plan.
"""
from __future__ import annotations

from pathlib import Path

from .config import ConfigError, RunConfig
from .run_folder import DEFAULT_ROOT
from .study import profile

STUDY = profile("generality")
STEPS = STUDY["steps"]
SEEDS = tuple(STUDY["seeds"])
SHAPES = {name: {key: tuple(v) if isinstance(v, list) else v for key, v in shape["overrides"].items()}
          for name, shape in STUDY["shapes"].items()}
SHAPE_NAMES = {"paper": STUDY["paper_label"], **{name: shape["label"] for name, shape in STUDY["shapes"].items()}}
ROOT = DEFAULT_ROOT / "generality"


def run_name(shape: str, seed: int) -> str:
    return f"{shape}_seed{seed}"


def shape_config(shape: str, seed: int, steps: int = STEPS) -> RunConfig:
    if shape not in SHAPES:
        raise ConfigError(f"unknown shape {shape!r}; the study's shapes are {', '.join(SHAPES)}")
    return RunConfig().replace(**SHAPES[shape], **{"train.seed": seed, "train.steps": steps})


def plan(steps: int = STEPS) -> list[tuple[str, RunConfig]]:
    """(run name, config) of every planned run, seed by seed (a study stopped early has every shape), the slow
    3-layer shape last within each seed; `steps` other than the study's names the runs `<shape>_seed<seed>_s<steps>`
    (a quick look, never mistaken for the study's runs)."""
    suffix = "" if steps == STEPS else f"_s{steps}"
    return [(run_name(shape, seed) + suffix, shape_config(shape, seed, steps)) for seed in SEEDS for shape in SHAPES]


def part_of_plan(part: int, of: int, steps: int = STEPS) -> list[tuple[str, RunConfig]]:
    """The runs one of `of` processes trains: the fast shapes and the 3-layer runs dealt out separately, so each
    process gets an even share of both."""
    if not 1 <= part <= of:
        raise ConfigError(f"--part must be i/n with 1 <= i <= n, got {part}/{of}")
    slow = [item for item in plan(steps) if not item[1].model.paper_shape]
    fast = [item for item in plan(steps) if item[1].model.paper_shape]
    # the slow runs counted from the last process, so that one process does not get both the first fast and slow run
    return [item for i, item in enumerate(fast) if i % of == part - 1] + \
           [item for i, item in enumerate(slow) if i % of == (of - part) % of]


def finished(root: Path, name: str) -> bool:
    return (root / name / "final.json").exists()


def run_part(part: int, of: int, root: Path = ROOT, threads: int = 1, progress: bool = True,
             shapes: list[str] | None = None, steps: int = STEPS) -> list[str]:
    """Train this part's runs that are not finished (each resumes where it stopped), only those of `shapes` if
    given; the names trained."""
    import torch

    from . import trainer
    for shape in shapes or ():
        if shape not in SHAPES:
            raise ConfigError(f"unknown shape {shape!r}; the study's shapes are {', '.join(SHAPES)}")
    torch.set_num_threads(threads)
    done = []
    for name, config in part_of_plan(part, of, steps):
        if finished(root, name) or (shapes and name.rsplit("_seed", 1)[0] not in shapes):
            continue
        trainer.train(config, root / name, progress=progress, keep_checkpoints="none")
        done.append(name)
    return done


def status(root: Path = ROOT) -> list[dict]:
    """One row per planned run: its name, shape, seed and whether it finished (and its last logged step)."""
    rows = []
    for seed in SEEDS:
        for shape in SHAPES:
            name = run_name(shape, seed)
            metrics = root / name / "metrics.csv"
            last = None
            if metrics.exists():
                lines = metrics.read_text().strip().splitlines()
                last = int(lines[-1].split(",")[0]) if len(lines) > 1 else None
            rows.append({"run": name, "shape": shape, "seed": seed, "finished": finished(root, name),
                         "last_step": last})
    return rows
