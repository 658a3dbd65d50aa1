"""Command line: `python -m assignadd_core train|eval|config ...` (see --help of each).

Each command imports the modules it needs inside its function: importing the whole package (torch, the model, the
analyses, the report) takes seconds, which `--help` and a quick command should not wait for."""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields
from pathlib import Path

from .core.config import INTERVENTIONS, SECTIONS, ConfigError, RunConfig, load_builtin_interventions
from .experiments.threads import set_threads


def add_config_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per config field (e.g. --steps, --train-fraction) and per intervention's setting (e.g. --jitter),
    defaulting to 'unchanged'."""
    parser.add_argument("--config", type=Path, help="start from this config.json instead of the paper's")
    load_builtin_interventions()
    groups = [(section, f"{section} settings (paper defaults)", klass) for section, klass in SECTIONS.items()]
    groups += [("interventions", f"intervention {name} (defaults: none)", klass) for name, klass in INTERVENTIONS.items()]
    for section, title, klass in groups:
        group = parser.add_argument_group(title)
        for f in fields(klass):
            flag = "--" + f.name.replace("_", "-")
            if f.type in ("bool", bool):
                group.add_argument(flag, dest=f"{section}.{f.name}", action=argparse.BooleanOptionalAction,
                                   default=None, help=f"default {f.default}")
            elif str(f.type).startswith("tuple"):
                group.add_argument(flag, dest=f"{section}.{f.name}", type=int, nargs="+", default=None, metavar="INT",
                                   help=f"default {' '.join(map(str, f.default))}")
            else:
                kind = {"int": int, "int | None": int, "float": float}.get(str(f.type), str)
                default = f.metadata.get("help") or (f"default {f.default}" if f.default is not None
                                                     else "default: as --seed")
                group.add_argument(flag, dest=f"{section}.{f.name}", type=kind, default=None, metavar=kind.__name__.upper(),
                                   help=default)


def config_from_args(args: argparse.Namespace) -> RunConfig:
    base = RunConfig.from_json(args.config.read_text()) if args.config else RunConfig()
    overrides = {k: v for k, v in vars(args).items() if "." in k and v is not None}
    return base.replace(**overrides)


def cmd_train(args: argparse.Namespace) -> int:
    from .core.run_folder import Run, run_path
    from .experiments.named_runs import continue_run, train_or_load
    config = config_from_args(args)
    set_threads(args.threads)
    if args.seeds:
        return train_seeds(args, config)
    if args.continue_from:
        if not args.name:
            raise ConfigError("--continue-from needs --name for the continued run")
        continue_run(Run(run_path(args.continue_from, args.root)), config, args.name, args.root)
    from .experiments.training import compile_stages
    compile_stages(args.compile)  # a bad stage list stops here, in one line
    run = train_or_load(config, name=args.name, root=args.root, device=args.device,
                        progress=not args.no_progress, keep_checkpoints=args.keep_checkpoints,
                        compile=args.compile, precision=args.precision)
    final = run.final()
    print(f"run {run.path}: 0-var held-out exact {final['exact']['0var_heldout']:.4f},"
          f" 2-var union exact {final['exact']['2var_union']:.4f}, {final['wall_time_s']:.0f} s on {final['device']}")
    return 0


def train_seeds(args: argparse.Namespace, config: RunConfig) -> int:
    """`train --seeds S1 S2 ...`: one run per seed (folders --name with {seed} filled in, default each config's
    hash), trained in this process in stacks of --stack runs (`stacked`); finished runs are left as they are."""
    from .core.run_folder import Run, run_path
    from .experiments.stacked import train_stacked
    if args.continue_from:
        raise ConfigError("--continue-from continues one run; it cannot be combined with --seeds")
    if args.precision != "fp32":
        raise ConfigError("--precision fp64 trains one run; it cannot be combined with --seeds (stacks are fp32)")
    if args.name and "{seed}" not in args.name:
        raise ConfigError(f"with --seeds, --name needs {{seed}} (e.g. --name seed{{seed}}), one folder per seed;"
                          f" got {args.name!r}")
    if args.stack < 1:
        raise ConfigError(f"--stack must be >= 1, got {args.stack}")
    configs = [config.replace(seed=seed) for seed in args.seeds]
    paths = [run_path(args.name.format(seed=seed) if args.name else c.hash(), args.root)
             for seed, c in zip(args.seeds, configs)]
    for lo in range(0, len(configs), args.stack):
        train_stacked(configs[lo: lo + args.stack], paths[lo: lo + args.stack], device=args.device,
                      progress=not args.no_progress, keep_checkpoints=args.keep_checkpoints, compile=args.compile)
    for path in paths:
        final = Run(path).final()
        print(f"run {path}: 0-var held-out exact {final['exact']['0var_heldout']:.4f}, 2-var union exact"
              f" {final['exact']['2var_union']:.4f}, {final['wall_time_s']:.0f} s on {final['device']}"
              f" (stacked {final.get('stacked', 1)})")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from .analysis.authors_format import load_any
    from .core.evaluation import evaluate
    set_threads(args.threads)
    config = RunConfig.from_json(args.config.read_text()) if args.config else None
    model = load_any(args.path, config)
    if args.device != "cpu":
        from .core.trainer import resolve_device
        model = model.to(resolve_device(args.device))
    result = evaluate(model)
    if args.json:
        print(json.dumps(result))
        return 0
    width = max(map(len, list(result["pools"]) + list(result["exact"])))
    print(f"{'pool':<{width}}  accuracy")
    for name, acc in result["pools"].items():
        print(f"{name:<{width}}  {acc:.4f}")
    print(f"{'exact set':<{width}}  accuracy")
    for name, acc in result["exact"].items():
        print(f"{name:<{width}}  {acc:.4f}")
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    print(config.to_json())
    print(f"hash {config.hash()}", file=sys.stderr)
    return 0


def cmd_split(args: argparse.Namespace) -> int:
    from .core.data import split_summary
    config = config_from_args(args)
    summary = split_summary(config.task)
    if args.json:
        print(json.dumps(summary))
        return 0
    t = config.task
    mix = summary["mix"]
    print(f"f = {t.train_fraction:g} (split_seed {t.split_seed}): {summary['train_pairs']} training pairs,"
          f" {summary['heldout_pairs']} held out (first {summary['heldout_first']}, sum of"
          f" {t.modulus}*n1 + n2 = {summary['heldout_sum']})")
    print(f"r = {t.two_var_rate:g} ({t.two_var_rule}): {summary['two_var_rows']} 2-var rows kept, covering"
          f" {summary['two_var_pairs_covered']} of {summary['train_pairs']} training pairs")
    print(f"mix: 0-var {mix['0var']:.1%}, 1-var {mix['1var']:.1%}, 2-var {mix['2var']:.1%}")
    return 0


def _step_argument(text: str, pair: bool):
    """One --steps value: a step, 'final', or (a pair quantity) FROM:TO."""
    if pair:
        a, b = text.split(":")
        return int(a), int(b)
    return text if text == "final" else int(text)


def cmd_series(args: argparse.Namespace) -> int:
    from .analysis.quantities import QUANTITIES
    from .core.run_folder import Run
    from .analysis.series import across, series
    if args.list:
        for name, q in QUANTITIES.items():
            columns = ", ".join(q.columns[:8]) + (f", … ({len(q.columns)} columns on the paper's task)"
                                                  if len(q.columns) > 8 else "")
            kind = "".join(f", {k}" for k, on in (("logged", q.logged), ("between two checkpoints", q.pair),
                                                  ("between two runs, --against", q.across)) if on)
            print(f"{name} (v{q.version}{kind}): {q.description}; {columns}")
        return 0
    if not args.run or not args.quantity:
        raise ConfigError("series needs a run folder and a quantity (or --list)")
    if args.quantity not in QUANTITIES:
        raise ConfigError(f"unknown quantity {args.quantity!r}; quantities are {', '.join(QUANTITIES)}")
    set_threads(args.threads)
    import torch
    q = QUANTITIES[args.quantity]
    try:
        steps = None if not args.steps else [_step_argument(s, q.pair) for s in args.steps]
    except ValueError:
        raise ConfigError(f"--steps of {q.name}: " + ("FROM:TO pairs of steps, e.g. 1:101" if q.pair
                                                      else "step numbers or 'final'")
                          + f", got {' '.join(args.steps)}") from None
    if q.across != (args.against is not None):
        raise ConfigError(f"{q.name} is read between two runs: name the other with --against RUN" if q.across
                          else f"--against is for a quantity read between two runs; {q.name} is one run's")
    with torch.set_grad_enabled(q.needs_grad):  # a context: a caller in this process keeps its own setting
        table = (across(Run(args.run), Run(args.against), q.name, steps) if q.across
                 else series(Run(args.run), args.quantity, steps))
    if args.csv:
        sys.stdout.write(table.to_csv())
    else:
        print(table.to_string(float_format=lambda v: f"{v:.4g}"))
    return 0


def cmd_rescue(args: argparse.Namespace) -> int:
    from .experiments.rescue import ARMS, rescue
    from .core.run_folder import Run, run_path
    if args.list:
        for arm, stages in ARMS.items():
            print(f"{arm}: " + "; then ".join(f"{steps:,} steps" + (f" with {changes}" if changes else "")
                                              + (f" after {edit}" if edit else "") for changes, steps, edit in stages))
        return 0
    if args.arm not in (*ARMS, "all"):
        raise ConfigError(f"unknown rescue arm {args.arm!r}; arms are {', '.join(ARMS)} (or all)")
    arms = list(ARMS) if args.arm == "all" else [args.arm]
    set_threads(args.threads)
    from .rules.study import current
    source = Run(run_path(args.source or current()["runs"]["rescue_source"], args.root))
    for arm in arms:
        stages = rescue(arm, source, root=args.rescue_root, train_missing=True, progress=not args.no_progress)
        last = stages[-1].final()["pools"]["1var_train"]
        print(f"{arm}: 1-var train {last:.3f} at step {stages[-1].config.train.steps:,} ({stages[-1].path})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m assignadd_core",
                                     description="Assign and Add: train, evaluate and sweep the paper's model.")
    sub = parser.add_subparsers(dest="command", required=True)

    train = sub.add_parser("train", help="train (or resume) a run; paper settings by default",
                           description="Train or resume a run. Killed runs resume from their last eval step.")
    train.add_argument("--name", help="run folder name (default: the config hash)")
    train.add_argument("--root", type=Path, default=None, help="folder holding runs (default: runs/)")
    train.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    train.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    train.add_argument("--keep-checkpoints", choices=("all", "none"), default="all",
                       help="weights at every eval step ('all', default) or only the final model")
    train.add_argument("--compile", default="auto", metavar="{auto,on,off,STAGES}",
                       help="torch.compile the training step: 'auto' (default) on a CPU at one thread, where it is"
                            " faster; or only some stages of the fused step, e.g. 'attention' or 'mlp,unembed'"
                            " (attention, mlp, unembed: the mode study's bisection); the run's config and hash are the"
                            " same either way")
    train.add_argument("--precision", choices=("fp32", "fp64"), default="fp32",
                       help="fp64: train in double precision, the exact-arithmetic reference (evaluated and saved"
                            " in fp32; same config and hash)")
    train.add_argument("--seeds", type=int, nargs="+", metavar="S",
                       help="train one run per seed (each with train.seed S; --name must then contain {seed}),"
                            " in stacks of --stack runs in this process")
    train.add_argument("--stack", type=int, default=1, metavar="K",
                       help="with --seeds: train K runs at a time, their weights stacked (default 1: one after"
                            " another; on this project's CPU a stack trains no faster per run, README Performance)")
    train.add_argument("--no-progress", action="store_true", help="no progress bar")
    train.add_argument("--continue-from", metavar="RUN",
                       help="continue this finished run (same settings, more --steps) into --name")
    add_config_flags(train)
    train.set_defaults(func=cmd_train)

    ev = sub.add_parser("eval", help="accuracy on the nine pools and the two exact sets",
                        description="PATH: a run directory, one of our .safetensors checkpoints, or a"
                                    " TransformerLens-format .pth state dict.")
    ev.add_argument("path", type=Path)
    ev.add_argument("--json", action="store_true", help='one JSON object {"pools": ..., "exact": ...}')
    ev.add_argument("--config", type=Path, help="config.json of the model (a .pth file is read with the paper"
                                                " config by default; our checkpoints carry their own)")
    ev.add_argument("--device", default="cpu")
    ev.add_argument("--threads", type=int, default=None)
    ev.set_defaults(func=cmd_eval)

    cfg = sub.add_parser("config", help="print the config JSON (with overrides) and its hash")
    add_config_flags(cfg)
    cfg.set_defaults(func=cmd_config)

    sp = sub.add_parser("split", help="what a config trains on: pairs held out, 2-var rows kept, query mix",
                        description="The train/held-out pairs and 2-var rows of a config (paper defaults).")
    sp.add_argument("--json", action="store_true",
                    help="one JSON object: train_pairs, heldout_pairs, heldout_sum, heldout_first, two_var_rows,"
                         " two_var_pairs_covered, mix")
    add_config_flags(sp)
    sp.set_defaults(func=cmd_split)

    se = sub.add_parser("series", help="a named quantity at a run's checkpoints (computed once, cached in series.csv)",
                        description="Print a quantity of a run at its checkpoints (default: every checkpoint and the"
                                    " final model; logged quantities: every metrics row), computing and caching what"
                                    " is not cached yet.")
    se.add_argument("run", nargs="?", type=Path, help="a run folder, e.g. runs/seed42")
    se.add_argument("quantity", nargs="?", help="a quantity name (see --list)")
    se.add_argument("--steps", nargs="+",
                    help="steps to read, or 'final'; FROM:TO pairs for a quantity read between two checkpoints")
    se.add_argument("--against", type=Path, default=None,
                    help="the other run folder, for a quantity read between two runs at the same steps")
    se.add_argument("--list", action="store_true", help="list the quantities and exit")
    se.add_argument("--csv", action="store_true", help="print CSV")
    se.add_argument("--threads", type=int, default=None)
    se.set_defaults(func=cmd_series)

    rs = sub.add_parser("rescue", help="train a stuck run on from its saved state under other settings",
                        description="Branches of a finished run (its resume/ state) trained on under the settings of"
                                    " a rescue arm (see --list); each branch is a run folder of its own.")
    rs.add_argument("arm", nargs="?", default="all", help="an arm (see --list) or all (default)")
    rs.add_argument("--source", default=None,
                    help="the run to branch from (default: the study profile's rescue source, seed43 for the paper)")
    rs.add_argument("--root", type=Path, default=None, help="folder holding the source run (default runs/)")
    rs.add_argument("--rescue-root", type=Path, default=None, help="folder for the branches (default runs/rescue)")
    rs.add_argument("--list", action="store_true", help="list the arms and exit")
    rs.add_argument("--threads", type=int, default=None)
    rs.add_argument("--no-progress", action="store_true")
    rs.set_defaults(func=cmd_rescue)

    mo = sub.add_parser("modes", help="one seed trained in several numerical modes (eager, compiled, fp64, single"
                                      " stages compiled): where they part, and why (chapter 4)")
    mo.add_argument("action", choices=("run", "measure", "status"))
    mo.add_argument("--seed", type=int, default=None, help="the seed (default 58)")
    mo.add_argument("--only", nargs="+", metavar="MODE", help="only these modes (run)")
    mo.add_argument("--root", type=Path, default=None, help="folder holding runs (default: runs/)")
    mo.add_argument("--no-progress", action="store_true")
    mo.set_defaults(func=cmd_modes)

    cw = sub.add_parser("c10-window", help="C10's premise window read at matched steps: the dense study's seeds"
                                           " trained again with checkpoints, then read (chapter 9)")
    cw.add_argument("action", choices=("run", "read"))
    cw.add_argument("--root", type=Path, default=None, help="folder holding runs (default: runs/)")
    cw.add_argument("--no-progress", action="store_true")
    cw.set_defaults(func=cmd_c10_window)

    cr = sub.add_parser("c10-route", help="R3, the lookup's route: C10's held, sham and twin runs of the cells that"
                                          " passed its checks trained again with checkpoints, then read (chapter 9)")
    cr.add_argument("action", choices=("run", "read", "status"))
    cr.add_argument("--part", type=int, default=1, help="train every OF-th run from this one (1-based)")
    cr.add_argument("--of", type=int, default=1, help="how many processes share the runs")
    cr.add_argument("--root", type=Path, default=None, help="folder holding runs (default: runs/)")
    cr.add_argument("--no-progress", action="store_true")
    cr.set_defaults(func=cmd_c10_route)

    ge = sub.add_parser("generality", help="the mechanism on other tasks and shapes: train the study's runs"
                                           " (mod 97, mod 113, 24 variables, 3 layers x 2 heads; seeds 42-44;"
                                           " studies/generality.yaml), or list them")
    ge.add_argument("action", choices=("run", "status"))
    ge.add_argument("--part", default="1/1", metavar="I/N",
                    help="run: train the I-th of N shares of the plan (two processes: 1/2 and 2/2; default 1/1)")
    ge.add_argument("--shapes", nargs="+", metavar="SHAPE", help="run: only these shapes (default: all four)")
    ge.add_argument("--steps", type=int, default=None,
                    help="run: train each run to this many steps, for a quick look (runs named <shape>_seed<seed>_s<steps>;"
                         " default: the study's steps in studies/generality.yaml)")
    ge.add_argument("--root", type=Path, default=None,
                    help="folder holding the study's runs (default runs/generality40k, the profile's folder)")
    ge.add_argument("--device", default="cpu", help="run: cpu or cuda (default cpu)")
    ge.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    ge.add_argument("--no-progress", action="store_true")
    ge.set_defaults(func=cmd_generality)

    ru = sub.add_parser("rules", help="the rule lock: each verdict rule's fingerprint against its registered one, and"
                                      " what its verdict reads that the fingerprint does not hold;"
                                      " `rules record` registers a change with what, why and the verdicts")
    ru.add_argument("action", nargs="?", choices=("status", "record"), default="status")
    ru.add_argument("claim", nargs="?", help="the claim whose rule changed (record)")
    for name in ("what", "why", "before", "after"):
        ru.add_argument(f"--{name}", default="", help=f"{name} (record): " + {
            "what": "what changed in the rule", "why": "why it changed", "before": "the verdict under the old rule",
            "after": "the verdict under the new one"}[name])
    ru.add_argument("--wording-only", action="store_true",
                    help="record: only the rule's wording or reporting changed, not what it decides")
    ru.set_defaults(func=cmd_rules)

    po = sub.add_parser("power", help="C9's power calculation from the r sweep's runs: the chance that C9's interval"
                                      " is narrow enough for 5, 10, 15 and 20 seeds, and the step budget"
                                      " (writes runs/sweeps/c9_power.json); `power r2`: the power of R2's tests"
                                      " with four replicates a cell, from the crossed design's eager and compiled"
                                      " runs (writes runs/sweeps/r2_power.json)")
    po.add_argument("which", nargs="?", choices=("c9", "r2"), default="c9", help="whose power (default c9)")
    po.add_argument("--sims", type=int, default=200, help="simulated data sets per seed count (default 200)")
    po.add_argument("--seed", type=int, default=0, help="the simulation's random seed (default 0)")
    po.add_argument("--out", type=Path, default=None,
                    help="where to write the JSON (default runs/sweeps/c9_power.json or r2_power.json)")
    po.set_defaults(func=cmd_power)

    from .experiments.sweep import register_cli  # the sweep command lives next to its code
    register_cli(sub)
    from .report.explorer import register_cli as register_explorer  # so does the explorer's
    register_explorer(sub)
    return parser


def cmd_generality(args) -> int:
    from .experiments import generality_runs
    root = generality_runs.ROOT if args.root is None else args.root
    if args.action == "run":
        try:
            part, of = (int(x) for x in args.part.split("/"))
        except ValueError:
            raise ConfigError(f"--part must look like 1/2, got {args.part!r}") from None
        generality_runs.part_of_plan(part, of)  # checks the part before any work
        set_threads(args.threads)
        steps = generality_runs.STEPS if args.steps is None else args.steps
        if steps < 1:
            raise ConfigError(f"--steps must be at least 1, got {steps}")
        trained = generality_runs.run_part(part, of, root, threads=args.threads, progress=not args.no_progress,
                                      shapes=args.shapes, steps=steps, device=args.device)
        print(f"trained {len(trained)} run(s): {', '.join(trained) or 'none (all finished)'}")
    for row in generality_runs.status(root):
        state = "finished" if row["finished"] else f"at step {row['last_step']:,}" if row["last_step"] else "not started"
        print(f"{row['run']:<24} {state}")
    return 0


def cmd_modes(args) -> int:
    from .experiments import mode_study
    seed = mode_study.study_plan().seed if args.seed is None else args.seed
    if args.action == "run":
        mode_study.run_modes(seed, args.only, args.root, progress=not args.no_progress)
    elif args.action == "measure":
        for name, path in mode_study.measure(seed, args.root, progress=not args.no_progress).items():
            print(f"{name}: {path}")
    table = mode_study.outcomes(seed, args.root)
    print(table.to_string(index=False) if len(table) else f"no finished mode of seed {seed} yet")
    return 0


def cmd_c10_window(args) -> int:
    import pandas as pd

    from .experiments import c10_window
    if args.action == "run":
        runs = c10_window.train_seeds(root=args.root, progress=not args.no_progress)
    else:
        runs = {seed: c10_window.Run(c10_window.study_root(args.root) / f"seed{seed}")
                for seed in (*c10_window.study_window().composing, *c10_window.study_window().stuck)}
        missing = [seed for seed, run in runs.items() if not run.final_path.is_file()]
        if missing:
            raise ConfigError(f"seeds {', '.join(map(str, missing))} are not trained yet: run `c10-window run` first")
    table = pd.concat([c10_window.read(runs, window=window) for window in c10_window.WINDOWS], ignore_index=True)
    print(f"{c10_window.write_table(table, args.root)}")
    print(c10_window.per_seed(table).round(3).to_string(index=False))
    return 0


def cmd_c10_route(args) -> int:
    from .core.run_folder import Run
    from .experiments import c10_route
    if args.of < 1 or not 1 <= args.part <= args.of:
        raise ConfigError(f"--part must be between 1 and --of ({args.of}), got {args.part}")
    if args.action == "status":
        for item in c10_route.plan():
            run = Run(c10_route.study_root(args.root) / item.name)
            print(f"{item.name:<22} {'done' if run.final_path.is_file() else 'not finished'}")
        return 0
    if args.action == "run":
        c10_route.run_part(args.part, args.of, args.root, progress=not args.no_progress)
        return 0
    checkpoints, ablations = c10_route.read(args.root, progress=not args.no_progress)
    if checkpoints.empty:
        raise ConfigError("no re-run has finished yet: run `c10-route run` first")
    for path in c10_route.write_tables(checkpoints, ablations, args.root):
        print(path)
    return 0


def cmd_power(args) -> int:
    import json

    import pandas as pd

    from .analysis import power
    from .experiments.sweep.grid import R_ADDED_VALUES, R_GRID
    from .analysis.sweep_records import finished
    from .experiments.sweep.store import sweeps_dir
    if args.sims < 10:
        raise ConfigError(f"--sims must be at least 10, got {args.sims}")
    if args.which == "r2":
        return _power_r2(args)
    results = sweeps_dir() / "r_sweep.csv"
    if not results.is_file():
        raise ConfigError(f"no results of the r sweep at {results}: the power calculation reads its runs")
    table = pd.read_csv(results)
    done = finished(table)

    def metrics_of(key):
        path = sweeps_dir() / "r_sweep" / f"{key}.csv"
        return pd.read_csv(path) if path.is_file() else None
    out = power.c9_report(done, metrics_of, R_GRID[:R_ADDED_VALUES], R_GRID[R_ADDED_VALUES:], sims=args.sims,
                       seed=args.seed)
    path = args.out or sweeps_dir() / "c9_power.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    for row in out["power"]:
        print(f"{row['seeds']:>3} seeds: interval no wider than {out['width']:g} in {row['p_narrow']:.0%}"
              f" (95 % interval {row['low']:.0%}-{row['high']:.0%}; median width {row['median_width']:.3f})")
    b = out["budget"]
    print(f"chosen: {out['chosen_seeds']} seeds; composed runs at r >= 0.2 whose union succeeds:"
          f" {b['succeeded']} of {b['composed_runs_from_r_0.2']}; written {path}")
    return 0


def _power_r2(args) -> int:
    import json

    from .analysis import composition, odds, odds_power
    from .experiments.sweep import SWEEPS, results_frame
    from .experiments.sweep.store import sweeps_dir
    design = SWEEPS["composition_odds"]
    records = results_frame(design)
    if records.empty:
        raise ConfigError(f"no results of {design.name} under {sweeps_dir()}: R2's power is simulated from its runs")
    # the model reads each run's cell, mode and outcome only: no run's metrics (its phase steps) are needed
    cells = odds.complete_cells(composition.study_table(records, {}))
    out = odds_power.r2_report(cells, sims=args.sims, seed=args.seed)
    path = args.out or sweeps_dir() / "r2_power.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    for row in out["power"]:
        print(f"{row['scenario']:>18}, {row['test']:>4} test: rejects in {row['rejected']} of {row['sims']}"
              f" ({row['rate']:.0%}, 95 % interval {row['low']:.0%}-{row['high']:.0%})")
    print(f"from {out['runs']} runs of {design.name}; written {path}")
    return 0


def cmd_rules(args) -> int:
    from .report import rule_lock
    if args.action == "record":
        if not args.claim:
            raise ConfigError("rules record needs the claim, e.g. `rules record C9 --what ... --why ... --before ..."
                              " --after ...`")
        try:
            entry = rule_lock.record(args.claim, args.what, args.why, args.before, args.after,
                                     decision_changed=not args.wording_only)
        except ValueError as err:
            raise ConfigError(str(err)) from None
        print(f"{args.claim}: registered {entry['fingerprint']} on {entry['date']}")
        return 0
    from .report.rule_reach import missing
    lock, changed = rule_lock.read_lock(), rule_lock.unrecorded()
    holes = {claim: missing(claim) for claim in rule_lock.PARTS}
    for claim in rule_lock.PARTS:
        last = lock.get(claim, {}).get("history", [{}])[-1]
        state = "CHANGED, not recorded" if claim in changed else f"as registered on {last.get('date')}"
        print(f"{claim:4} {rule_lock.fingerprint(claim)}  {state}")
        for part, path in holes[claim].items():
            print(f"     reads {part} ({path}), not in its parts (rule_lock.PARTS)")
    return 1 if changed or any(holes.values()) else 0


def main(argv: list[str] | None = None) -> int:
    from .core.checkpoint import CheckpointError
    from .core.locks import BusyError
    from .core.trainer import DeviceError
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ConfigError, CheckpointError, BusyError, DeviceError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
