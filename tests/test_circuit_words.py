"""The circuits chapter's phrases (report.circuit_words): each follows its numbers, and a reading that is not there
gives a phrase, never a missing name."""
import pandas as pd

from assignadd_core.report import circuit_words as words


def test_mechanism_phrases_count_positions_rows_and_examples():
    L1 = {"won": 10, "positions": 11, "m2": 10 / 11, "m5": 1.0, "m7": 0.99}
    L2 = {"rows": 11, "n": 12, "m3": 11 / 12, "off": ["k"], "contrast": 3.19, "m6": 0.998}
    ex = {"right": 4, "predicted": [1, 2, 3, 4], "paper": None}
    found = words.mechanism(L1, L2, ex, {"m4_l1_eq_to_operands": 1.0})
    assert found["l1_won"] == "10 of 11 query positions" and found["m2"] == "0.909"
    assert found["l2_rows"] == "11 of 12 rows" and found["off_rows"] == "k" and found["m6_pct"] == "99.8 %"
    assert found["examples_right"] == "all 4 example sequences" and found["paper_answer"] == "–"
    assert words.mechanism(L1, {**L2, "off": []}, ex, {"m4_l1_eq_to_operands": 1.0})["off_rows"] == "none"


def jump_reading(m5_before=1.0, table=True):
    t = pd.DataFrame({2601: {"1-var train": 0.767, "2-var train": 0.654, "identity rows": 0.75, "diagonal contrast": 1.33,
                             "measure 5": m5_before},
                      3601: {"1-var train": 0.941, "2-var train": 0.849, "identity rows": 0.833, "diagonal contrast": 1.81,
                             "measure 5": 1.0}}).T
    return {"jump": 2701, "before": 2601, "after": 3601, "table": t if table else None}


def refinement_reading(window=(6501, 7301)):
    return {"window": window, "new_left": ["k", "l"], "new_right": ["a", "b"], "scores": [1, 2], "steps": [3601, 40000],
            "score_gap": [-0.92, 0.061], "gaps": {"token·token": [-0.59, -0.03], "position·position": [0.0, -0.001]}}


def test_jump_phrases_say_whether_layer_1_copies_before_the_jump():
    found = words.jump(jump_reading(), refinement_reading(), 1.0)
    assert found["jump_1var"] == "0.767 to 0.941" and found["window"] == "6,501–7,301"
    assert found["copies_when"].startswith("already copies before the jump")
    assert found["gap_first"] == "0.92 below" and found["gap_last"] == "0.06 above"
    assert found["gap_parts"] == "token·token -0.59 → -0.03 and position·position +0.00 → +0.00"  # no "-0.00"
    assert found["restricted_sides"] == "k and l on the left, a and b on the right"
    late = words.jump(jump_reading(m5_before=0.4), refinement_reading(None), 1.0)
    assert late["copies_when"] == "is still forming its copy when the jump comes"
    assert late["window"] == "not detected in this run"
    none = words.jump({"jump": None, "before": None, "after": None, "table": None}, refinement_reading(), 1.0)
    assert none["jump_1var"] == "–" and none["m5_before"] == "–"


def test_causal_phrases_follow_the_ablation_the_patching_and_the_relabelling():
    A = {"addition": pd.Series([0.957, 1.0]), "addition_clean": pd.Series([0.98, 1.0]),
         "variables": pd.Series([0.138, 0.52]), "variables_clean": pd.Series([0.97, 1.0]),
         "with_distractor": pd.Series([0.124, 0.264]), "without_distractor": 0.37, "broken": True, "kept": True}
    pa = pd.DataFrame({"clean": {"1var_train": 1.0}, "ablated at values": {"1var_train": 0.106},
                       "ablated at eq": {"1var_train": 0.211}})
    PT = {"value": pd.Series([0.983, 1.0]), "redirect": pd.Series([0.964, 1.0])}
    RL = {"n": 826, "attention": 1.0, "answer": 0.984, "kept": 0.004}
    found = words.causal(A, pa, PT, RL, 59)
    assert found["split_words"] == "the variable queries break and addition stays" and found["chance_side"] == "above"
    assert found["fetched"] == "is fetched" and found["label_match"].startswith("finds its operand")
    assert found["one_values"] == "0.106" and found["two_clean"] == "–"  # a pool not in the table
    assert found["without_distractor"] == "37 %" and found["chance_level"] == "1/59"
    worse = words.causal({**A, "broken": False, "with_distractor": pd.Series([0.01])}, pa,
                         {**PT, "redirect": pd.Series([0.5])}, {**RL, "answer": 0.3}, 59)
    assert worse["split_words"].startswith("the variable queries and addition do not split")
    assert worse["chance_side"] == "below" and worse["fetched"] == "is not only fetched"
    assert worse["label_match"] == "does not only match the label layer 1 copied"


def test_departure_phrases_or_dashes_without_the_dense_re_run():
    assert set(words.departure(None, 12).values()) == {"12", "–"}
    low = pd.DataFrame({"m3_l2_var_identity_qk": [0.0, 0.25], "1var_train": [0.918, 0.947],
                        "2var_train": [0.768, 0.94]})
    after = pd.DataFrame({"diagonal contrast": [0.53, 1.11], "relabel: attention follows": [0.856, 0.937],
                          "relabel: answer follows": [0.636, 0.867]})
    DP = {"run": "seed51", "peak_m3": 0.833, "peak": 4101, "fall": 5001, "end": 8600, "low": low, "after": after,
          "same": 86, "common": 86, "held": True}
    found = words.departure(DP, 12)
    assert found["dep_run"] == "seed 51" and found["dep_2var_trend"] == "rising" and found["dep_same"] == "all 86 steps"
    assert found["dep_match"] == "is there throughout" and found["dep_proxy"].startswith("a proxy")
    assert words.departure({**DP, "held": False}, 12)["dep_proxy"] == "not only a proxy: the mechanism departs too"
