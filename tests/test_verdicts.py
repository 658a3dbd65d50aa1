"""Every verdict rule produces each of its outcomes on hand-made numbers, and the boundaries sit where the
rule text says."""
from __future__ import annotations

import pytest

from assignadd_core import verdicts as v
from assignadd_core.verdicts import NOT_REPRODUCED, NOT_YET_RUN, PARTLY, REPRODUCED


def phases(addition=500, jump=3600, refinement=9800, first=True):
    return {"addition": addition, "addition_first": first, "jump": jump, "refinement": refinement}


def test_rules_are_stated_for_every_claim():
    assert set(v.RULES) == {f"C{i}" for i in range(1, 11)} | {"R1"}
    assert all(len(text) > 40 for text in v.RULES.values())


def test_verdict_refuses_an_unknown_word():
    with pytest.raises(ValueError):
        v.Verdict("mostly", "")


@pytest.mark.parametrize("runs, expected", [
    ({"a": phases(), "b": phases(jump=3400, refinement=8000)}, REPRODUCED),
    ({"a": phases(), "b": phases(jump=None, refinement=None)}, REPRODUCED),  # b never composed: not C1's question
    ({"a": phases(), "b": phases(refinement=None)}, PARTLY),
    ({"a": phases(first=False), "b": phases(refinement=None)}, NOT_REPRODUCED),
    ({"a": phases(jump=9900)}, NOT_REPRODUCED),  # jump after the final rise
    ({"a": phases(addition=4000, jump=3600)}, NOT_REPRODUCED),  # addition after the jump
    ({"a": phases(jump=None, refinement=None)}, NOT_REPRODUCED),  # nothing composed
])
def test_c1(runs, expected):
    result = v.c1_phases(runs)
    assert result.verdict == expected
    assert f"{len(v.composed(runs))} of {len(runs)} runs" in result.text


@pytest.mark.parametrize("full, swap, expected", [
    ({"a": 0.99, "b": 0.985}, {"a": 0.97, "b": 0.95}, REPRODUCED),
    ({"a": 0.99, "b": 0.985}, {"a": 0.97, "b": 0.94}, PARTLY),  # commutativity could carry it
    ({"a": 0.99, "b": 0.983}, {"a": 0.99, "b": 0.99}, PARTLY),  # one run a hair under the paper minus a point
    ({"a": 0.5, "b": 0.89}, {"a": 0.99, "b": 0.99}, NOT_REPRODUCED),
])
def test_c2(full, swap, expected):
    assert v.c2_heldout(full, swap).verdict == expected


def test_c3_reads_only_runs_that_composed():
    pools = {"a": {"p1": 0.99, "p2": 0.96, "p3": 0.95}, "b": {"p1": 0.2, "p2": 0.1, "p3": 0.3},
             "c": {"p1": 0.99, "p2": 0.94, "p3": 0.99}}
    assert v.c3_positions(pools, ["a"]).verdict == REPRODUCED
    assert v.c3_positions(pools, ["a", "c"]).verdict == PARTLY
    assert v.c3_positions(pools, ["c"]).verdict == NOT_REPRODUCED
    assert v.c3_positions(pools, []).verdict == NOT_REPRODUCED


@pytest.mark.parametrize("args, expected", [
    ((1.0, 0.97, 0.3, 0.95), REPRODUCED),
    ((1.0, 0.97, 0.6, 0.95), PARTLY),  # the copy is not what lookup needs
    ((0.5, 0.97, 0.3, 0.95), PARTLY),
    ((1.0, 0.97, 0.3, 0.85), PARTLY),  # the ablation broke addition too: not isolated
    ((0.5, 0.5, 0.6, 0.95), NOT_REPRODUCED),
])
def test_c4(args, expected):
    assert v.c4_previous_token(*args).verdict == expected


@pytest.mark.parametrize("args, expected", [
    ((0.95, 0.92, 0.85, 0.81), REPRODUCED),
    ((0.95, 0.92, 0.85, 0.79), PARTLY),
    ((0.5, 0.92, 0.85, 0.85), PARTLY),
    ((0.5, 0.5, 0.5, 0.5), NOT_REPRODUCED),
])
def test_c5(args, expected):
    assert v.c5_identity(*args).verdict == expected


@pytest.mark.parametrize("matched, ceiling, baselines, patch, expected", [
    (0.97, 0.99, {"same sum": 0.3, "one operand": 0.6, "unrelated": 0.1}, 0.99, REPRODUCED),
    (0.97, 0.99, {"same sum": 0.3, "one operand": 0.8, "unrelated": 0.1}, 0.99, NOT_REPRODUCED),  # gap 0.17
    (0.97, 0.99, {"same sum": 0.3, "one operand": 0.6, "unrelated": 0.1}, 0.90, PARTLY),
    (0.92, 0.99, {"same sum": 0.3, "one operand": 0.6, "unrelated": 0.1}, 0.99, PARTLY),  # below the ceiling
])
def test_c6(matched, ceiling, baselines, patch, expected):
    result = v.c6_shared_addition(matched, ceiling, baselines, patch)
    assert result.verdict == expected
    assert max(baselines, key=baselines.get) in result.text  # names the hardest baseline


@pytest.mark.parametrize("args, expected", [
    ((5, 0.6, 0.93, 0.4), REPRODUCED),
    ((5, 0.5, 0.93, 0.4), PARTLY),  # exactly half is not "more than half"
    ((8, 0.9, 0.95, 0.4), NOT_REPRODUCED),  # too many key frequencies
    ((0, 0.9, 0.95, 0.4), NOT_REPRODUCED),
    ((5, 0.9, 0.40, 0.4), NOT_REPRODUCED),  # no better than the null
])
def test_c7(args, expected):
    assert v.c7_fourier(*args).verdict == expected


@pytest.mark.parametrize("n, grad, update, expected", [
    (10, (0.1, 0.5), (0.02, 0.3), REPRODUCED),
    (10, (0.1, 0.5), (-0.02, 0.3), PARTLY),
    (10, (-0.98, 1.12), (-0.5, 0.3), NOT_REPRODUCED),  # an interval that straddles the isotropic value
    (2, (0.1, 0.5), (0.1, 0.5), NOT_YET_RUN),
])
def test_c10(n, grad, update, expected):
    assert v.c10_gradient(n, grad, update).verdict == expected


# ---------------------------------------------------------------------------- every boundary sits where the rule says
def test_c2_boundaries_are_inclusive():
    floor = v.PAPER_HELDOUT - v.HELDOUT_MARGIN
    assert v.c2_heldout({"a": floor}, {"a": v.SWAP_HELDOUT_LEVEL}).verdict == REPRODUCED
    assert v.c2_heldout({"a": 0.9}, {"a": 0.0}).verdict == PARTLY  # exactly 0.9 on the full set
    assert v.c2_heldout({"a": 0.8999}, {"a": 0.0}).verdict == NOT_REPRODUCED


def test_c3_boundary_is_inclusive():
    assert v.c3_positions({"a": {"p": v.POOL_LEVEL}}, ["a"]).verdict == REPRODUCED
    assert v.c3_positions({"a": {"p": v.POOL_LEVEL - 1e-9}}, ["a"]).verdict == NOT_REPRODUCED


def test_c4_boundaries():
    ok = (v.PREV_TOKEN_LEVEL, v.COPY_LEVEL, v.LOOKUP_BROKEN - 1e-9, v.ADDITION_KEPT)
    assert v.c4_previous_token(*ok).verdict == REPRODUCED
    assert v.c4_previous_token(ok[0], ok[1], v.LOOKUP_BROKEN, ok[3]).verdict == PARTLY  # not below 0.5
    assert v.c4_previous_token(ok[0] - 1e-9, ok[1], ok[2], ok[3]).verdict == PARTLY
    assert v.c4_previous_token(ok[0], ok[1] - 1e-9, ok[2], ok[3]).verdict == PARTLY
    assert v.c4_previous_token(ok[0], ok[1], ok[2], ok[3] - 1e-9).verdict == PARTLY


def test_c5_boundaries():
    ok = (v.IDENTITY_LEVEL, v.READ_LEVEL, v.RELABEL_LEVEL, v.RELABEL_LEVEL)
    assert v.c5_identity(*ok).verdict == REPRODUCED
    assert v.c5_identity(ok[0] - 1e-9, *ok[1:]).verdict == PARTLY
    assert v.c5_identity(ok[0], ok[1] - 1e-9, *ok[2:]).verdict == PARTLY
    assert v.c5_identity(*ok[:2], ok[2] - 1e-9, ok[3]).verdict == PARTLY


def test_c6_boundaries():
    base = {"same sum": 0.1, "one shared operand": 0.5}
    matched = 0.5 + v.BASELINE_GAP
    assert v.c6_shared_addition(0.95, 0.99, base, v.PATCH_KEPT).verdict == REPRODUCED
    assert v.c6_shared_addition(0.95, 0.95 + v.CEILING_GAP, base, 0.99).verdict == REPRODUCED  # at the ceiling gap
    assert v.c6_shared_addition(0.95, 0.95 + v.CEILING_GAP + 1e-6, base, 0.99).verdict == PARTLY
    assert v.c6_shared_addition(v.MATCHED_LEVEL - 1e-9, 0.9, {"x": 0.1}, 0.99).verdict == PARTLY
    assert v.c6_shared_addition(0.95, 0.99, base, v.PATCH_KEPT - 1e-9).verdict == PARTLY
    assert v.c6_shared_addition(matched + 1e-9, matched, base, 0.99).verdict == PARTLY  # gap just over 0.2, matched < 0.9
    assert v.c6_shared_addition(matched - 1e-9, matched, base, 0.99).verdict == NOT_REPRODUCED


def test_c7_boundaries():
    assert v.c7_fourier(1, 0.51, 0.5, 0.4).verdict == REPRODUCED
    assert v.c7_fourier(v.MAX_KEY_FREQUENCIES, 0.51, 0.5, 0.4).verdict == REPRODUCED
    assert v.c7_fourier(v.MAX_KEY_FREQUENCIES + 1, 0.51, 0.5, 0.4).verdict == NOT_REPRODUCED
    assert v.c7_fourier(3, 0.51, 0.4, 0.4).verdict == NOT_REPRODUCED  # equal to the null is not above it


def test_c10_boundaries():
    assert v.c10_gradient(v.MIN_WINDOW, (0.01, 1), (0.01, 1)).verdict == REPRODUCED
    assert v.c10_gradient(v.MIN_WINDOW - 1, (0.01, 1), (0.01, 1)).verdict == NOT_YET_RUN
    assert v.c10_gradient(5, (0.0, 1), (0.0, 1)).verdict == NOT_REPRODUCED  # touching 0 is not above it


def test_texts_carry_the_deciding_numbers():
    assert "0.106" in v.c4_previous_token(1.0, 1.0, 0.106, 1.0).text
    assert "98.4%" in v.c5_identity(1.0, 1.0, 1.0, 0.984).text
    assert "7.2%" in v.c7_fourier(8, 0.072, 0.742, 0.1).text and "8 key" in v.c7_fourier(8, 0.072, 0.742, 0.1).text
    assert "[+0.087, +0.455]" in v.c10_gradient(5, (0.087, 0.455), (0.25, 0.84)).text


def test_verdict_error_names_the_word_and_the_choices():
    with pytest.raises(ValueError, match=r"verdict must be one of .*'reproduced'.*got 'mostly'"):
        v.Verdict("mostly", "")


def test_three_phases_allow_addition_at_the_jump_but_not_the_jump_at_the_final_rise():
    # "addition ≤ jump < final rise"
    assert v.shows_three_phases(phases(addition=3600, jump=3600, refinement=9800))
    assert not v.shows_three_phases(phases(addition=500, jump=9800, refinement=9800))
    assert not v.shows_three_phases(phases(refinement=None))


def test_c1_text_lists_the_jump_and_final_rise_steps():
    text = v.c1_phases({"a": phases(), "b": phases(jump=12000, refinement=None),
                        "c": phases(jump=None, refinement=None)}).text
    assert text == ("2 of 3 runs formed variable assignment; 1 of them show all three phases"
                    " (jump at 3,600, 12,000; final rise at 9,800, –)")
    none = v.c1_phases({"c": phases(jump=None, refinement=None)}).text
    assert none.endswith("(jump at –; final rise at –)")


def test_c2_text_gives_both_accuracies_per_run():
    for full, swap in [({"a": 0.99, "b": 0.985}, {"a": 0.97, "b": 0.95}),  # reproduced
                       ({"a": 0.99, "b": 0.985}, {"a": 0.97, "b": 0.5}),  # partly
                       ({"a": 0.5, "b": 0.25}, {"a": 0.0, "b": 0.125})]:  # not reproduced
        text = v.c2_heldout(full, swap).text
        f, s = (", ".join(f"{n} {x[n]:.1%}" for n in ("a", "b")) for x in (full, swap))
        assert text == f"0-var held-out exact {f}; on pairs whose swap is also held out {s}"
    assert "a 99.0%, b 98.5%" in v.c2_heldout({"a": 0.99, "b": 0.985}, {"a": 0.97, "b": 0.95}).text


def test_c3_text_gives_the_lowest_pool_of_each_composed_run():
    pools = {"a": {"p1": 0.99, "p2": 0.951}, "c": {"p1": 0.5, "p2": 0.99}}
    assert v.c3_positions(pools, ["a"]).text.endswith(": a 0.951 (1 of 1 ≥ 0.95)")
    assert v.c3_positions(pools, ["a", "c"]).text.endswith(": a 0.951, c 0.500 (1 of 2 ≥ 0.95)")
    assert v.c3_positions(pools, ["c"]).text.endswith(": c 0.500 (0 of 1 ≥ 0.95)")
    assert v.c3_positions(pools, []).text.endswith(": none (0 of 0 ≥ 0.95)")


def test_c6_boundaries_at_the_gap_and_the_matched_level():
    # 0.65 - 0.45 is exactly 0.2 in floating point: a gap of exactly BASELINE_GAP separates
    assert 0.65 - 0.45 == v.BASELINE_GAP
    assert v.c6_shared_addition(0.65, 0.65, {"x": 0.45}, 0.99).verdict == PARTLY  # matched < 0.9
    assert v.c6_shared_addition(v.MATCHED_LEVEL, v.MATCHED_LEVEL, {"x": 0.5}, 0.99).verdict == REPRODUCED


@pytest.mark.parametrize("rule, args", [
    (v.c4_previous_token, (1.0, 0.97, 0.3, 0.95)), (v.c4_previous_token, (0.5, 0.97, 0.6, 0.95)),
    (v.c4_previous_token, (0.5, 0.5, 0.6, 0.95)),
    (v.c5_identity, (0.95, 0.92, 0.85, 0.81)), (v.c5_identity, (0.5, 0.92, 0.85, 0.85)),
    (v.c5_identity, (0.5, 0.5, 0.5, 0.5)),
    (v.c7_fourier, (5, 0.6, 0.93, 0.4)), (v.c7_fourier, (5, 0.5, 0.93, 0.4)), (v.c7_fourier, (0, 0.9, 0.95, 0.4)),
    (v.c10_gradient, (10, (0.1, 0.5), (0.02, 0.3))), (v.c10_gradient, (10, (0.1, 0.5), (-0.02, 0.3))),
    (v.c10_gradient, (10, (-0.1, 0.5), (-0.02, 0.3))), (v.c10_gradient, (2, (0.1, 0.5), (0.1, 0.5))),
    (v.c2_heldout, ({"a": 0.99}, {"a": 0.99})), (v.c2_heldout, ({"a": 0.95}, {"a": 0.5})),
    (v.c2_heldout, ({"a": 0.5}, {"a": 0.5})),
    (v.c3_positions, ({"a": {"p": 0.99}}, ["a"])), (v.c3_positions, ({"a": {"p": 0.5}}, ["a"])),
])
def test_every_outcome_has_a_text(rule, args):
    text = rule(*args).text
    assert isinstance(text, str) and len(text) > 20


def test_c10_texts_give_both_intervals_and_the_window():
    text = v.c10_gradient(5, (0.087, 0.455), (0.25, 0.84)).text
    assert text.startswith("5 checkpoints;") and "AdamW update [+0.250, +0.840]" in text
    assert v.c10_gradient(2, (0.1, 0.5), (0.1, 0.5)).text == "2 checkpoints in the window (need 3)"
