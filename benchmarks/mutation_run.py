"""Run mutmut over the core, each module against its own tests (`make mutate` calls this).

    python benchmarks/mutation_run.py [--max-children N]                       # every module of PLAN, in turn
    python benchmarks/mutation_run.py --only GLOB ... [--tests "PYTEST ARGS"]  # one narrowed mutmut run

Without --only, each module of PLAN is mutated and checked against the test files written for it, one mutmut
run per module: a mutant's tests then take seconds, where the whole fast suite (setup.cfg's selection) took a
minute or more, and the full run fits in well under an hour on 2 cores. --only replaces setup.cfg's
`only_mutate` and --tests its test selection; setup.cfg's marker expression (`-m "not paper"`) is kept unless
--tests has its own `-m`, so a narrowed run leaves out the paper-sized tests as the full one does.
mutmut 3.8.1 reads its settings only from setup.cfg/pyproject.toml, so the narrowing edits the settings object
it loaded before the command starts. A different test selection than the previous run makes mutmut re-test
every mutant of the selected modules (its results depend on the tests that ran).
"""
from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# module -> the tests that check it (a test that only passes a module's output along is not listed)
PLAN = {
    "assignadd_core/core/data.py": "tests/test_data.py tests/test_pools.py tests/test_data_golden.py",
    "assignadd_core/experiments/fast_data.py": "tests/test_data_golden.py tests/test_data.py",
    "assignadd_core/core/model.py": "tests/test_model.py tests/test_bf16.py",
    "assignadd_core/core/trainer.py": "tests/test_trainer.py tests/test_trainer_details.py tests/test_bf16.py tests/test_continue.py",
    "assignadd_core/core/evaluation.py": "tests/test_evaluation.py",
    "assignadd_core/measure/measures.py": "tests/test_measures.py",
    "assignadd_core/rules/verdicts.py": "tests/test_verdicts.py",
    "assignadd_core/report/claims.py": "tests/test_claims_records.py",
    "assignadd_core/core/config.py": ("tests/test_config.py tests/test_compiled.py tests/test_architecture.py"
                                      " tests/test_plugins.py tests/test_perturb.py"),
    "assignadd_core/analysis/series.py": "tests/test_series.py",
    "assignadd_core/experiments/per_seed.py": "tests/test_per_seed.py",
    "assignadd_core/experiments/rescue.py": "tests/test_rescue.py",
    "assignadd_core/report/front_page.py": "tests/test_front_page.py",
    "assignadd_core/report/present.py": "tests/test_present.py",
    **{f"assignadd_core/analysis/{name}.py": f"tests/test_{name}.py" for name in (
        "addition", "circuits", "composition", "controls", "fourier", "generalization", "interventions",
        "phases", "reliability", "theory", "thresholds")},
}
# Not here: analysis/diagnostics. mutmut 3.8.1 leaves decorated functions unmutated, and every function there is
# @torch.no_grad(), so it has no mutant (mutmut then stops with an error).


def main(argv: list[str] | None = None) -> int | None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="GLOB", help="files to mutate (replaces only_mutate)")
    parser.add_argument("--tests", metavar="ARGS", help="pytest test selection, one shell-quoted string")
    parser.add_argument("--max-children", type=int, default=1, help="parallel mutant workers (default 1)")
    args = parser.parse_args(argv)
    if args.tests and not args.only:
        parser.error("--tests needs --only (without it every module of PLAN runs against its own tests)")
    if not args.only:
        return run_plan(args.max_children)
    run_mutmut(args)


def run_plan(max_children: int) -> int:
    """One mutmut run per module of PLAN, each in its own process (mutmut keeps global state); prints the times."""
    failed, start = [], time.perf_counter()
    for module, tests in PLAN.items():
        tic = time.perf_counter()
        done = subprocess.run([sys.executable, __file__, "--only", module, "--tests", tests,
                               "--max-children", str(max_children)])
        print(f"{module}: {(time.perf_counter() - tic) / 60:.1f} min" + (f" (exit {done.returncode})" if done.returncode else ""),
              flush=True)
        if done.returncode:
            failed.append(module)
    print(f"all {len(PLAN)} modules: {(time.perf_counter() - start) / 60:.1f} min with {max_children} worker(s)")
    if failed:
        print("mutmut failed for: " + ", ".join(failed), file=sys.stderr)
    return 1 if failed else 0


def run_mutmut(args: argparse.Namespace) -> None:
    # mutmut forks each mutant's test run from a process that has already run the tests; a thread pool that torch
    # (OpenMP) or numpy started there leaves its lock held in the fork, and the child hangs at its first parallel
    # operation until the time limit (the fourier mutants "timed out" so). One thread each, set before torch is
    # imported, keeps the forks safe (and each mutant's tests on one core).
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[name] = "1"
    os.chdir(REPO)  # mutmut reads setup.cfg and writes mutants/ in the working directory
    from mutmut.configuration import config
    from mutmut.mutation.trampoline_templates import GENERATED_MARKER

    cfg = config()
    if args.only:
        cfg.only_mutate = list(args.only)
    if args.tests:
        selection = shlex.split(args.tests)
        if "-m" not in selection:  # keep setup.cfg's marker expression (no `paper` test) unless --tests gives one
            configured = list(cfg.pytest_add_cli_args_test_selection)
            if "-m" in configured:
                selection += configured[configured.index("-m"): configured.index("-m") + 2]
        cfg.pytest_add_cli_args_test_selection = selection

    # A file outside an earlier narrowed run was copied into mutants/ unmutated and newer than its source, which
    # mutmut takes for "already mutated": it would run no mutant there. Remove such copies so they are generated
    # again (mutmut keeps the cached results of functions whose code did not change).
    for source in sorted(Path(p) for p in cfg.source_paths):
        for path in sorted(source.rglob("*.py")):
            copy = Path("mutants") / path
            if not (cfg.should_mutate(str(path)) and copy.exists()):
                continue
            # a mutated copy without its results file (removed to have the module retested) is likewise skipped
            if GENERATED_MARKER not in copy.read_text() or not copy.with_name(copy.name + ".meta").exists():
                copy.unlink()

    # mutmut 3.8.1 updates its record of which tests reach which function only for tests it has not seen, and then
    # drops the earlier tests' entries: after a test file gained tests, the mutants of a module were run against the
    # new tests alone (73 of model.py's 530 "survived" that the full test file kills). One stats pass over the
    # selected tests costs about what the tests take once, so it is always redone.
    Path("mutants/mutmut-stats.json").unlink(missing_ok=True)
    from mutmut.__main__ import cli
    cli(["run", "--max-children", str(args.max_children)], prog_name="mutmut")


if __name__ == "__main__":
    sys.exit(main())
