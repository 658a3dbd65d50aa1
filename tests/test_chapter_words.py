"""Chapters 9 and 14's phrases and tables (`report.theory_words`, `report.generality_words`, `experiments.c10_study`):
their words follow the numbers, and a reading not run yet says so."""
from __future__ import annotations

from assignadd_core.experiments import c10_study
from assignadd_core.report import generality_words as gw
from assignadd_core.report import theory_words as tw
from assignadd_core.rules import verdicts

from test_verdicts import _clamp, _necessity


def _need(**kwargs):
    need = verdicts.c10_necessity(_necessity(9, **kwargs))
    need["delays_summary"] = c10_study.delay_summary(need["cells"])
    return need


def test_the_necessity_words_name_a_delay_and_its_limit():
    delay = tw.necessity_phrases(_need(removal_at=5001))  # later than the twin, inside the window
    assert delay["need_delay_word"] == "delays composition" and delay["need_prevent"] == "did not prevent it"
    assert delay["need_delay_twin"] == "a median of 1,000 steps (1,000 to 1,000)"
    assert delay["need_during"] == "all 9 held runs" and delay["need_block"].startswith("not shown")
    block = tw.necessity_phrases(_need())  # never composes: a block during the hold
    assert block["need_prevent"] == "prevented it while the hold lasted" and block["need_block"].startswith("shown")
    assert block["need_delay_twin"] == "no measurable delay"  # a run that never composed has no delay in steps
    null = tw.necessity_phrases(_need(removal_at=4001, sham_at=4001))
    assert null["need_delay_word"] == "is not shown to delay composition"
    assert set(tw.necessity_phrases(None).values()) == {tw.NOT_RUN}


def test_the_clamp_and_push_words_follow_their_counts():
    shown = tw.clamp_phrases(verdicts.c10_clamp(_clamp(6)), (12, 12), _clamp(6))
    assert shown["clamp_composed"] == "all 6 clamped runs" and shown["clamp_twins"] == "none of the 6 twins"
    assert shown["clamp_shown"] == "shown" and shown["clamp_runs"] == "all 12 runs"
    broken = _clamp(6, clamp_m5=0.7, clamped=False)  # the copying falls: the check fails, the counts still read
    untested = tw.clamp_phrases(verdicts.c10_clamp(broken), (12, 12), broken)
    assert untested["clamp_shown"] == "untested" and untested["clamp_entered"] == "none of the 6 cells"
    assert untested["clamp_composed"] == "none of the 6 clamped runs" and untested["clamp_copying"] == "0.29 to 0.29"
    assert tw.clamp_phrases(None, (3, 12), [])["clamp_runs"] == "not run yet (3 of 12 runs finished)"
    out = {"cells": 6, "pushed": 3, "shams": 1, "twins": 0, "checked": 0}
    words = tw.push_phrases(out, 16.0, 0.333)
    assert (words["push_composed"], words["push_checked"], words["push_m3"]) == ("3 of 6 stuck cells",
                                                                                "none of the 6 cells", "0.33")


def test_the_first_push_reads_the_weakest_strength():
    from test_verdicts import _sufficiency
    out, share, m3 = c10_study.first_push(_sufficiency(6, pushed=(False, True), push_m3=(0.2, 0.8)))
    assert share == 1.0 and out["pushed"] == 0 and out["checked"] == 0 and m3 == 0.2


def test_the_figure_rows_count_steps_from_onset_and_add_the_double_hold_where_finished():
    need = verdicts.c10_necessity(_necessity(2, removal_at=5001))
    rows = c10_study.figure_cells(need["cells"], [{"cell": "0/0", "twin": None, "removal": None, "sham": None}])
    assert rows["0/0"] == {"twin": 2000, "held run": 3000, "sham": 2100}  # onset at 2,001
    double = [{"cell": "1/1", **{a: need["cells"][1][a] for a in ("twin", "removal", "sham")}}]
    assert c10_study.figure_cells(need["cells"], double)["1/1"]["double-held run"] == 3000


def test_a_shapes_shortfall_names_each_seed_with_its_reason():
    text = ("1 of 3 (95 % interval 1%–91%) composed seeds reproduce it; partly in seed 43, seed 44; per seed: seed 42"
            " addition 601; seed 43 final rise 6,701 (no sharp jump); seed 44 final rise 35,101 (no sharp jump)")
    assert gw.shortfall(verdicts.Verdict("partly", text)) == \
        "partly in seed 43 (no sharp jump), seed 44 (no sharp jump)"
    assert gw.shortfall(verdicts.Verdict("reproduced", "3 of 3 ...")) == ""


def test_g4_phrases_use_the_tests_own_word():
    seeds = range(verdicts.G4_FRESH_FIRST, verdicts.G4_FRESH_FIRST + verdicts.G4_FRESH_SEEDS)
    same = {s: {"paper": i % 2 == 0, "mod97": i % 2 == 0} for i, s in enumerate(seeds)}
    words = gw.g4_phrases(verdicts.g4_paired(same), 40, 40)
    assert words == {"g4_finished": "all 40 fresh runs", "g4_shown": "a different rate: not shown"}
    assert gw.g4_phrases(verdicts.g4_paired({}), 0, 40)["g4_shown"] == "not yet run"


def test_the_necessity_conclusion_follows_the_block_test():
    assert tw.necessity_phrases(_need(removal_at=5001))["need_conclusion"].startswith("a delay is what")
    assert tw.necessity_phrases(_need())["need_conclusion"] == "the identity pattern was needed while the hold lasted"


def test_the_double_hold_words_follow_its_cells():
    cell = lambda gap, m3, composed: {"cell": "1/2", "twin": {"trigger": 100, "m3_max": 0.9, "m5_mean": 0.9,  # noqa: E731
                                                           "composed_at": 500},
                                      "removal": {"trigger": 100, "m3_max": 0.1, "m5_mean": 0.9 - gap,
                                                  "composed_at": composed},
                                      "sham": {"trigger": 100, "m3_max": m3, "m5_mean": 0.9, "composed_at": 600}}
    broken = [cell(0.3, 0.25, None), cell(0.6, 0.4, None)]
    words = tw.double_phrases(broken, (4, 4))
    assert words["double_entered"] == "none of the 2 cells" and words["double_copying"] == "0.30 to 0.60"
    assert words["double_sham_m3"] == "0.40" and words["double_tested"] == "is not tested"
    assert words["double_composed"] == "none of the 2 double-held runs"
    assert tw.double_phrases(broken, (3, 4))["double_runs"] == "not run yet (3 of 4 runs finished)"
