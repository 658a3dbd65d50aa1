"""The generality study (chapter "Beyond the paper's task"): its plan, its driver's shares, G2's role search and the
rules G1-G5 on inputs that give each outcome, a null that must fail them among them."""
from __future__ import annotations

import pytest
import torch

from assignadd_core import generality, verdicts
from assignadd_core.analysis import generality as reading
from assignadd_core.config import ConfigError
from assignadd_core.measures import all_measures, measurement_batch
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


def test_the_role_search_picks_the_best_copy_head_then_the_best_lookup_heads(tiny_config):
    """G2's rule on a random 3-layer, 2-head model: the copy (block, head) with the highest measure 2 among blocks
    0-1, then the block after it and the set of its heads whose union has the highest measure 6, read there."""
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
    assert found["m6_single_head"] == max(m6.values())  # the reading before 2026-12-04
    blocks = sorted({b for b, _ in lookups[found["copy"]]})
    patterns, batch = reading.eq_patterns(model, blocks), measurement_batch(config.task)
    unions = {(b, s): reading.union_eq_to_values(patterns[b], s, batch.lhs_src, batch.rhs_src)
              for b in blocks for s in reading.head_sets(range(2))}
    assert found["lookup"][0] > found["copy"][0] and found["m6_l2_eq_to_values"] == max(unions.values())
    assert found["m6_l2_eq_to_values"] >= found["m6_single_head"]
    # one head read alone is measure 6 itself
    for (b, h), value in m6.items():
        assert unions[(b, (h,))] == value


def test_the_paper_shape_keeps_its_declared_roles(tiny_config):
    torch.manual_seed(6)
    model = AssignAddTransformer(tiny_config).eval()
    found = reading.found_roles(model)
    assert (found["copy"], found["lookup"], found["lookup_heads"], found["searched"]) == ((0, 0), (1, 0), (0,), False)
    # the paper shape reads exactly as before the lookup was read over heads: every measure of all_measures
    before = all_measures(model)
    assert {name: found[name] for name in before} == pytest.approx(before, nan_ok=True)
    assert found["m6_single_head"] == before["m6_l2_eq_to_values"]


def split_lookup(model, block: int):
    """Make `block`'s attention from `=` on the measures' batch a lookup split across its two heads: head 0 on the
    lhs value's position only, head 1 on the rhs value's (a permanent hook on its pattern)."""
    batch = measurement_batch(model.config.task)

    def fetch_one_operand_per_head(pattern, hook):
        if pattern.shape[0] != len(batch.tokens):
            return pattern
        pattern = pattern.clone()
        pattern[:, :, -1] = 0.0
        rows = torch.arange(pattern.shape[0])
        pattern[rows, 0, -1, batch.lhs_src] = 1.0
        pattern[rows, 1, -1, batch.rhs_src] = 1.0
        return pattern
    model.add_hook(f"blocks.{block}.attn.hook_pattern", fetch_one_operand_per_head, is_permanent=True)
    return model


def test_a_lookup_split_across_two_heads_reads_as_one_lookup(tiny_config):
    """G2 over heads: neither head alone has the two operands in its top 2 (measure 6 near 0), their union does (1);
    the search finds the block with both heads, and measure 6 no longer fails G2."""
    config = tiny_config.replace(**{"model.n_layers": 3, "model.n_heads": 2, "model.mlp_layers": (2,),
                                    "model.d_model": 16})
    torch.manual_seed(5)
    model = split_lookup(AssignAddTransformer(config).eval(), block=2)
    found = reading.found_roles(model)
    assert found["searched"] and found["lookup"][0] == 2 and found["lookup_heads"] == (0, 1)
    assert found["m6_l2_eq_to_values"] == 1.0 and found["m6_single_head"] < 0.5
    g2 = verdicts.g2_seed(1.0, 1.0, found["m6_l2_eq_to_values"])
    assert g2.verdict == verdicts.REPRODUCED and "measure 6" not in g2.text.partition("fails")[2]
    assert verdicts.g2_seed(1.0, 1.0, found["m6_single_head"]).verdict == verdicts.PARTLY  # the one-head reading


def test_the_union_of_heads_reads_one_head_as_measure_6_and_a_null_fails():
    lhs, rhs = torch.tensor([3, 5, 7]), torch.tensor([9, 10, 11])
    patterns = torch.full((3, 2, 16), 0.01)
    patterns[torch.arange(3), 0, lhs] = 0.5
    patterns[torch.arange(3), 0, rhs] = 0.4  # head 0 alone is a lookup
    assert reading.union_eq_to_values(patterns, (0,), lhs, rhs) == 1.0
    uniform = torch.full((3, 2, 16), 1 / 16)
    uniform[:, :, 0] = 0.5  # both heads on position 0: no union finds the operands
    assert reading.union_eq_to_values(uniform, (0, 1), lhs, rhs) == 0.0
    assert reading.head_sets(range(2)) == [(0,), (1,), (0, 1)]
    assert reading.mask_heads(reading.heads_mask((0, 1))) == (0, 1) and reading.mask_heads(1.0) == (0,)


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
    assert verdicts.g4_rate(1, 3, 15, 32).text.endswith("paper shape's: not shown")
    assert verdicts.g4_rate(0, 12, 28, 32).text.endswith("paper shape's: shown")
    # with 3 seeds one shape cannot reject, even at 0 of 3 against 21 of 32
    assert verdicts.g4_rate(0, 3, 21, 32).text.endswith("not shown")


def test_g4_pooled_can_reject_a_clear_difference_and_does_not_on_equal_rates():
    clear = verdicts.g4_pooled({"mod97": (0, 3), "mod113": (0, 3), "vars24": (1, 3), "layers3_heads2": (0, 3)}, 21, 32)
    assert clear.verdict == verdicts.FINDING and "paper shape's: shown; per shape" in clear.text
    assert clear.text.count("a difference: not shown") == 4  # no single shape can reject alone
    equal = verdicts.g4_pooled({"mod97": (2, 3), "mod113": (2, 3), "vars24": (2, 3), "layers3_heads2": (2, 3)}, 21, 32)
    assert "paper shape's: not shown" in equal.text and "pooled: 8 of 12" in equal.text
    assert verdicts.g4_pooled({}, 21, 32).verdict == verdicts.NOT_YET_RUN


def test_shown_words_never_say_not_for_a_non_rejection():
    assert verdicts.shown_words(True, "an effect") == "an effect: shown"
    assert verdicts.shown_words(False, "an effect") == "an effect: not shown"


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


def test_a_sweep_not_run_here_counts_nothing_and_pairs_nothing(tmp_path):
    assert generality.composition_count(tmp_path / "absent.csv") == (0, 0)
    present = tmp_path / "vars24.csv"
    present.write_text("key,status,seed,1var_train\na,done,1,0.99\n")
    assert generality.composition_count(present) == (1, 1)
    assert generality.coverage_pairs(present, tmp_path / "absent.csv") == []  # its partner not here: no pairs, no traceback
