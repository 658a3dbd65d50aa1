"""Every verdict rule produces each of its outcomes on hand-made numbers, and the boundaries sit where the
rule text says."""
from __future__ import annotations

import pytest

from assignadd_core.rules import paper
from assignadd_core.rules import verdicts as v
from assignadd_core.rules.verdicts import INCONCLUSIVE, NOT_REPRODUCED, NOT_YET_RUN, PARTLY, REPRODUCED


def phases(addition=500, jump=3600, refinement=9800, first=True):
    return {"addition": addition, "addition_first": first, "composition": 3700, "jump": jump,
            "refinement": refinement}


def test_rules_are_stated_for_every_claim():
    assert set(v.RULES) == {f"C{i}" for i in range(1, 11)} | {"R1", "R2", "R3"} | {f"G{i}" for i in range(1, 6)}
    assert all(len(text) > 40 for text in v.RULES.values())
    assert set(v.RULE_CHANGES) <= set(v.RULES)
    for changes in v.RULE_CHANGES.values():
        assert all(len(date) in (7, 10) and date.startswith("2026-") and len(why) > 40 for date, why in changes)


def test_one_list_of_verdict_words():
    from assignadd_core.report import claims
    assert claims.VERDICTS is v.VERDICTS and v.FINDING in v.VERDICTS


def test_verdict_refuses_an_unknown_word():
    with pytest.raises(ValueError):
        v.Verdict("mostly", "")


def test_composed_is_one_level_inclusive():
    assert v.composed(v.LEARNED_LEVEL) and not v.composed(v.LEARNED_LEVEL - 1e-9) and not v.composed(float("nan"))


@pytest.mark.parametrize("k, n, low, high", [(5, 5, 0.478, 1.0), (0, 5, 0.0, 0.522), (5, 10, 0.187, 0.813)])
def test_clopper_pearson(k, n, low, high):
    lo, hi = v.clopper_pearson(k, n)
    assert lo == pytest.approx(low, abs=1e-3) and hi == pytest.approx(high, abs=1e-3)
    assert v.rate_text(k, n).startswith(f"{k} of {n} (95 % interval")


@pytest.mark.parametrize("words, expected", [
    ((REPRODUCED, REPRODUCED), REPRODUCED),
    ((REPRODUCED, PARTLY), PARTLY),
    ((NOT_REPRODUCED, PARTLY), PARTLY),
    ((REPRODUCED, NOT_REPRODUCED), PARTLY),
    ((NOT_REPRODUCED, NOT_REPRODUCED), NOT_REPRODUCED),
    ((), NOT_REPRODUCED),  # no seed composed: nothing reproduces it
])
def test_over_seeds(words, expected):
    per_seed = {f"seed{i}": v.Verdict(w, "x") for i, w in enumerate(words)}
    result = v.over_seeds(per_seed)
    assert result.verdict == expected
    assert f"{sum(w == REPRODUCED for w in words)} of {len(words)}" in result.text


def test_over_seeds_names_the_seeds_that_depart():
    result = v.over_seeds({"a": v.Verdict(REPRODUCED, ""), "b": v.Verdict(PARTLY, ""), "c": v.Verdict(NOT_REPRODUCED, "")})
    assert "partly in b" in result.text and "not in c" in result.text and "1 of 3 (95 % interval 1%–91%)" in result.text


@pytest.mark.parametrize("p, expected", [
    (phases(), REPRODUCED),
    (phases(jump=None), PARTLY),  # composed gradually: no sharp jump
    (phases(refinement=None), PARTLY),
    (phases(first=False), NOT_REPRODUCED),
    (phases(jump=9900), PARTLY),  # the jump after the final rise: composed, addition first, phases out of order
    (phases(addition=4000, jump=3600), PARTLY),
    ({**phases(jump=None, refinement=None), "composition": None}, NOT_REPRODUCED),
])
def test_c1_seed(p, expected):
    assert v.c1_seed(p).verdict == expected


@pytest.mark.parametrize("full, swap, expected", [
    (0.99, 0.97, REPRODUCED),
    (0.99, 0.94, PARTLY),  # commutativity could carry it
    (0.983, 0.99, PARTLY),  # a hair under the paper minus a point, but at least 0.9
    (0.89, 0.99, NOT_REPRODUCED),
])
def test_c2_seed(full, swap, expected):
    assert v.c2_seed(full, swap).verdict == expected


@pytest.mark.parametrize("pools, expected", [
    ({"p1": 0.99, "p2": 0.96, "p3": 0.95}, REPRODUCED),
    ({"p1": 0.99, "p2": 0.94, "p3": 0.99}, PARTLY),
    ({"p1": 0.99, "p2": 0.89, "p3": 0.99}, NOT_REPRODUCED),
])
def test_c3_seed(pools, expected):
    result = v.c3_seed(pools)
    assert result.verdict == expected and min(pools, key=pools.get) in result.text


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
    ((8, 40, 0.74, 0.1), REPRODUCED),
    ((7, 37, 0.81, 0.1), REPRODUCED),  # the authors' weights (7 frequencies, 10.9 % of 339 active neurons)
    ((8, 2, 0.74, 0.1), PARTLY),  # no single neuron explained above 0.9
    ((10, 40, 0.95, 0.4), NOT_REPRODUCED),  # too many frequencies: no longer "a few"
    ((0, 40, 0.95, 0.4), NOT_REPRODUCED),
    ((5, 40, 0.09, 0.1), NOT_REPRODUCED),  # no better than the null
])
def test_c7(args, expected):
    assert v.c7_fourier(*args).verdict == expected


@pytest.mark.parametrize("args, expected", [
    ((5, 0.6, 0.93, 0.4), REPRODUCED),
    ((5, 0.5, 0.93, 0.4), PARTLY),  # exactly half is not "more than half"
    ((7, 0.109, 0.81, 0.1), PARTLY),  # the authors' weights fail the old rule's share
    ((8, 0.9, 0.95, 0.4), NOT_REPRODUCED),  # too many key frequencies
])
def test_c7_before_2026_12(args, expected):
    assert v.c7_fourier_before_2026_12(*args).verdict == expected


@pytest.mark.parametrize("windows, ci, expected", [
    ({"a": 5, "b": 4, "c": 3}, (0.1, 0.5), REPRODUCED),
    ({"a": 5, "b": 0, "c": 1}, (0.1, 0.5), PARTLY),  # the premise's window is not what training shows
    ({"a": 5, "b": 4, "c": 3}, (-0.98, 1.12), NOT_REPRODUCED),  # straddles the isotropic value
    ({"a": 5, "b": 4, "c": 3}, None, NOT_REPRODUCED),
])
def test_c10(windows, ci, expected):
    assert v.c10_gradient(windows, ci).verdict == expected


def test_threshold_crossing_per_seed():
    c = v.seed_crossing(44, [0.3, 0.1, 0.2, 0.4], [0.95, 0.2, 0.5, 0.99])
    assert (c.value, c.below, c.runs) == (0.3, 0.2, 4)
    assert v.seed_crossing(1, [0.1, 0.2], [0.95, 0.96]).below is None  # every composed run reaches the level
    assert v.seed_crossing(1, [0.1, 0.2], [0.95, 0.5]).value is None  # does not stay up to its largest value
    assert v.seed_crossing(1, [], []).value is None


def test_threshold_verdict_over_seeds():
    near = [v.SeedCrossing(s, 0.306, 0.257, 5) for s in (42, 43)] + [v.SeedCrossing(44, 0.257, 0.208, 5)]
    result = v.c8_threshold(near)
    assert result.verdict == REPRODUCED and "(0.257, 0.306]" in result.text and "paper 0.25" in result.text
    far = [v.SeedCrossing(s, 0.6, 0.55, 5) for s in (1, 2, 3)]
    assert v.c8_threshold(far).verdict == NOT_REPRODUCED  # 0.3 from the paper's 0.25
    middle = [v.SeedCrossing(s, 0.45, 0.4, 5) for s in (1, 2, 3)]
    assert v.c8_threshold(middle).verdict == PARTLY  # 0.15 from it
    assert v.c9_threshold_before_2026_12_02([v.SeedCrossing(s, 0.062, 0.01, 5) for s in (1, 2, 3)]).verdict == PARTLY  # 0.138 from 0.2
    assert v.c9_threshold_before_2026_12_02([v.SeedCrossing(s, 0.165, 0.113, 5) for s in (1, 2, 3)]).verdict == REPRODUCED
    few = [v.SeedCrossing(1, 0.3, 0.25, 5), v.SeedCrossing(2, None, None, 5)]
    assert v.c8_threshold(few).verdict == NOT_REPRODUCED and "need 3" in v.c8_threshold(few).text


def test_median_bracket_interval_is_over_seeds():
    m = v.median_bracket([v.SeedCrossing(s, x, x - 0.05, 3) for s, x in enumerate((0.2, 0.25, 0.3, 0.35, 0.4))])
    assert m["crossing"] == 0.3 and m["below"] == pytest.approx(0.25)
    assert 0.2 <= m["interval"][0] <= 0.3 <= m["interval"][1] <= 0.4


def test_r1_is_a_finding_with_its_interval():
    r1 = v.r1_rate(4, 10)
    assert r1.verdict == v.FINDING and r1.text.startswith("4 of 10 (95 % interval 12%–74%)")


# ---------------------------------------------------------------------------- every boundary sits where the rule says
def test_c2_boundaries_are_inclusive():
    floor = paper.HELDOUT_EXACT.value - v.HELDOUT_MARGIN
    assert v.c2_seed(floor, v.SWAP_HELDOUT_LEVEL).verdict == REPRODUCED
    assert v.c2_seed(0.9, 0.0).verdict == PARTLY  # exactly 0.9 on the full set
    assert v.c2_seed(0.8999, 0.0).verdict == NOT_REPRODUCED


def test_c3_boundary_is_inclusive():
    assert v.c3_seed({"p": v.POOL_LEVEL}).verdict == REPRODUCED
    assert v.c3_seed({"p": v.POOL_LEVEL - 1e-9}).verdict == PARTLY
    assert v.c3_seed({"p": 0.9 - 1e-9}).verdict == NOT_REPRODUCED


def test_c4_needs_a_working_lookup_before_the_ablation():
    assert v.c4_previous_token(1.0, 1.0, 0.2, 1.0, clean_1var=0.25).verdict == PARTLY  # nothing to break
    assert v.c4_previous_token(1.0, 1.0, 0.2, 1.0, clean_1var=v.LEARNED_LEVEL).verdict == REPRODUCED
    assert "0.950 → 0.200" in v.c4_previous_token(1.0, 1.0, 0.2, 1.0, clean_1var=0.95).text


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


def test_c7_few_is_a_third_of_the_frequencies():
    assert v.FEW_FREQUENCIES == 9
    assert v.c7_fourier(1, 40, 0.7, 0.2, n_frequencies=3).verdict == REPRODUCED  # N = 7: one of three
    assert v.c7_fourier(2, 40, 0.7, 0.2, n_frequencies=3).verdict == NOT_REPRODUCED


def test_c7_boundaries():
    assert v.c7_fourier(1, v.SINGLE_NEURONS, 0.5, 0.4).verdict == REPRODUCED
    assert v.c7_fourier(v.FEW_FREQUENCIES, v.SINGLE_NEURONS, 0.5, 0.4).verdict == REPRODUCED
    assert v.c7_fourier(v.FEW_FREQUENCIES + 1, 40, 0.5, 0.4).verdict == NOT_REPRODUCED
    assert v.c7_fourier(3, v.SINGLE_NEURONS - 1, 0.5, 0.4).verdict == PARTLY
    assert v.c7_fourier(3, 40, 0.4, 0.4).verdict == NOT_REPRODUCED  # equal to the null is not above it


def test_c10_boundaries():
    three = {"a": v.C10_MIN_WINDOW, "b": v.C10_MIN_WINDOW, "c": v.C10_MIN_WINDOW}
    assert v.c10_gradient(three, (0.01, 1)).verdict == REPRODUCED
    assert v.c10_gradient({**three, "c": v.C10_MIN_WINDOW - 1}, (0.01, 1)).verdict == PARTLY
    assert v.c10_gradient(three, (0.0, 1)).verdict == NOT_REPRODUCED  # touching 0 is not above it


def test_texts_carry_the_deciding_numbers():
    assert "0.106" in v.c4_previous_token(1.0, 1.0, 0.106, 1.0, 0.99).text
    assert "98.4%" in v.c5_identity(1.0, 1.0, 1.0, 0.984).text
    text = v.c7_fourier(8, 27, 0.742, 0.1, 0.952).text
    assert "8 frequencies" in text and "27 active neurons" in text and "best 0.952" in text and "0.742" in text
    text = v.c10_gradient({"seed42": 0, "seed44": 4}, (0.087, 0.455), (0.25, 0.84)).text
    assert "[+0.087, +0.455]" in text and "never compose [+0.250, +0.840]" in text and "seed42: 0" in text


def test_verdict_error_names_the_word_and_the_choices():
    with pytest.raises(ValueError, match=r"verdict must be one of .*'reproduced'.*got 'mostly'"):
        v.Verdict("mostly", "")


def test_three_phases_allow_addition_at_the_jump_but_not_the_jump_at_the_final_rise():
    # "addition ≤ jump < final rise"
    assert v.shows_three_phases(phases(addition=3600, jump=3600, refinement=9800))
    assert not v.shows_three_phases(phases(addition=500, jump=9800, refinement=9800))
    assert not v.shows_three_phases(phases(refinement=None))


def test_c1_text_gives_the_steps():
    assert v.c1_seed(phases()).text == "addition 500, composed 3,700, jump 3,600, final rise 9,800"
    assert v.c1_seed(phases(jump=None)).text.endswith("final rise 9,800 (no sharp jump)")


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
    (v.c7_fourier, (5, 40, 0.93, 0.4)), (v.c7_fourier, (5, 0, 0.93, 0.4)), (v.c7_fourier, (0, 40, 0.95, 0.4)),
    (v.c2_seed, (0.99, 0.99)), (v.c2_seed, (0.95, 0.5)), (v.c2_seed, (0.5, 0.5)),
    (v.c3_seed, ({"p": 0.99},)), (v.c3_seed, ({"p": 0.5},)),
    (v.c1_seed, (phases(),)), (v.c1_seed, (phases(jump=None),)), (v.c1_seed, (phases(first=False),)),
])
def test_every_outcome_has_a_text(rule, args):
    text = rule(*args).text
    assert isinstance(text, str) and len(text) > 20


# ---------------------------------------------------------------------------- C10 as an experiment
def _removed(twin_at, removed_at, seeds=(42, 44, 49)):
    return [{"seed": s, "twin_at": twin_at, "removed_at": removed_at} for s in seeds]


def _added(twin, steered, sham, seeds=(43, 45, 46)):
    return [{"seed": s, "twin": twin, "steered": steered, "sham": sham} for s in seeds]


@pytest.mark.parametrize("remove, add, expected", [
    (_removed(3000, None), _added(False, True, False), REPRODUCED),  # the claim's mechanism: both hold
    (_removed(3000, 3100), _added(False, False, False), NOT_REPRODUCED),  # a null: steering changes nothing
    (_removed(3000, 7000), _added(False, False, False), PARTLY),  # composes only after the removal: necessary
    (_removed(3000, 3100), _added(False, True, False), PARTLY),  # sufficient only
    (_removed(3000, None), _added(False, True, True), PARTLY),  # the sham composes as well: not specific
    (_removed(7000, None), _added(False, True, False), INCONCLUSIVE),  # twins compose after the window: unreadable
    (_removed(3000, None), _added(True, True, False), INCONCLUSIVE),  # twins not stuck here
    ([{"seed": 42, "twin_at": 3000}], [{"seed": 43, "twin": False, "steered": None, "sham": None}], NOT_YET_RUN),
])
def test_c10_causal(remove, add, expected):
    assert v.c10_causal(remove, add).verdict == expected


def test_c10_causal_needs_every_readable_seed_blocked_and_names_each():
    mixed = _removed(3000, None)[:2] + _removed(3000, 4000, seeds=(49,))
    verdict = v.c10_causal(mixed, _added(False, False, False))
    assert verdict.verdict == NOT_REPRODUCED and "2 of 3" in verdict.text and "seed 49: twin composed at 3,000, removed composed at 4,000" in verdict.text


# ---------------------------------------------------------------------------- C10 at copying onset
def _reading(composed_at, m3_max=0.8, m5_mean=0.99, held=None, trigger=2001, m3_min=None):
    """One run's onset reading (`analysis.steering.onset_reading`), as the rule reads it."""
    return {"trigger": trigger, "m3_max": m3_max, "m3_min": m3_max if m3_min is None else m3_min, "m5_mean": m5_mean,
            "composed_at": composed_at, "held": composed_at is not None if held is None else held}


def _clamp(n, clamped=True, clamp_m3=0.9, clamp_m5=0.99, sham_m5=0.99, twin=False, sham=False):
    """n stuck cells of the clamp sweep: whether the clamped run ends composed, its lowest measure 3 in the window."""
    return [{"cell": f"c{i}", "twin": _reading(None, m3_max=0.1, held=twin),
             "clamp": _reading(9001 if clamped else None, m3_max=1.0, m3_min=clamp_m3, m5_mean=clamp_m5),
             "sham": _reading(None, m3_max=0.1, m5_mean=sham_m5, held=sham)} for i in range(n)]


def _necessity(n, removal_at=None, removal_m3=0.25, removal_m5=0.98, sham_m3=0.8, twin_at=4001, sham_at=4101):
    """n cells of the necessity sweep: the twin composes at `twin_at`, the sham at `sham_at`, the removal at
    `removal_at` (None: never), with the removal's and the sham's window readings as given."""
    return [{"cell": f"{i}/{i}", "twin": _reading(twin_at), "sham": _reading(sham_at, m3_max=sham_m3),
             "removal": _reading(removal_at, m3_max=removal_m3, m5_mean=removal_m5)} for i in range(n)]


def _sufficiency(n, pushed=(True, True), push_m3=(0.2, 0.8), twin=False, sham=False, shares=(1.0, 4.0)):
    """n stuck cells: per push strength whether the push ends composed and its measure 3 in the window."""
    return [{"cell": f"s{i}", "twin": _reading(None, m3_max=0.1, held=twin),
             "push": {s: _reading(9001 if ok else None, m3_max=m3) for s, ok, m3 in zip(shares, pushed, push_m3)},
             "sham": {s: _reading(None, m3_max=0.1, held=sham) for s in shares}} for i in range(n)]


@pytest.mark.parametrize("necessity, clamp, expected", [
    (_necessity(16), _clamp(6), REPRODUCED),  # the hold blocks composition while it lasts, the clamp composes
    (_necessity(16, removal_at=5001), _clamp(6), PARTLY),  # a delay only (the held runs compose inside the hold)
    (_necessity(16, removal_at=5001), _clamp(6, clamped=False), PARTLY),  # a delay, and the clamp adds nothing
    (_necessity(16), _clamp(6, clamped=False), PARTLY),  # the block only
    (_necessity(16), _clamp(6, clamp_m3=0.4), PARTLY),  # the clamp fails its check: sufficiency untested
    (_necessity(16, removal_at=4001), _clamp(6), PARTLY),  # sufficient only (a null on necessity)
    (_necessity(16, removal_at=4001), _clamp(6, clamped=False), NOT_REPRODUCED),  # the hold no matter, no clamp
    (_necessity(16), _clamp(6, sham=True), PARTLY),  # the sham clamp composes as well: not specific
    (_necessity(16), _clamp(6, twin=True), PARTLY),  # the twins compose: the clamp adds nothing
    (_necessity(16), _clamp(6, clamp_m5=0.9), PARTLY),  # the clamp disturbs layer 1's copying: untested
    (_necessity(16, removal_m3=0.6), _clamp(6), INCONCLUSIVE),  # the removal fails its check everywhere
    (_necessity(16, removal_m5=0.9), _clamp(6), INCONCLUSIVE),  # the removal disturbs layer 1's copying
    (_necessity(16, sham_m3=0.3), _clamp(6), INCONCLUSIVE),  # the sham stops the identity pattern too
    (_necessity(7), _clamp(6), INCONCLUSIVE),  # too few cells
])
def test_c10_onset(necessity, clamp, expected):
    assert v.c10_onset(necessity, _sufficiency(6), clamp).verdict == expected


def test_c10_necessity_names_a_delay_and_whether_the_hold_prevents_composition():
    delay = v.c10_necessity(_necessity(16, removal_at=5001))  # later than the twin, inside the window (to 5,001)
    assert delay["reading"] == "shown" and delay["block"]["reading"] == "not shown"
    assert "delays composition (median 1,000 steps later than the twin) but did not prevent it in 16 of 16 cells" \
        in delay["text"]
    assert "16 of 16 held runs composed during the hold, their twins 16 of 16; a block during the hold: not shown" \
        in delay["text"]
    block = v.c10_necessity(_necessity(16))
    assert block["block"]["reading"] == "shown" and "and prevents it during the hold" in block["text"]
    assert "a delay is not shown" in v.c10_necessity(_necessity(16, removal_at=4001, sham_at=4001))["text"]


def test_c10_clamp_reads_its_check_and_both_sign_tests():
    assert v.c10_clamp(_clamp(6))["reading"] == "shown"  # 6 of 6 where twin and sham do not: p = 0.016
    cells = _clamp(6)
    cells[0]["clamp"] = _reading(None, m3_max=1.0, m3_min=0.9)
    assert v.c10_clamp(cells)["reading"] == "shown"  # 5 of 6: p = 0.031
    cells[1]["clamp"] = _reading(None, m3_max=1.0, m3_min=0.9)
    assert v.c10_clamp(cells)["reading"] == "not shown"  # 4 of 6: p = 0.0625
    low = v.c10_clamp(_clamp(6, clamp_m3=0.4))
    assert low["reading"] == "untested" and "clamp measure 3 lowest 0.40 (needs ≥ 0.5)" in low["text"]
    assert v.c10_clamp(_clamp(6, sham_m5=0.9))["reading"] == "untested"


def test_g4_paired_tests_the_departures_against_the_paper_shape_seed_by_seed():
    seeds = range(v.G4_FRESH_FIRST, v.G4_FRESH_FIRST + v.G4_FRESH_SEEDS)
    shapes = ("mod97", "mod113", "vars24", "layers3_heads2")
    differ = {s: {"paper": i % 3 != 0, **{shape: True for shape in shapes}} for i, s in enumerate(seeds)}
    out = v.g4_paired(differ)  # 7 of 20 paper runs stuck, every departure composes: mean +0.35
    assert out.verdict == v.FINDING and "a different rate from the paper shape's: shown" in out.text
    assert "mean +0.35" in out.text and "mod97 20 of 20" in out.text
    same = {s: {"paper": i % 3 != 0, **{shape: i % 3 != 0 for shape in shapes}} for i, s in enumerate(seeds)}
    assert "a different rate from the paper shape's: not shown" in v.g4_paired(same).text  # a null
    few = dict(list(differ.items())[:19])
    assert v.g4_paired(few).verdict == v.NOT_YET_RUN


def test_the_exact_sign_flip_test():
    from assignadd_core.rules.stats import sign_flip_exact
    assert sign_flip_exact([1.0] * 5) == 2 / 32 and sign_flip_exact([0.0, 0.0]) == 1.0
    assert sign_flip_exact([1.0, -1.0]) == 1.0 and sign_flip_exact([0.5, 0.25, 0.25]) == 2 / 8
    with pytest.raises(ValueError):
        sign_flip_exact([0.3])


def test_c10_onset_reads_each_outcome_by_its_stated_condition():
    need = v.c10_necessity(_necessity(16))
    assert need["reading"] == "shown" and len(need["cells"]) == 16 and "p = 1.53e-05" in need["text"]
    # a null: the removal composes with the twin in every cell -> all ties: not shown (never "not necessary")
    null = v.c10_necessity(_necessity(16, removal_at=4001, sham_at=4001))
    assert null["reading"] == "not shown" and "later than the twin in 0, earlier in 0" in null["text"]
    # 8 cells pass their checks exactly: readable; 7 later of 8 gives p = 0.035, 6 of 8 p = 0.14
    cells = _necessity(8) + _necessity(8, removal_m3=0.6)
    assert v.c10_necessity(cells)["reading"] == "shown"
    cells = _necessity(16)
    for c in cells[:2]:
        c["removal"] = _reading(3001, m3_max=0.25)  # earlier than its twin and sham
    assert v.c10_necessity(cells)["reading"] == "shown"  # 14 later, 2 earlier: p = 0.002
    for c in cells[2:5]:
        c["removal"] = _reading(3001, m3_max=0.25)
    assert v.c10_necessity(cells)["reading"] == "not shown"  # 11 later, 5 earlier: p = 0.105
    # arms that triggered at different steps are not a cell
    cells = _necessity(16)
    cells[0]["sham"] = _reading(4101, trigger=2101)
    cells[1]["removal"] = _reading(None, trigger=None)
    out = v.c10_necessity(cells)
    assert len(out["cells"]) == 14 and "0/0 (trigger at 2,001, 2,001, 2,101" in out["text"]
    assert "1/1 (trigger at 2,001, never, 2,001" in out["text"]
    failing = v.c10_necessity(_necessity(16, removal_m5=0.9))["text"]
    assert "removal measure 5 mean off the twin's by 0.090 (needs ≤ 0.05)" in failing


def test_c10_onset_sufficiency_takes_the_first_push_that_passes_its_check():
    first = v.c10_sufficiency(_sufficiency(6, push_m3=(0.6, 0.8)))
    assert (first["reading"], first["share"]) == ("shown", 1.0)
    second = v.c10_sufficiency(_sufficiency(6, pushed=(False, True)))  # share 1 fails its check, share 4 composes
    assert (second["reading"], second["share"]) == ("shown", 4.0)
    # the weaker push passes its check and does not compose: read there, not shown (the stronger is not tried)
    weak = v.c10_sufficiency(_sufficiency(6, pushed=(False, True), push_m3=(0.6, 0.8)))
    assert (weak["reading"], weak["share"]) == ("not shown", 1.0)
    cells = _sufficiency(6)
    cells[0]["push"][4.0] = _reading(9001, m3_max=0.4)
    assert v.c10_sufficiency(cells)["reading"] == "untested"  # passes in 5 of 6 cells
    cells = _sufficiency(6)
    for c in cells:
        c["push"][4.0] = _reading(9001, m3_max=0.8, m5_mean=0.7)  # the identity pattern, but layer 1 disturbed
    assert v.c10_sufficiency(cells)["reading"] == "untested"
    cells = _sufficiency(6)
    cells[0]["push"][4.0] = _reading(None, m3_max=0.8)
    assert v.c10_sufficiency(cells)["reading"] == "shown"  # 5 of 6 compose where the twin does not: p = 0.031
    cells[1]["push"][4.0] = _reading(None, m3_max=0.8)
    assert v.c10_sufficiency(cells)["reading"] == "not shown"  # 4 of 6: p = 0.0625


def test_c10_onset_waits_for_every_run():
    assert v.c10_onset(_necessity(16), _sufficiency(6), _clamp(6)).verdict == REPRODUCED
    assert v.c10_onset(_necessity(16), _sufficiency(6)).verdict == NOT_YET_RUN  # the clamp not run yet
    cells = _necessity(16)
    cells[3]["sham"] = None
    late = v.c10_onset(cells, _sufficiency(6), _clamp(6))
    assert late.verdict == NOT_YET_RUN and late.text == "95 of 96 onset runs have finished"
    empty = [{"cell": "a", "twin": None, "removal": None, "sham": None}]
    assert v.c10_onset(empty, [{"cell": "b", "twin": None, "push": {1.0: None}, "sham": {1.0: None}}]).verdict \
        == NOT_YET_RUN


def test_the_one_k_of_n_type_says_the_same_in_every_form():
    """stats.Rate is the book's one count with an interval: the verdicts' text, the chapters' description and the
    reliability and composition readers all come from it."""
    from assignadd_core.rules import stats
    from assignadd_core.analysis import composition, reliability
    r = stats.Rate(2, 3)
    assert v.rate_text(2, 3) == r.text() == f"2 of 3 (95 % interval {r.low:.0%}–{r.high:.0%})"
    assert composition.count([True, False, True]) == r and reliability.composition_rate(2, 3) == r
    assert r.describe().startswith("2 of 3 (67%; 95 % interval") and stats.Rate(0, 0).describe() == "no runs"
    assert stats.t_interval([1.0, 2.0, 3.0])[0] == 2.0 and stats.t_interval([1.0])[1] != stats.t_interval([1.0])[1]


def test_c10_parts_give_the_counts_their_text_gives():
    import assignadd_core.rules.verdicts as v
    need = v.c10_necessity(_necessity(16))
    later, earlier, p = need["against"]["twin"]
    assert need["read"] == 16 and later + earlier <= len(need["cells"])
    assert f"later than the twin in {later}, earlier in {earlier} (exact sign test p = {p:.3g})" in need["text"]
    enough = v.c10_sufficiency(_sufficiency(6, push_m3=(0.6, 0.8)))
    assert enough["read"] == 6 and enough["passing"]
    for share, count in enough["passing"].items():
        assert f"the push at {share:g} passes its check" in enough["text"] and f"in {count} of 6 cells" in enough["text"]
