"""The words the chapters' sentences are written with change when their numbers do."""
import pytest

from assignadd_core.report import wording


def test_k_of_n_says_all_none_and_the_one_where_the_count_calls_for_it():
    assert wording.k_of_n(4, 10) == "4 of 10 seeds"
    assert wording.k_of_n(10, 10) == "all 10 seeds"
    assert wording.k_of_n(0, 10) == "none of the 10 seeds"
    assert wording.k_of_n(1, 1, "runs") == "the one run" and wording.k_of_n(0, 1, "runs") == "not the one run"
    assert wording.k_of_n(0, 0, "cells") == "no cells"
    assert wording.k_of_n(1200, 1500, "runs") == "1,200 of 1,500 runs"
    with pytest.raises(ValueError, match="0 <= k <= n"):
        wording.k_of_n(6, 5)


def test_by_step_is_the_latest_step_and_says_when_some_never_got_there():
    # chapter 14's sentence: the paper-shape seeds' final rises end at different steps; the words give the latest
    assert wording.by_step([7301, 37301, 28501]) == "by step 37,301"
    assert wording.by_step([7301, None, 28501], noun="seeds") == "by step 28,501 in 2 of 3 seeds"
    assert wording.by_step([None, None], noun="seeds") == "in none of the 2 seeds"
    assert wording.by_step([float("nan"), 5701]) == "by step 5,701 in 1 of 2 runs"
    assert wording.latest([None, 2701, 5701]) == 5701 and wording.latest([None]) is None


def test_a_test_that_does_not_reject_says_not_shown_never_no_effect():
    assert wording.shown(0.34, 0.05, "an effect of the data order") == "an effect of the data order: not shown (p = 0.34)"
    assert wording.shown(0.0002, 0.05, "an effect of the initialization") == \
        "an effect of the initialization: shown (p = 0.0002)"
    assert wording.shown(0.05, 0.05, "x") == "x: not shown (p = 0.05)"  # the level itself does not reject
    assert wording.p_value(0.066) == "p = 0.066" and wording.p_value(3e-6) == "p < 0.0001"
    assert wording.p_value(1 / 10_001) == "p = 0.0001" == f"p = {1 / 10_001:.2g}"  # as the verdicts print it
    with pytest.raises(ValueError):
        wording.p_value(1.5)


def test_about_rounds_to_significant_digits_and_says_about_only_when_it_rounded():
    assert wording.about(0.6013) == "about 0.60"
    assert wording.about(0.5) == "0.50"  # exact: no "about"
    assert wording.about(37301) == "about 37,000"
    assert wording.about(2700) == "2,700"
    assert wording.about(0.049, 1) == "about 0.05"
    assert wording.about(0.996) == "about 1.0"  # rounding up to the next power of ten keeps two digits
    assert wording.about(-0.362) == "about -0.36"
    assert wording.about(0) == "0"


def test_lists_of_seeds_and_steps():
    assert wording.seeds([49, 42, 44]) == "seeds 42, 44 and 49"
    assert wording.seeds(["seed42"]) == "seed 42"
    assert wording.seeds([42, 43, 44, 45, 46, 49]) == "seeds 42–46 and 49"
    assert wording.seeds([42, 43]) == "seeds 42 and 43"  # two in a row are not a span
    assert wording.seeds([]) == "no seed"
    assert wording.seeds(["ci_tiny_1"]) == "run ci_tiny_1"  # a profile's own run names are named as runs
    assert wording.seeds(["seed42", "ci_tiny_2", "ci_tiny_1"]) == "seed 42 and runs ci_tiny_1 and ci_tiny_2"
    assert wording.steps([2701, 3201, 5701]) == "2,701, 3,201 and 5,701"
    assert wording.listing([]) == "none" and wording.listing(["a"]) == "a"
    assert wording.listing([1, 2], "or") == "1 or 2"


def test_span_collapses_to_one_number_when_the_values_print_the_same():
    assert wording.span([0.571, 0.587, 0.58], 2) == "0.57–0.59"
    assert wording.span([0.581, 0.584], 2) == "0.58"
    assert wording.span([2701, 5701]) == "2,701–5,701"
    assert wording.span([None, float("nan")]) == "none"
    assert wording.number(40000.0) == "40,000" and wording.number(0.25) == "0.25"
    assert wording.share(5, 10) == "50 %" and wording.share(0, 0) == "no share"
    with pytest.raises(TypeError):
        wording.number(True)


def test_side_of_a_window_and_agreement():
    window = (14500, 16000)
    assert wording.side_of([6901, 23401, 37301], *window) == "on both sides of"
    assert wording.side_of([23401, 37301], *window) == "after"
    assert wording.side_of([6901], *window) == "before"
    assert wording.side_of([15000], *window) == "within"
    assert wording.side_of([15000, 37301], *window) == "around"
    assert wording.capital("all 10 seeds") == "All 10 seeds"
    assert wording.verb(1, "composes", "compose") == "composes" and wording.verb(2, "composes", "compose") == "compose"


# ------------------------------------------------------------------ the phrases the chapters glue into their Markdown
def test_against_reads_where_a_value_stands_as_both_are_printed():
    assert wording.against(0.04, 0.1) == "below" and wording.against(0.2, 0.1) == "above"
    assert wording.against(0.1, 0.1) == "at"
    assert wording.against(0.0999, 0.1, 2) == "at"  # prints as the level: not "below 0.10" beside "0.10"
    assert wording.against(0.0949, 0.1, 2) == "below"
    assert wording.against(3, 5, below="under", above="over") == "under"


def test_percents_signed_estimates_and_intervals():
    assert wording.percent(0.98891) == "98.9 %" and wording.percent(0.5, 0) == "50 %"
    assert wording.percents([0.989, 1.0]) == "98.9–100.0 %"
    assert wording.percents([0.5, 0.5004]) == "50.0 %"  # they print the same: one number
    assert wording.percents([]) == "none" and wording.percents([float("nan")]) == "none"
    assert wording.signed(0.6) == "+0.60" and wording.signed(-0.362) == "-0.36" and wording.signed(0.0) == "+0.00"
    assert wording.estimate(0.6712, 0.35, 0.914) == "0.67 (0.35–0.91)"
    assert wording.interval(0.35, 0.914) == "0.35–0.91" and wording.interval(0.47, 0.81, 0, "%") == "47–81 %"


def test_tested_says_shown_or_not_shown_never_no_effect():
    assert wording.tested(0.0001, 0.05) == "shown (p = 0.0001)"
    assert wording.tested(0.18, 0.05) == "not shown (p = 0.18)"
    assert wording.tested(0.05, 0.05) == "not shown (p = 0.05)"


def test_trend_count_others_and_who_follow_the_numbers():
    assert wording.trend(0.6, 0.9) == "rising" and wording.trend(0.9, 0.6) == "falling"
    assert wording.trend(0.5, 0.5) == "flat"
    assert wording.count(5) == "5 seeds" and wording.count(1) == "1 seed" and wording.count(0, "runs") == "no runs"
    assert wording.others(5) == "the other 5 seeds" and wording.others(1) == "the other seed"
    assert wording.others(0, "cells") == "no other cell"
    assert wording.who(["seed51"], "composes", "compose") == "seed 51 composes"
    assert wording.who([49, 51], "composes", "compose") == "seeds 49 and 51 compose"
    assert wording.who([], "composes", "compose") == "no seed composes"


def test_which_and_within_noise():
    assert wording.which(True, "is not", "may be") == "is not" and wording.which(False, "is not", "may be") == "may be"
    assert wording.within_noise(0.3) == "within" and wording.within_noise(-3.5) == "by more than"
    assert wording.within_noise(2.9, limit=2) == "by more than"


def test_exponent_writes_a_relative_size_as_the_design_states_it():
    assert wording.exponent(1e-7) == "1e-7" and wording.exponent(3e-3) == "3e-3" and wording.exponent(1e-12) == "1e-12"


def test_a_measure_is_named_by_its_number_and_its_role():
    from assignadd_core.report.names import MEASURE_LABELS, MEASURE_ROLES, measure_named
    assert measure_named("m5_l1_value_prev_token") == "measure 5, layer-1 copying"
    assert measure_named("m3_l2_var_identity_qk") == "measure 3, identity pattern"  # the glossary's name
    assert set(MEASURE_ROLES) == set(MEASURE_LABELS)  # every measure has its role
    assert measure_named("1var_train") == "1-var train"  # not a measure: its display name


def test_the_measures_roles_are_the_glossarys_names():
    import re
    from pathlib import Path

    from assignadd_core.report.names import MEASURE_LABELS, MEASURE_ROLES
    glossary = (Path(__file__).resolve().parent.parent / "book" / "glossary.md").read_text()
    named = dict(re.findall(r"\*\*Measure (\d), ([^*]+?)\.\*\*", glossary))
    for key, role in MEASURE_ROLES.items():
        number = MEASURE_LABELS[key].split()[0]
        assert named[number].replace("`", "").removeprefix("the ").startswith(role.removeprefix("the ")), (key, role)


def test_a_bracket_is_half_open_and_says_where_nothing_was_under_the_level():
    w = wording
    assert w.bracket(0.257053, 0.305916) == "(0.257, 0.306]"
    assert w.bracket(None, 0.113158) == "(–, 0.113]"
    assert w.bracket(None, None) == "no crossing" and w.bracket(0.1, None) == "no crossing"
    assert w.bracket(0.5, 1.0, 1) == "(0.5, 1.0]"
