"""What each verdict reads, found by following its calls: the check that the rule lock (`rule_lock.PARTS`) has no
holes.

A claim's verdict is computed by a few entry points (`READS`: its verdict functions and the functions its chapter,
`per_seed` or `generality` calls to turn measured numbers into their inputs). From those and from the claim's own
parts, `reached(claim)` follows every name a function's source refers to (its body, its default arguments, the names
it imports inside) to the package's functions, classes and module-level constants; `missing(claim)` lists what it
reaches that the claim's parts do not hold. `tests/test_rule_lock.py` fails on any, and `python -m assignadd_core
rules` prints them.

The boundary: a rule is the reading of measured numbers, not their making. Not followed (`BOUNDARY`): training
(the network, the data and the trainer: what a run is), the measurement of a model (`quantities` and what they call:
each quantity has a version, and a changed measurement is recomputed under its new version, never read as the old
one), the records that hold the numbers (run folders, the series cache, the sweeps' plans and results files, the
study profiles that name the runs) and display (plots, names). A rule's own reading of those numbers (which runs it
keeps, which column it reads, its statistics, its levels and the paper's values it compares with) is inside, with
the text its verdict carries. Names that cannot move a verdict inside the followed modules are listed in `OUTSIDE`.
A function that dispatches on the claim (`if claim == "C4":`) is followed along the claim's own branch; one that
reads several claims at once (`generality_runs.shape_readings`: G1-G3) is locked with all it reads, for each of them.
"""
from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
import textwrap
import types

from ..experiments import c10_route, per_seed
from ..rules import stats, verdicts
from ..experiments import generality_runs as shapes
from ..analysis import composition, generality, odds, phases, reliability, steering, thresholds
from .rule_lock import PARTS

PACKAGE = __package__.rpartition(".")[0]  # the package (this module sits in its report/)

# Modules past the boundary (see above): not followed, their names not required.
BOUNDARY = {
    "training": ("core.model", "core.data", "core.trainer", "experiments.training", "core.config"),
    "measurement": ("analysis.quantities", "measure.measures", "measure.roles", "core.evaluation", "analysis.route"),
    "records": ("analysis.series", "core.run_folder", "experiments.named_runs", "core.checkpoint", "rules.study", "experiments.sweep"),
    "display": ("report.names", "report.plots", "report.present"),
}
# Single names inside the followed modules that cannot move a verdict, and why.
OUTSIDE = {
    "verdicts.Verdict": "the result's container (a verdict word and its text); it checks the word, decides nothing",
    "verdicts.VERDICTS": "the list of verdict words the container checks",
    "verdicts.RULES": "a rule's words are in its fingerprint already (`rule_lock.components`)",
    **{f"verdicts.{word}": "a verdict word, the same for every rule" for word in
       ("REPRODUCED", "PARTLY", "NOT_REPRODUCED", "NOT_YET_RUN", "FINDING", "INCONCLUSIVE")},
}

# Where each verdict is computed: its verdict functions and the functions that compute their inputs from measured
# numbers (the chapters' calls; `per_seed` for C2-C7, `generality_runs.shape_readings` for G1-G3).
FINAL_MODEL = (per_seed.composed_runs, per_seed.seed_claims, per_seed.numbers, per_seed.rule, verdicts.over_seeds)
READS = {
    "C1": (verdicts.composed, verdicts.c1_seed, verdicts.over_seeds, phases.detect_phases),  # chapter 2
    "C2": (verdicts.c2_seed, verdicts.over_seeds),  # chapter 2, from final.json and the swap control
    "C3": (verdicts.composed, verdicts.c3_seed, verdicts.over_seeds),  # chapter 2, from final.json
    "C4": FINAL_MODEL + (verdicts.c4_previous_token,),  # chapter 6
    "C5": FINAL_MODEL + (verdicts.c5_identity,),  # chapter 6
    "C6": FINAL_MODEL + (verdicts.c6_shared_addition,),  # chapter 7
    "C7": FINAL_MODEL + (verdicts.c7_fourier,),  # chapter 8
    "C8": (thresholds.seed_crossings, verdicts.c8_threshold),  # chapter 10
    "C9": (thresholds.seed_crossings, thresholds.logistic_threshold, thresholds.c9_runs, verdicts.c9_threshold,
           verdicts.median_bracket),  # chapter 10 (the post-hoc pool's median bracket beside it)
    # the rule in force reads the onset sweeps' cells; the chapter records, until those runs are in, the rule of
    # 2026-12-03 from the steered runs of c10_remove and c10_add
    "C10": (steering.onset_cells, steering.hold_cells, steering.clamp_cells, verdicts.c10_onset,
            steering.arms_table, steering.removal_inputs, steering.addition_inputs, verdicts.c10_causal),
    "R1": (reliability.phase_steps, reliability.step_statistics, reliability.composition_rate,
           verdicts.r1_rate),  # chapter 3: the detector's steps per seed, their statistics and the rates
    "R2": (verdicts.r2_replicated, odds.replicated_cells, odds.permutation_tests, odds.fit_crossed, odds.interval,
           odds.shares_table, odds.prior_sensitivity, odds.complete_cells, odds.mode_comparison, odds.flip_table,
           odds.flips_by_cell, odds.paired_cells, verdicts.odds_answer, verdicts.basin_or_chaos,
           composition.study_table, composition.outcome_changes, composition.factorial_by_initialization,
           composition.factorial_answer, composition.feature_table, composition.predictor_on_new_seeds,
           stats.rate),  # chapter 4: every number of R2's record
    "R3": (c10_route.held_inputs, steering.hold_cells, verdicts.r3_route),  # chapter 9: the route's tables, the
    # double hold's cells
    "G1": (shapes.shape_readings, verdicts.g1_phases),  # chapter 14
    "G2": (shapes.shape_readings, verdicts.g2_seed),
    "G3": (shapes.shape_readings, verdicts.c7_fourier),
    "G4": (shapes.fresh_outcomes, verdicts.g4_paired, shapes.composition_count, verdicts.g4_rate,
           verdicts.g4_pooled),
    "G5": (shapes.coverage_pairs, verdicts.g5_coverage),
}


def _outside_module(module: str) -> bool:
    """Whether a module (its full name) is past the boundary: not followed, its names not required."""
    if not module.startswith(PACKAGE + "."):
        return True
    short = module[len(PACKAGE) + 1:]
    return any(short == m or short.startswith(m + ".") for group in BOUNDARY.values() for m in group)


def short_name(module: str, name: str) -> str:
    """'verdicts.LEARNED_LEVEL': the module's last part and the name, as `rule_lock.components` writes them."""
    return f"{module.rsplit('.', 1)[-1]}.{name}"


def _imports(module: types.ModuleType) -> dict[str, tuple[str, str]]:
    """{name: (module it was imported from, its name there)} of a module's top-level `from ... import` lines."""
    cache = _IMPORTS.get(module.__name__)
    if cache is None:
        cache = _IMPORTS[module.__name__] = {}
        package = module.__name__ if hasattr(module, "__path__") else module.__name__.rpartition(".")[0]
        for node in ast.parse(inspect.getsource(module)).body:
            if isinstance(node, ast.ImportFrom):
                source = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
                for alias in node.names:
                    cache[alias.asname or alias.name] = (source, alias.name)
    return cache


_IMPORTS: dict[str, dict] = {}


def owner(module: str, name: str) -> tuple[str, str]:
    """The module that defines a constant (following `from ... import` lines), and its name there."""
    seen = set()
    while (module, name) not in seen and module in sys.modules and module.startswith(PACKAGE):
        seen.add((module, name))
        source = _imports(sys.modules[module]).get(name)
        home = sys.modules.get(source[0]) if source else None
        if home is None or isinstance(getattr(home, source[1], None), types.ModuleType):
            break
        module, name = source
    return module, name


def _part(obj):
    """A package function or class, unwrapped; None for anything else."""
    obj = inspect.unwrap(obj) if callable(obj) else obj
    if (inspect.isfunction(obj) or inspect.isclass(obj)) and getattr(obj, "__module__", "").startswith(PACKAGE + "."):
        return obj
    return None


class _Names(ast.NodeVisitor):
    """The names a function's source reads (annotations left out: they are never evaluated), the dotted chains
    read from them, the names bound inside it, and the names it imports inside ({name: (module, name)}). A branch
    on the claim (`if claim == "C4":`, as `per_seed.rule` dispatches) is read only for `claim`."""

    def __init__(self, package: str, claim: str | None = None):
        self.package, self.claim = package, claim
        self.read, self.chains, self.bound, self.imported = set(), set(), set(), {}

    def visit_If(self, node):
        test = node.test
        if (self.claim is not None and isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
                and test.left.id == "claim" and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
                and isinstance(test.comparators[0], ast.Constant)):
            for statement in (node.body if test.comparators[0].value == self.claim else node.orelse):
                self.visit(statement)
        else:
            self.generic_visit(node)

    def visit_arg(self, node):  # a parameter: bound; its annotation is not read
        self.bound.add(node.arg)

    def visit_FunctionDef(self, node):  # its return annotation is not read
        self.bound.add(node.name)
        for child in (node.args, *node.body, *node.decorator_list):
            self.visit(child)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_arguments(self, node):  # parameters are bound; default arguments are read
        for arg in (*node.posonlyargs, *node.args, *node.kwonlyargs, node.vararg, node.kwarg):
            if arg is not None:
                self.bound.add(arg.arg)
        for default in (*node.defaults, *node.kw_defaults):
            if default is not None:
                self.visit(default)

    def visit_AnnAssign(self, node):
        self.visit(node.target)
        if node.value is not None:
            self.visit(node.value)

    def visit_ClassDef(self, node):
        self.bound.add(node.name)
        for child in (*node.bases, *node.body):
            self.visit(child)

    def visit_Name(self, node):
        (self.read if isinstance(node.ctx, ast.Load) else self.bound).add(node.id)

    def visit_Attribute(self, node):
        chain, base = [node.attr], node.value
        while isinstance(base, ast.Attribute):
            chain.insert(0, base.attr)
            base = base.value
        if isinstance(base, ast.Name) and isinstance(node.ctx, ast.Load):
            self.chains.add((base.id, *chain))
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        source = importlib.util.resolve_name("." * node.level + (node.module or ""), self.package)
        for alias in node.names:
            self.imported[alias.asname or alias.name] = (source, alias.name)

    def visit_Import(self, node):
        for alias in node.names:
            self.imported[alias.asname or alias.name.split(".")[0]] = (alias.name.split(".")[0], None)

    def visit_ExceptHandler(self, node):
        if node.name:
            self.bound.add(node.name)
        self.generic_visit(node)


def references(part, claim: str | None = None) -> tuple[set, set]:
    """(package functions and classes, constants as (owner module, name)) that a function's or class's source
    refers to (for `claim`: along its branch where the function dispatches on the claim)."""
    module = sys.modules[part.__module__]
    package = module.__name__.rpartition(".")[0]
    names = _Names(package, claim)
    names.visit(ast.parse(textwrap.dedent(inspect.getsource(part))))
    local = names.bound - set(names.imported)

    def resolve(name):  # (object, the module it is read from, its name there) of a name the source reads, or None
        if name in names.imported:
            source, attr = names.imported[name]
            home = sys.modules.get(source)
            if home is None or attr is None:  # `import numpy as np` and the like
                return None
            if hasattr(home, attr):
                return getattr(home, attr), source, attr
            sub = sys.modules.get(f"{source}.{attr}")  # `from . import verdicts`
            return (sub, source, attr) if sub else None
        if name in local or name not in vars(module):
            return None
        return vars(module)[name], module.__name__, name

    functions, constants = set(), set()

    def classify(obj, home, name):
        if isinstance(obj, types.ModuleType) or home is None or name is None:
            return
        found = _part(obj)
        if found is not None:
            functions.add(found)
        elif not callable(obj) and home.startswith(PACKAGE):
            constants.add(owner(home, name))

    for name in names.read:
        found = resolve(name)
        if found is not None:
            classify(*found)
    for base, *attrs in names.chains:
        found = resolve(base)
        if found is None:
            continue
        obj = found[0]
        for attr in attrs:  # module.module.name: the name in the last module
            if not isinstance(obj, types.ModuleType) or not hasattr(obj, attr):
                break
            home, obj = obj.__name__, getattr(obj, attr)
            classify(obj, home, attr)
    return functions, constants


def _key(item) -> str:
    return short_name(*item) if isinstance(item, tuple) else short_name(item.__module__, item.__name__)


def _module_of(item) -> str:
    return item[0] if isinstance(item, tuple) else item.__module__


def reached(claim: str) -> dict[str, str]:
    """{part: the path that reaches it} of everything a claim's verdict reads, inside the boundary: from its entry
    points (`READS`) and its parts' functions, every function, class and constant their sources refer to."""
    start = [*READS[claim], *PARTS[claim][0]]
    paths = {_key(f): _key(f) for f in start}
    todo, seen = list(dict.fromkeys(start)), set()
    while todo:
        part = todo.pop()
        if part in seen:
            continue
        seen.add(part)
        functions, constants = references(part, claim)
        for item in (*functions, *constants):
            key = _key(item)
            if _outside_module(_module_of(item)) or key in OUTSIDE:
                continue
            paths.setdefault(key, f"{paths[_key(part)]} -> {key}")
            if not isinstance(item, tuple) and item not in seen:
                todo.append(item)
    return dict(sorted(paths.items()))


def covered(claim: str) -> set[str]:
    """The parts a claim's fingerprint holds, as `module.name` (constants under the module that defines them)."""
    functions, *levels = PARTS[claim]
    names = {_key(f) for f in functions}
    names |= {short_name(*owner(module.__name__, name)) for module, group in levels for name in group}
    return names


def missing(claim: str) -> dict[str, str]:
    """{part: the path that reaches it} of what a claim's verdict reads and its fingerprint does not hold."""
    held = covered(claim)
    return {key: path for key, path in reached(claim).items() if key not in held}
