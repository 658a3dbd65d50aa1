"""Rules and verdicts as the chapters show them: wrapped HTML for the book, one plain line for nbval."""
import pytest
import pandas as pd

from assignadd_core.report import present
from assignadd_core.rules import verdicts
from assignadd_core.rules.verdicts import PARTLY, REPRODUCED, Verdict


def test_rule_box_states_the_rule_and_folds_its_history():
    box = present.Rule("C7")
    assert repr(box) == f"C7 rule: {verdicts.RULES['C7']}"
    html = box._repr_html_()
    assert "Rule for C7" in html and "<details><summary>How this rule changed</summary>" in html
    assert "2026-12" in html and "10.9 % of their active neurons" in html
    assert html.startswith('<details class="rule-box"><summary>Rule for C7')  # folded: the rule is a click away
    assert "How this rule changed" not in present.Rule("C5")._repr_html_()  # never changed


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
    from assignadd_core.report.names import label, readable
    assert label("2var_var_restricted_1") == "2-var var-restricted (1)" and label("unknown_key") == "unknown_key"
    frame = pd.DataFrame({"m3_l2_var_identity_qk": [1.0]}, index=["0var_heldout"])
    shown = readable(frame)
    assert list(shown.columns) == ["3 layer-2 variable identity QK"] and list(shown.index) == ["exact: 0-var held-out"]
    indexed = readable(pd.DataFrame({"1var_train": [0.5]}, index=pd.Index([0.01], name="two_var_rate")))
    assert indexed.index.name != "two_var_rate" and "two_var_rate" not in str(indexed.to_html())
    assert list(indexed.index) == [0.01]  # the values stay as they are


def test_result_box_folds_every_seeds_numbers_and_keeps_the_count_open():
    verdict = verdicts.over_seeds({"seed42": Verdict(REPRODUCED, "jump 2,701"), "seed51": Verdict(PARTLY, "no jump")})
    html = present.Result("C1", verdict)._repr_html_()
    lead, folded = html.split("<details>", 1)
    assert "1 of 2" in lead and "per seed" not in lead and "seed42 jump 2,701" in folded


def test_a_box_inside_a_fold_shows_every_seeds_numbers_without_a_second_fold():
    verdict = verdicts.over_seeds({"seed42": Verdict(REPRODUCED, "jump 2,701"), "seed51": Verdict(PARTLY, "no jump")})
    html = present.Result("C1", verdict, seeds_open=True)._repr_html_()
    assert "<details>" not in html and "1 of 2" in html and "seed42 jump 2,701" in html


def test_key_results_box_states_question_paper_ours_and_why():
    box = present.KeyResults("Does training go through three phases?",
                             present.Quote("a jump at steps 5,300–5,400", "the paper's training-dynamics figure"),
                             [present.Answer.of("C1", Verdict(PARTLY, "x"), "4 of 5 composed seeds; 1var_train")],
                             why="one seed composes without a jump")
    html = box._repr_html_()
    for part in ("Does training go through three phases?", "“a jump at steps 5,300–5,400”",
                 "(the paper&#x27;s training-dynamics figure)", "<b>C1</b> 4 of 5 composed seeds; 1-var train",
                 present.VERDICT_COLORS[PARTLY], "one seed composes without a jump"):
        assert part in html, part
    assert html.startswith('<div class="key-results">')
    assert repr(box).splitlines()[2] == "  ours: [partly] C1 4 of 5 composed seeds; 1-var train"
    assert "same as the paper" in present.KeyResults("q", [], present.Answer("281,216 parameters", "same as the paper"),
                                                     "w")._repr_html_()
    import pytest
    with pytest.raises(ValueError, match="answer's verdict"):
        present.Answer("x", "sort of")
    with pytest.raises(ValueError, match="at least one answer"):
        present.KeyResults("q", [], [], "w")


def test_a_paper_number_carries_where_the_paper_states_it():
    from assignadd_core.rules.paper import F_THRESHOLD, JUMP_STEPS
    span = present.paper_number(JUMP_STEPS)
    assert span == ('<span class="paper-number" title="the paper: training-dynamics figure: the jump when variable'
                    ' assignment forms">5,300–5,400</span>')
    assert ">0.25<" in present.paper_number(F_THRESHOLD) and ">f ≈ 0.25<" in present.paper_number(F_THRESHOLD, "f ≈ 0.25")
    assert present.quote(JUMP_STEPS, "a jump").where == "the paper: training-dynamics figure"  # the place, short
    from assignadd_core.rules.paper import SEEDS_SHOWN
    assert present.quote(SEEDS_SHOWN, "one").where == SEEDS_SHOWN.where  # "the paper shows ...": no second "the paper"
    box = present.KeyResults("q", [], present.Answer("layer 1 sends no label from `=`", "finding"), "w")._repr_html_()
    assert "from <code>=</code>" in box


def test_seed_verdicts_can_show_only_what_a_seed_fell_short_of():
    rows = {"seed42": verdicts.c3_seed({"1var_var_restricted": 0.99, "2var_var_restricted_1": 0.98,
                                        "2var_var_restricted_2": 0.97}),
            "seed50": verdicts.c3_seed({"1var_var_restricted": 0.99, "2var_var_restricted_1": 0.98,
                                        "2var_var_restricted_2": 0.873})}
    table = present.seed_verdicts(rows, pd.DataFrame({"x": {"seed42": 1.0, "seed50": 0.5}}), why_only=True)
    assert list(table.columns) == ["x", "verdict", present.SHORT_OF]
    assert table.loc["seed42", present.SHORT_OF] == "–" and "0.873" in table.loc["seed50", present.SHORT_OF]
    partly = present.seed_verdicts({"seed51": Verdict(PARTLY, "composed 4,001, jump – (no sharp jump)")}, why_only=True)
    assert partly.loc["seed51", present.SHORT_OF] == "composed 4,001, jump – (no sharp jump)"  # names no failed check


def test_because_joins_phrases_into_one_sentence_and_leaves_out_empty_ones():
    from assignadd_core.report.present import because
    assert because("only 5 of 10 seeds compose", "", None, "seed 51 without a jump") == \
        "Only 5 of 10 seeds compose; seed 51 without a jump."
    assert because("Every seed composed.") == "Every seed composed."
    assert because() == ""


def test_a_key_results_box_takes_its_why_as_phrases():
    from assignadd_core.report.present import Answer, KeyResults, Quote
    box = KeyResults("q?", Quote("p", "the paper: x"), Answer("a", "finding"), why=["one reason", False, "another"])
    assert box.why == "One reason; another." and "<dd>One reason; another.</dd>" in box._repr_html_()


def test_a_history_is_folded_with_every_dated_item():
    from assignadd_core.report.present import History
    history = History("How the rule changed", [("2026-11", "first <rule>"), ("2026-12", "second")])
    assert repr(history) == "How the rule changed\n  2026-11: first <rule>\n  2026-12: second"
    page = history._repr_html_()
    assert page.startswith("<details") and "<summary>How the rule changed</summary>" in page
    assert "<li><b>2026-11</b>: first &lt;rule&gt;</li>" in page


def test_phrases_of_missing_runs_are_glued_as_missing_and_the_names_must_match(monkeypatch):
    glued = {}
    monkeypatch.setattr(present, "_glue", lambda name, value: glued.__setitem__(name, value))
    called = []
    present.glue_text_when(False, "a b", lambda: called.append(1) or {"a": "x", "b": "y"})
    assert glued == {"a": present.NOT_HERE, "b": present.NOT_HERE} and not called  # the phrases are not computed
    present.glue_text_when(True, "a b", lambda: {"a": "x", "b": 2})
    assert glued == {"a": "x", "b": "2"}
    with pytest.raises(ValueError, match="not the names stated"):
        present.glue_text_when(True, "a b c", lambda: {"a": "x", "b": "y"})


def test_a_verdicts_list_of_failed_checks_is_folded_behind_its_count():
    text = "2 of 4 cells pass their checks (not: 1/2 (sham measure 3 max 0.25 (needs ≥ 0.5)); 3/4 (x)); delayed"
    shown = present.Result("C10", Verdict(PARTLY, text))._repr_html_()
    assert "2 of 4 cells pass their checks <details" in shown and "</details>; delayed" in shown  # the count stays open
    assert "1/2 (sham measure 3 max 0.25 (needs ≥ 0.5)); 3/4 (x)</details>" in shown  # nested parentheses kept whole
    plain = present.Result("C10", Verdict(PARTLY, "no list here"))._repr_html_()
    assert "<details" not in plain and "<p>no list here</p>" in plain
