"""The generality study (chapter "Beyond the paper's task"): its plan, its driver's shares, G2's role search and the
rules G1-G5 on inputs that give each outcome, a null that must fail them among them."""
from __future__ import annotations

import pytest
import torch

from assignadd_core import generality, verdicts
from assignadd_core.analysis import generality as reading
from assignadd_core.config import ConfigError
from assignadd_core.measures import all_measures
from assignadd_core.model import AssignAddTransformer

pytestmark = pytest.mark.usefixtures("single_thread")


def test_the_plan_has_every_shape_on_three_seeds_and_the_shares_cover_it_once():
    names = [item.name for item in generality.plan()]
    assert len(names) == len(set(names)) == len(generality.SHAPES) * 3 >= 12
    for of in (1, 2, 3):
        shares = [item.name for part in range(1, of + 1) for item in generality.part_of_plan(part, of)]
        assert sorted(shares) == sorted(names)
    slow = {item.name for item in generality.plan() if not item.config.model.paper_shape}
    assert slow == {f"layers3_heads2_seed{s}" for s in generality.SEEDS}
    assert all(len(slow & {item.name for item in generality.part_of_plan(p, 2)}) >= 1 for p in (1, 2))
    with pytest.raises(ConfigError, match="--part"):
        generality.part_of_plan(3, 2)
    config = generality.shape_config("mod113", 43)
    assert (config.task.modulus, config.train.seed, config.train.steps) == (113, 43, generality.STEPS)
    with pytest.raises(ConfigError, match="unknown shape"):
        generality.shape_config("mod7", 42)


def test_the_role_search_picks_the_best_copy_head_then_the_best_lookup_head(tiny_config):
    """G2's rule on a random 3-layer, 2-head model: the copy (block, head) with the highest measure 2 among blocks
    0-1, then the lookup after it with the highest measure 6, the measures read there."""
    config = tiny_config.replace(**{"model.n_layers": 3, "model.n_heads": 2, "model.mlp_layers": (2,),
                                    "model.d_model": 16})
    torch.manual_seed(5)
    model = AssignAddTransformer(config).eval()
    found = reading.found_roles(model)
    copies, lookups = reading.candidates(config)
    assert found["searched"] and copies == [(0, 0), (0, 1), (1, 0), (1, 1)]
    m2 = {c: all_measures(reading.with_roles(model, c, lookups[c][0]), False)["m2_l1_prev_token_qk"] for c in copies}
    assert m2[found["copy"]] == max(m2.values())
    m6 = {lk: all_measures(reading.with_roles(model, found["copy"], lk))["m6_l2_eq_to_values"]
          for lk in lookups[found["copy"]]}
    assert found["lookup"][0] > found["copy"][0] and m6[found["lookup"]] == max(m6.values())
    assert found["m6_l2_eq_to_values"] == m6[found["lookup"]]


def test_the_paper_shape_keeps_its_declared_roles(tiny_config):
    torch.manual_seed(6)
    found = reading.found_roles(AssignAddTransformer(tiny_config).eval())
    assert (found["copy"], found["lookup"], found["searched"]) == ((0, 0), (1, 0), False)


def test_g2_passes_a_formed_circuit_and_fails_a_null():
    assert verdicts.g2_seed(1.0, 0.95, 0.97).verdict == verdicts.REPRODUCED
    partly = verdicts.g2_seed(1.0, 0.5, 0.97)
    assert partly.verdict == verdicts.PARTLY and "measure 3 0.50" in partly.text
    assert verdicts.g2_seed(0.1, 0.08, 0.02).verdict == verdicts.NOT_REPRODUCED  # a random model's measures


def test_g1_reads_c1s_rule_on_each_seed():
    three = {"addition": 500, "addition_first": True, "composition": 2700, "jump": 2600, "refinement": 6900}
    none = {"addition": 500, "addition_first": True, "composition": None, "jump": None, "refinement": None}
    assert verdicts.g1_phases({"seed 42": three, "seed 44": three}).verdict == verdicts.REPRODUCED
    assert verdicts.g1_phases({"seed 42": three, "seed 44": none}).verdict == verdicts.PARTLY
    assert verdicts.g1_phases({"seed 42": none}).verdict == verdicts.NOT_REPRODUCED


def test_g4_tells_a_different_rate_from_chance():
    assert "no difference shown" in verdicts.g4_rate(1, 3, 15, 32).text
    assert "the rates differ" in verdicts.g4_rate(0, 12, 28, 32).text


def test_g5_follows_coverage_only_on_a_clear_gain_and_a_null_fails():
    assert verdicts.g5_coverage([0.05, 0.07, 0.04, 0.08, 0.06, 0.05]).verdict == verdicts.REPRODUCED
    assert verdicts.g5_coverage([0.0, -0.01, 0.01, 0.004, -0.005, 0.0]).verdict == verdicts.NOT_REPRODUCED
    assert verdicts.g5_coverage([0.2, -0.2, 0.1, -0.1]).verdict == verdicts.INCONCLUSIVE
    assert verdicts.g5_coverage([0.1, 0.1]).verdict == verdicts.INCONCLUSIVE


def test_pairs_match_seed_and_r_and_flag_runs_that_did_not_compose():
    row = lambda seed, r, acc, one=1.0: {"seed": seed, "two_var_rate": r, "exact_2var_union": acc, "1var_train": one}
    pairs = reading.paired_differences([row(42, 0.01, 0.9), row(43, 0.061579, 0.8, 0.5), row(44, 0.3, 0.9)],
                                       [row(42, 0.01, 0.85), row(43, 0.061579, 0.9)])
    assert [(p["seed"], p["both_composed"]) for p in pairs] == [(42, True), (43, False)]
    assert pairs[0]["difference"] == pytest.approx(0.05)
