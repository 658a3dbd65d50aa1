"""The claim records, the claims table and its HTML, on temporary folders (fast: no notebook is executed;
`test_claims` checks the book driver and papermill end to end)."""
from __future__ import annotations

import json

import nbformat
import pandas as pd
import pytest

from assignadd_core.report import claims
from assignadd_core.report.claims import CLAIMS, CLAIMS_ENV, VERDICT_COLORS, VERDICTS
from assignadd_core.core.config import ConfigError
from assignadd_core.rules.verdicts import RULES


@pytest.fixture
def no_driver(monkeypatch, tmp_path):
    """Not the book build; the default runs folder is a temporary one."""
    monkeypatch.delenv(CLAIMS_ENV, raising=False)
    monkeypatch.setenv("ASSIGNADD_RUNS", str(tmp_path / "default"))
    return tmp_path


def test_every_claim_has_a_rule_or_is_the_finding():
    assert list(CLAIMS) == [f"C{i}" for i in range(1, 11)] + ["R1", "R2", "R3"]
    assert set(VERDICT_COLORS) == set(VERDICTS)


def test_unknown_claim_and_verdict_are_refused_with_the_choices(no_driver):
    with pytest.raises(ConfigError, match=r"^unknown claim 'C99'; claims are C1, C2, C3, .*, C10, R1, R2, R3$"):
        claims.record_claim("C99", ours="x", verdict="partly", root=no_driver)
    with pytest.raises(ConfigError, match=r"^verdict must be one of \('reproduced', .*'inconclusive'\), got 'mostly'$"):
        claims.record_claim("C1", ours="x", verdict="mostly", root=no_driver)
    assert not (no_driver / "claims").exists()


def test_outside_the_book_build_nothing_is_written_and_it_says_so(no_driver, capsys):
    assert claims.record_claim("C4", ours="x", verdict="partly") is None
    assert claims.write_claims_csv() is None
    assert capsys.readouterr().err == (
        "C4: not recorded (this execution is not the book build; the book's verdicts stay as they are)\n"
        "claims.csv: not written (this execution is not the book build)\n")
    assert not (no_driver / "default").exists()


def test_a_record_is_one_json_file_per_claim_overwritten_by_the_latest(no_driver):
    path = claims.record_claim("C2", ours="98.1 %", verdict="partly", root=no_driver)
    assert path == no_driver / "claims" / "C2.json"
    assert json.loads(path.read_text()) == {"claim": "C2", "ours": "98.1 %", "verdict": "partly", "details": {}}
    path = claims.record_claim("C2", ours="99.5 %", verdict="reproduced", details={"runs": ["a", "b"]},
                               root=no_driver)
    text = path.read_text()
    assert json.loads(text) == {"claim": "C2", "ours": "99.5 %", "verdict": "reproduced",
                                "details": {"runs": ["a", "b"]}}
    # committed files: keys sorted, indented by two spaces, one final newline (stable diffs)
    assert text.endswith("}\n") and text.index('"claim"') < text.index('"details"') < text.index('"ours"')
    assert text.splitlines()[1] == '  "claim": "C2",' and text.splitlines()[3] == '    "runs": ['
    assert sorted(p.name for p in (no_driver / "claims").iterdir()) == ["C2.json"]


def test_the_driver_folder_is_where_records_go_and_are_read(no_driver, monkeypatch):
    driver = no_driver / "driver" / "claims"
    monkeypatch.setenv(CLAIMS_ENV, str(driver))
    assert claims.records_dir() == driver
    assert claims.records_dir(no_driver / "mine") == no_driver / "mine" / "claims"  # a named folder wins
    assert claims.record_claim("C5", ours="y", verdict="not reproduced") == driver / "C5.json"
    assert claims.claims_table().set_index("claim").loc["C5", "verdict"] == "not reproduced"
    monkeypatch.delenv(CLAIMS_ENV)
    assert claims.records_dir() == no_driver / "default" / "claims"  # else the book's own


def test_the_default_claims_folder_follows_the_runs_folder_named_now(no_driver, monkeypatch):
    # read at the call: a module imported under another ASSIGNADD_RUNS must not keep writing there
    assert claims.claims_dir() == no_driver / "default" / "claims"
    monkeypatch.setenv("ASSIGNADD_RUNS", str(no_driver / "other"))
    assert claims.claims_dir() == no_driver / "other" / "claims"
    assert claims.claims_dir(no_driver / "given") == no_driver / "given" / "claims"


def test_claims_table_fills_in_what_was_not_recorded(no_driver):
    claims.record_claim("C7", ours="5 key frequencies", verdict="reproduced", root=no_driver)
    claims.record_claim("R1", ours="3 of 8 seeds", verdict="finding", root=no_driver)
    table = claims.claims_table(no_driver)
    assert list(table.columns) == ["claim", "statement", "paper", "ours", "verdict", "authors_weights", "authors_text",
                                   "rule", "chapter", "first_rule", "first_basis"]
    assert table.set_index("claim").loc["C9", "first_rule"] == "not reproduced"  # a changed rule's first verdict
    assert table.set_index("claim").loc["C5", "first_rule"] == "—"  # a rule that never changed
    assert list(table["claim"]) == list(CLAIMS)
    rows = table.set_index("claim")
    assert (rows.loc["C7", "ours"], rows.loc["C7", "verdict"]) == ("5 key frequencies", "reproduced")
    assert (rows.loc["R1", "ours"], rows.loc["R1", "verdict"]) == ("3 of 8 seeds", "finding")
    assert (rows.loc["C1", "ours"], rows.loc["C1", "verdict"]) == ("—", "not yet run")
    for key, claim in CLAIMS.items():
        assert rows.loc[key, "statement"] == claim.statement and rows.loc[key, "paper"] == claim.paper
        assert rows.loc[key, "chapter"] == claim.chapter and rows.loc[key, "rule"] == RULES[key]
        assert rows.loc[key, "authors_weights"] == "—" and rows.loc[key, "authors_text"] == ""


def test_the_rule_on_the_authors_weights_is_recorded_beside_ours(no_driver):
    claims.record_claim("C7", ours="ours", verdict="partly", root=no_driver)
    assert claims.record_authors("C7", "reproduced", "7 frequencies", root=no_driver) == (
        no_driver / "claims" / "authors" / "C7.json")
    rows = claims.claims_table(no_driver).set_index("claim")
    assert (rows.loc["C7", "verdict"], rows.loc["C7", "authors_weights"]) == ("partly", "reproduced")
    assert rows.loc["C7", "authors_text"] == "7 frequencies" and rows.loc["C6", "authors_weights"] == "—"
    with pytest.raises(ConfigError, match="verdict must be one of"):
        claims.record_authors("C7", "great", "", root=no_driver)
    assert claims.record_authors("C7", "reproduced", "x") is None  # not the book build: nothing written


def test_claims_csv_has_the_stable_columns(no_driver):
    claims.record_claim("C3", ours="0.97", verdict="reproduced", root=no_driver)
    path = claims.write_claims_csv(no_driver)
    assert path == no_driver / "claims.csv"
    csv = pd.read_csv(path, keep_default_na=False)
    assert list(csv.columns) == ["claim", "paper", "ours", "verdict", "authors_weights", "first_rule"]
    assert list(csv["claim"]) == list(CLAIMS)
    assert csv.set_index("claim").loc["C3", "ours"] == "0.97"
    assert csv.set_index("claim").loc["C4", "verdict"] == "not yet run"


def chapter(path, *cells):
    """A notebook of code cells, and markdown cells for the texts that start with "|"."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(c[1:]) if c.startswith("|") else nbformat.v4.new_code_cell(c)
                for c in cells]
    nbformat.write(nb, path)


def test_chapter_title_is_the_first_top_heading(tmp_path):
    chapter(tmp_path / "06_circuits.ipynb", "# a comment in code", "|intro\n## Sub", "|text\n# The circuits\n# Later")
    assert claims.chapter_title("chapters/06_circuits", tmp_path) == "The circuits"
    chapter(tmp_path / "08_fourier.ipynb", "|## only a subheading")
    assert claims.chapter_title("chapters/08_fourier", tmp_path) == "08_fourier"
    assert claims.chapter_title("chapters/09_theory", tmp_path) is None  # not built
    assert claims.chapter_title("08_fourier", tmp_path) == "08_fourier"  # a page name without its folder


def test_claims_html_colours_verdicts_escapes_text_and_links_built_chapters(tmp_path):
    chapter(tmp_path / "02_training_phases.ipynb", "|# Training <phases>")
    table = pd.DataFrame([
        {"claim": "C1", "statement": "a < b & c", "paper": "p", "ours": "o", "verdict": "partly",
         "authors_weights": "reproduced", "authors_text": "theirs > 0", "rule": "x > 0.9",
         "chapter": "chapters/02_training_phases"},
        {"claim": "C8", "statement": "s", "paper": "p", "ours": "—", "verdict": "not yet run",
         "authors_weights": "—", "authors_text": "", "rule": "r", "chapter": "chapters/10_data_thresholds"}])
    html = claims.claims_html(table, tmp_path)
    assert html.startswith('<table class="claims-table"><thead><tr><th>claim</th><th>statement</th><th>paper</th>'
                           "<th>verdict</th><th>under the first rule</th><th>authors' weights</th><th>chapter</th></tr></thead><tbody>")
    assert html.endswith("</tbody></table>") and html.count("<tr>") == 3
    assert ("<td><b>C1</b></td><td>a &lt; b &amp; c<details><summary>our numbers and the rule</summary>"
            "<p><b>Ours:</b> o</p><p><b>Same rule on the authors' weights:</b> theirs &gt; 0</p>"
            "<p><b>Rule:</b> x &gt; 0.9</p></details></td><td>p</td>") in html
    assert f'<span style="color:{VERDICT_COLORS["partly"]};font-weight:bold">partly</span>' in html
    assert f'<span style="color:{VERDICT_COLORS["reproduced"]};font-weight:bold">reproduced</span>' in html
    assert "<td>—</td>" in html  # no authors' verdict for C8
    assert '<td><a href="02_training_phases.html">Training &lt;phases&gt;</a></td>' in html
    assert "</tr><tr><td><b>C8</b></td>" in html and "<td>10_data_thresholds (not built yet)</td>" in html
    bare = claims.claims_html(table.assign(chapter=["02_training_phases", "10_data_thresholds"]), tmp_path)
    assert '<a href="02_training_phases.html">' in bare and "<td>10_data_thresholds (not built yet)</td>" in bare
    assert f'color:{VERDICT_COLORS["not yet run"]}' in html


def test_a_finding_with_no_record_yet_reads_not_yet_run(no_driver):
    claims.record_claim("R1", ours="3 of 8 seeds", verdict="finding", root=no_driver)
    rows = claims.claims_table(no_driver).set_index("claim")
    assert rows.loc["R3", "verdict"] == "not yet run" and rows.loc["R3", "ours"] == "—"  # chapter 9 records it
    assert rows.loc["R3", "chapter"] == "chapters/09_theory" and rows.loc["R3", "paper"] == "no statement"


def test_rule_changes_fold_every_changed_rule_with_its_first_verdict(no_driver):
    table = pd.DataFrame([
        {"claim": "C1", "verdict": "partly", "first_rule": "reproduced", "first_basis": "5 seeds"},
        {"claim": "C2", "verdict": "reproduced", "first_rule": "—", "first_basis": ""},
        {"claim": "C3", "verdict": "partly", "first_rule": "—", "first_basis": ""}])
    rules = {"C1": "r1", "C2": "r2", "C3": "r3", "G1": "g"}
    changes = {"C2": (("2026-12", "why <it> changed"),), "G1": (("2026-12-01", "a"), ("2026-12-02", "b"))}
    html = claims.rule_changes_html(table, rules, changes)
    assert html.count("<details") == 3 and "C3" not in html  # C3 never changed
    assert "<b>C1</b>: changed, under its first rule <b>reproduced</b>; now <b>partly</b>" in html
    assert "<b>C2</b>: one dated change; now <b>reproduced</b>" in html and "why &lt;it&gt; changed" in html
    assert "<b>G1</b>: 2 dated changes</summary>" in html  # a rule outside the table: no verdict to show
    assert claims.changed_rules(table, rules, changes) == ["C1", "C2", "G1"]
