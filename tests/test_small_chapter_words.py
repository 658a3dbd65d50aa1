"""The smaller chapters' phrases (report.chapter_words) and the readings they come from (analysis.reliability,
analysis.diagnostics): each follows its numbers."""
import numpy as np
import pandas as pd
import torch

from assignadd_core.analysis import diagnostics, reliability
from assignadd_core.report import chapter_words
from assignadd_core.rules import verdicts
from assignadd_core.rules.stats import rate
from assignadd_core.rules.verdicts import Verdict


def c6_numbers(matched=0.94, ceiling=0.997, patch=1.0, hardest=0.5):
    return pd.Series({"matched": matched, "ceiling": ceiling, "patch_kept": patch, "same_sum": 0.1,
                      "one_shared_operand": hardest, "unrelated": 0.0})


def test_c6_shortfalls_name_each_condition_a_seed_misses():
    assert chapter_words.c6_shortfalls(c6_numbers(ceiling=0.96), 0.5) == []
    assert chapter_words.c6_shortfalls(c6_numbers(), 0.5) == [
        "the matched cosine is 0.057 below the ceiling (the rule allows 0.05)"]
    found = chapter_words.c6_shortfalls(c6_numbers(matched=0.8, patch=0.9, hardest=0.7), 0.7)
    assert len(found) == 4 and found[0] == "the matched cosine is 0.800 (the rule asks 0.9)"
    assert found[3] == "the attention patch keeps 90.0% of the answers (the rule asks 95%)"


def test_c6_why_reads_the_seeds_short_of_the_rule_and_the_baseline_gap():
    numbers = pd.DataFrame({"seed42": c6_numbers(ceiling=0.96), "seed49": c6_numbers()}).T
    rows = {"seed42": Verdict(verdicts.REPRODUCED, ""), "seed49": Verdict(verdicts.PARTLY, "")}
    why = chapter_words.c6_why(rows, numbers)
    assert why[0] == "in seed 49 the matched cosine is 0.057 below the ceiling (the rule allows 0.05)"
    assert why[1].startswith("every composed seed's matched cosine is 0.44 or more above")
    assert chapter_words.c6_why({"seed42": rows["seed42"]}, numbers.loc[["seed42"]])[0].startswith("every composed")
    assert chapter_words.c6_why({}, numbers.iloc[:0]) == ["no seed composed, so there is no variable route to compare"]


def test_c7_why_says_what_the_first_rule_reads_when_it_differs():
    numbers = pd.DataFrame({"median_r2": [0.74, 0.83], "share_above_09": [0.029, 0.273]})
    why = chapter_words.c7_why(numbers, Verdict(verdicts.PARTLY, ""), Verdict(verdicts.REPRODUCED, ""))
    assert why == ["a typical active neuron is explained to about 78 % by one frequency",
                   "only 2.9–27.3 % pass 0.9, so the rule's first version, which asked for most neurons, reads partly"]
    assert chapter_words.c7_why(numbers, Verdict(verdicts.REPRODUCED, ""), Verdict(verdicts.REPRODUCED, ""))[0]\
        .startswith("every composed seed")
    assert chapter_words.twin_kind("1var_left") == "one variable, left operand"


def test_sweep_flips_find_a_seed_each_way():
    by_seed = {42: {"at_paper": True, "failed": ["f = 0.501"], "won": ["f = 0.7"]},
               43: {"at_paper": False, "failed": [], "won": ["f = 0.062", "r = 0.3"]},
               44: {"at_paper": None, "failed": ["r = 0.1"], "won": []}}
    assert reliability.sweep_flips(by_seed) == {"down": (42, ["f = 0.501"]), "up": (43, ["f = 0.062", "r = 0.3"])}
    assert reliability.sweep_flips({44: by_seed[44]}) == {"down": None, "up": None}


def test_measure_4s_share_and_r1s_record():
    zero, one = reliability.measure4_pools()
    assert (zero, one) == (2, 3) and reliability.measure4_share() == 0.4
    jump = pd.Series({"runs": 4, "median": 2951.0, "min": 2701.0, "max": 5701.0})
    text = reliability.r1_text(rate([True] * 5 + [False] * 5), rate([True] * 4 + [False] * 6), 40_000, jump, [])
    assert text.startswith("5 of 10") and "median jump 2,951 (range 2,701–5,701)" in text
    assert "not yet run" in reliability.r1_text(rate([True]), rate([True]), 60, pd.Series({**jump, "runs": 0}), ["x"])


def test_ov_diagonal_pca_rings_and_repair_steps():
    ov = torch.eye(4) * 2 - 0.5
    found = diagnostics.ov_diagonal(ov)
    assert found["diagonal"] == 1.5 and found["off"] == -0.5 and found["moves"]
    assert not diagnostics.ov_diagonal(torch.zeros(3, 3))["moves"]
    angle = np.linspace(0, 2 * np.pi, 59, endpoint=False)
    circle = np.stack([np.cos(angle), np.sin(angle), np.cos(angle), np.sin(angle) * 0.1], 1)
    rings = diagnostics.pca_rings(circle, np.array([0.4, 0.4, 0.1, 0.1]), pcs=(0, 2))
    assert rings["spreads"][0] < 1e-9 and rings["spreads"][1] > 0.2 and rings["shares"] == [0.8, 0.2]
    values = pd.Series({1001: 0.5, 3601: 0.95, 5601: 0.85, 7201: 0.93, 40000: 0.99})
    assert diagnostics.repaired_at(values, 0.9) == 7201  # the dip at 5,601 counts: repaired after it
    assert diagnostics.repaired_at(values.iloc[:3], 0.9) is None


def test_c6_answer_counts_the_seeds_that_meet_every_condition_with_their_ranges():
    numbers = pd.DataFrame({"seed42": c6_numbers(ceiling=0.96), "seed49": c6_numbers()}).T
    rows = {"seed42": Verdict(verdicts.REPRODUCED, ""), "seed49": Verdict(verdicts.PARTLY, "")}
    answer = chapter_words.c6_answer(rows, numbers)
    assert answer.startswith("1 of 2 composed seeds meet every condition: matched cosine ")
    assert "hardest baseline" in answer and "attention patch keeps" in answer
    assert chapter_words.c6_answer({}, numbers.iloc[:0]) == "no composed seed"
