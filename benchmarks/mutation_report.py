"""Mutation score per module from mutmut's results in mutants/ (`make mutate` prints it after the run).

    python benchmarks/mutation_report.py [GLOB ...] [--survivors]

Reads mutmut's per-file result files (mutants/<module>.py.meta, JSON with the exit code of each mutant's test
run) and prints, per module, how many mutants the tests killed, how many survived, timed out, had no test
running their function, or are not checked yet, and the share killed (killed / all mutants of the module).
GLOBs limit the table to matching modules (e.g. assignadd_core/rules/verdicts.py); --survivors lists the surviving
mutants' names (`mutmut show NAME` prints the change), --diff prints each one's change instead. `mutmut show`
reads the mutated copy in mutants/, which a later run narrowed to another module replaces by the plain file;
--diff mutates the module's current source again (mutmut numbers its mutants the same way each time), so it
works after any run, as long as the module has not changed since its results were made.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COLUMNS = ("killed", "survived", "timeout", "no tests", "other", "not checked")


def status_of(exit_code: int | None) -> str:
    """mutmut's reading of a test run's exit code (mutmut.stats.status_by_exit_code, 3.8.1), folded to COLUMNS."""
    if exit_code is None:
        return "not checked"
    if exit_code in (1, 3):  # tests failed / pytest internal error: the mutant is caught
        return "killed"
    if exit_code == 0:
        return "survived"
    if exit_code in (36, 24, -24, 152, 255):  # over the time limit (SIGXCPU)
        return "timeout"
    if exit_code in (5, 33):  # no test ran the mutated function
        return "no tests"
    return "other"  # skipped, suspicious, interrupted, crashed, caught by a type check


def load_results(mutants: Path) -> dict[str, dict[str, int | None]]:
    """Module path (as in the repo) -> {mutant name: exit code}."""
    results = {}
    for meta in sorted(mutants.rglob("*.py.meta")):
        module = meta.relative_to(mutants).as_posix()[: -len(".meta")]
        results[module] = json.loads(meta.read_text())["exit_code_by_key"]
    return results


def table(results: dict[str, dict[str, int | None]]) -> str:
    header = ("module",) + COLUMNS + ("total", "% killed")
    rows, sums = [], Counter()
    for module, codes in results.items():
        counts = Counter(status_of(code) for code in codes.values())
        sums.update(counts)
        sums["total"] += len(codes)
        rows.append((module, *(counts[c] for c in COLUMNS), len(codes), percent(counts["killed"], len(codes))))
    if len(rows) > 1:
        rows.append(("all", *(sums[c] for c in COLUMNS), sums["total"], percent(sums["killed"], sums["total"])))
    cells = [header] + [tuple(str(x) for x in row) for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
             for row in cells]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}" if whole else "–"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", metavar="GLOB", help="only modules matching these (default: all)")
    parser.add_argument("--survivors", action="store_true", help="list the surviving mutants")
    parser.add_argument("--diff", action="store_true", help="with --survivors: print each survivor's change")
    parser.add_argument("--mutants", type=Path, default=REPO / "mutants", help="mutmut's folder (default mutants/)")
    args = parser.parse_args(argv)

    results = load_results(args.mutants)
    if args.modules:
        results = {m: r for m, r in results.items() if any(fnmatch.fnmatch(m, g) for g in args.modules)}
    if not results:
        print(f"no mutmut results under {args.mutants} (run `make mutate` first)", file=sys.stderr)
        return 1
    print(table(results))
    if args.survivors:
        survivors = [name for codes in results.values() for name, code in codes.items() if status_of(code) == "survived"]
        print(f"\nsurvived ({len(survivors)}):" + "".join(f"\n  {name}" for name in survivors))
        if args.diff:
            for module, codes in results.items():
                print(diffs(module, [n for n, code in codes.items() if status_of(code) == "survived"]), end="")
    return 0


def diffs(module: str, names: list[str]) -> str:
    """The change each named mutant of `module` makes, from a fresh mutation of the module's source."""
    if not names:
        return ""
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.mutation.file_mutation import mutate_file_contents

    mutated = mutate_file_contents(module, (REPO / module).read_text())
    known = set(mutated.mutant_names)
    out = []
    for name in names:
        out.append(f"\n{name}")
        if name.rpartition(".")[-1] not in known:
            out.append("  (not among the mutants of the current source: the module changed since this result)")
            continue
        diff = get_diff_for_mutant(name, source=mutated.code, path=module).splitlines()[2:]  # no file header
        out.extend(f"  {line}" for line in diff if line[:1] in "+-")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
