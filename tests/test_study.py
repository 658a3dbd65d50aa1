"""Study profiles: the paper's numbers, grids, seeds and steps and the generality study's shapes live in
studies/*.yaml, and the code's names read them from there (no second copy)."""
from __future__ import annotations

import pytest

from assignadd_core.experiments import generality_runs
from assignadd_core.rules import paper
from assignadd_core.rules import study
from assignadd_core.experiments.sweep import grid


def test_the_code_reads_the_paper_profile():
    p = study.current()
    assert paper.HELDOUT_EXACT.value == p["paper_numbers"]["heldout_exact"]["value"]
    assert paper.JUMP_STEPS.value == tuple(p["paper_numbers"]["jump_steps"]["value"])
    assert grid.PAPER_SWEEP_STEPS == p["paper_numbers"]["sweep_steps"]["value"] == 30_000
    assert grid.DECIDE_STEPS == p["composition"]["decide_steps"]
    assert len(grid.F_GRID) == p["sweeps"]["f_grid"]["n"] and grid.F_GRID[0] == p["sweeps"]["f_grid"]["low"]
    assert grid.SWEEPS["composition_seeds"].seeds == tuple(range(42, 74))
    assert grid.SWEEPS["f_sweep"].seeds == (*p["sweeps"]["seeds"], *p["sweeps"]["added_seeds"])


def test_the_generality_plan_reads_its_profile():
    g = study.profile("generality")
    assert generality_runs.STEPS == g["steps"] and generality_runs.SEEDS == tuple(g["seeds"])
    assert set(generality_runs.SHAPES) == set(g["shapes"])
    assert generality_runs.shape_config("layers3_heads2", 42).model.mlp_layers == (2,)
    assert grid.SWEEPS["r_sweep_vars24"].base["task.n_vars"] == g["coverage_sweep"]["n_vars"]


def test_a_missing_profile_is_named_with_the_ones_there_are():
    with pytest.raises(FileNotFoundError, match=r"no study profile .*nope.yaml .*profiles in .*: generality, paper"):
        study.profile("nope")


def test_a_follow_up_study_is_a_profile_named_in_the_environment(tmp_path):
    """A copy of the paper's profile with its own overrides, main run and steps, named by ASSIGNADD_STUDY: the sweeps
    start from its overrides, the chapters read its runs, the paper's module its numbers (a fresh process: this one
    has read the paper's)."""
    import os
    import subprocess
    import sys

    import yaml
    follow_up = yaml.safe_load((study.STUDIES / "paper.yaml").read_text())
    follow_up["overrides"] = {"task.modulus": 97}
    follow_up["runs"]["main"] = {"name": "mod97_seed7", "seed": 7}
    follow_up["paper_numbers"]["main_steps"]["value"] = 5000
    path = tmp_path / "mod97.yaml"
    path.write_text(yaml.safe_dump(follow_up))
    probe = ("from assignadd_core.experiments.sweep import SWEEPS; from assignadd_core.report.chapter import STUDY_PARAMETERS as S;"
             " from assignadd_core.rules.paper import MAIN_STEPS;"
             " print(SWEEPS['r_sweep'].base['task.modulus'], SWEEPS['r_sweep_vars24'].base['task.n_vars'],"
             " S['run'](), S['seed'](), MAIN_STEPS.value)")
    env = {**os.environ, study.STUDY_ENV: str(path)}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["97", "24", "mod97_seed7", "7", "5000"]
    assert "task.modulus" not in grid.SWEEPS["r_sweep"].base  # this process runs the paper's study
    env[study.STUDY_ENV] = "nope"
    failed = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert failed.returncode != 0 and "no study profile" in failed.stderr


def test_naming_another_study_after_the_first_read_is_refused_in_one_line(monkeypatch):
    study.current()  # this process runs the paper's study (its modules are imported above)
    monkeypatch.setenv(study.STUDY_ENV, "generality")
    with pytest.raises(study.StudyChanged, match="already read the study 'paper'") as error:
        study.current()
    assert "\n" not in str(error.value)
    monkeypatch.delenv(study.STUDY_ENV)
    assert study.current() is study.profile("paper")


def test_importing_the_package_reads_no_study_and_the_study_is_named_after_import(tmp_path):
    """Every module imports without reading a profile (but `sweep.designs` and `sweep.grid`, the study's sweeps, which
    the others import when a sweep is used); the first use reads the study named then (set here after every import),
    and the rules, sweeps and plans all take that study's values."""
    import os
    import subprocess
    import sys

    import yaml
    follow_up = yaml.safe_load((study.STUDIES / "paper.yaml").read_text())
    follow_up["overrides"] = {"task.modulus": 97}
    follow_up["paper_numbers"]["r_threshold"]["value"] = 0.3
    follow_up["c10"]["onset"]["window"] = 1234
    follow_up["runs"]["mode_seed"] = 77
    path = tmp_path / "mod97.yaml"
    path.write_text(yaml.safe_dump(follow_up))
    probe = f"""
import importlib, os, pkgutil, sys
import assignadd_core
from assignadd_core.rules import study
names = [m.name for m in pkgutil.walk_packages(assignadd_core.__path__, "assignadd_core.")
         if not m.name.endswith(("__main__", "sweep.designs", "sweep.grid"))]
for name in names:
    importlib.import_module(name)
assert study._FIRST_READ == [], study._FIRST_READ
os.environ[study.STUDY_ENV] = {str(path)!r}
from assignadd_core.rules import verdicts
from assignadd_core.experiments import mode_study
from assignadd_core.experiments.sweep import SWEEPS
from assignadd_core.rules import paper
print(len(names), paper.R_THRESHOLD.value, verdicts.c10_design().C10_WINDOW, "1,234 steps" in verdicts.RULES["C10"],
      SWEEPS["r_sweep"].base["task.modulus"], mode_study.study_root().name)
"""
    env = {key: value for key, value in os.environ.items() if key != study.STUDY_ENV}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    modules, width, window, in_words, modulus, root = out.stdout.split()
    assert int(modules) > 60 and (width, window, in_words, modulus, root) == ("0.3", "1234", "True", "97", "seed77")


def test_no_module_conjures_a_value_and_a_study_mapping_is_read_once_per_study():
    """Plain constants: no module of the package defines a module-level `__getattr__`; a mapping the study sets
    (`study.StudyMapping`, e.g. `verdicts.RULES`, `sweep.SWEEPS`) is built once, when first read."""
    import ast
    from assignadd_core.rules import verdicts
    getattrs = [str(path) for path in study.STUDIES.parent.joinpath("assignadd_core").rglob("*.py")
                if any(isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
                       for node in ast.parse(path.read_text()).body)]
    assert getattrs == []
    built = []
    words = study.StudyMapping(lambda: built.append(1) or {"a": 1})
    assert built == [] and dict(words) == {"a": 1} and words["a"] == 1 and len(words) == 1 and built == [1]
    assert verdicts.RULES["C9"] == verdicts._rules()["C9"] and set(verdicts.RULES) == set(verdicts._rules())
    with pytest.raises(AttributeError, match="has no attribute 'NOT_A_SWEEP'"):
        grid.NOT_A_SWEEP  # noqa: B018
