"""Study profiles: the paper's numbers, grids, seeds and steps and the generality study's shapes live in
studies/*.yaml, and the code's names read them from there (no second copy)."""
from __future__ import annotations

import pytest

from assignadd_core import generality, paper, study
from assignadd_core.sweep import grid


def test_the_code_reads_the_paper_profile():
    p = study.paper()
    assert paper.HELDOUT_EXACT.value == p["paper_numbers"]["heldout_exact"]["value"]
    assert paper.JUMP_STEPS.value == tuple(p["paper_numbers"]["jump_steps"]["value"])
    assert grid.PAPER_SWEEP_STEPS == p["paper_numbers"]["sweep_steps"]["value"] == 30_000
    assert grid.DECIDE_STEPS == p["composition"]["decide_steps"]
    assert len(grid.F_GRID) == p["sweeps"]["f_grid"]["n"] and grid.F_GRID[0] == p["sweeps"]["f_grid"]["low"]
    assert grid.SWEEPS["composition_seeds"].seeds == tuple(range(42, 74))
    assert grid.SWEEPS["f_sweep"].seeds == (*p["sweeps"]["seeds"], *p["sweeps"]["added_seeds"])


def test_the_generality_plan_reads_its_profile():
    g = study.profile("generality")
    assert generality.STEPS == g["steps"] and generality.SEEDS == tuple(g["seeds"])
    assert set(generality.SHAPES) == set(g["shapes"])
    assert generality.shape_config("layers3_heads2", 42).model.mlp_layers == (2,)
    assert grid.SWEEPS["r_sweep_vars24"].base["task.n_vars"] == g["coverage_sweep"]["n_vars"]


def test_a_missing_profile_is_named_with_the_ones_there_are():
    with pytest.raises(FileNotFoundError, match=r"no study profile nope.yaml .*profiles: generality, paper"):
        study.profile("nope")
