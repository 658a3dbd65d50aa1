"""Rules and verdicts as the chapters show them: wrapped HTML for the book, one plain line for nbval."""
import pandas as pd

from assignadd_core import present, verdicts
from assignadd_core.verdicts import PARTLY, REPRODUCED, Verdict


def test_rule_box_states_the_rule_and_folds_its_history():
    box = present.Rule("C7")
    assert repr(box) == f"C7 rule: {verdicts.RULES['C7']}"
    html = box._repr_html_()
    assert "Rule for C7" in html and "<details><summary>How this rule changed</summary>" in html
    assert "2026-12" in html and "10.9 % of their active neurons" in html
    assert "<details>" not in present.Rule("C5")._repr_html_()  # never changed


def test_result_box_carries_the_verdict_colour_and_escapes_the_text():
    result = present.Result("C3", Verdict(PARTLY, "lowest pool 0.87 < 0.9"), note="old rule: partly")
    assert repr(result) == "C3: partly — lowest pool 0.87 < 0.9 (old rule: partly)"
    html = result._repr_html_()
    assert present.VERDICT_COLORS[PARTLY] in html and "0.87 &lt; 0.9" in html and "old rule: partly" in html


def test_seed_verdicts_table_joins_the_numbers():
    rows = {"seed42": Verdict(REPRODUCED, "a"), "seed51": Verdict(PARTLY, "b")}
    table = present.seed_verdicts(rows, pd.DataFrame({"x": {"seed42": 1.0, "seed51": 0.5}}))
    assert list(table.columns) == ["x", "verdict", "deciding numbers"] and table.index.name == "seed"
    assert table.loc["seed51", "verdict"] == PARTLY


def test_display_names_replace_keys_in_tables():
    from assignadd_core.names import label, readable
    assert label("2var_var_restricted_1") == "2-var var-restricted (1)" and label("unknown_key") == "unknown_key"
    frame = pd.DataFrame({"m3_l2_var_identity_qk": [1.0]}, index=["0var_heldout"])
    shown = readable(frame)
    assert list(shown.columns) == ["3 layer-2 variable identity QK"] and list(shown.index) == ["exact: 0-var held-out"]
