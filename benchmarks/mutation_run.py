"""Run `mutmut run` with the [mutmut] settings of setup.cfg, optionally narrowed (`make mutate` calls this).

    python benchmarks/mutation_run.py [--only GLOB ...] [--tests "PYTEST ARGS"] [--max-children N]

--only replaces setup.cfg's `only_mutate` (e.g. assignadd_core/verdicts.py) and --tests its test selection
(e.g. "tests/test_verdicts.py"), so one module can be checked against its own tests in seconds per mutant;
setup.cfg's marker expression (`-m "not paper"`) is kept unless --tests has its own `-m`, so a narrowed run
leaves out the paper-sized tests as the full one does.
mutmut 3.8.1 reads its settings only from setup.cfg/pyproject.toml, so the narrowing edits the settings object
it loaded before the command starts. A different test selection than the previous run makes mutmut re-test
every mutant of the selected modules (its results depend on the tests that ran).
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="GLOB", help="files to mutate (replaces only_mutate)")
    parser.add_argument("--tests", metavar="ARGS", help="pytest test selection, one shell-quoted string")
    parser.add_argument("--max-children", type=int, default=1, help="parallel mutant workers (default 1)")
    args = parser.parse_args(argv)

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
