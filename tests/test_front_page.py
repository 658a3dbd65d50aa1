"""The results up front: the intro's scoreboard and hero figure and the README's table, generated from the
committed records, idempotent, and failing loudly where their markers are missing."""
import json
import re

import pytest

from assignadd_core.report import claims, front_page
from assignadd_core.report.claims import CLAIMS
from assignadd_core.rules import paper
from assignadd_core.core.run_folder import DEFAULT_ROOT


def test_scoreboard_has_one_line_per_claim_with_the_recorded_verdicts(tmp_path):
    claims.record_claim("C7", ours="7 frequencies", verdict="partly", root=tmp_path)
    claims.record_authors("C7", "reproduced", "theirs", root=tmp_path)
    table = front_page.scoreboard(tmp_path)
    lines = table.splitlines()
    assert lines[0] == ":::{container} scoreboard cards-when-narrow" and lines[-1] == ":::"  # cards on a phone
    assert len(lines) == 4 + len(CLAIMS) and lines[1] == "| claim | ours | authors' weights |"
    c7 = next(line for line in lines if line.startswith("| **C7**"))
    assert ">partly</span>" in c7 and ">reproduced</span>" in c7 and "(chapters/08_fourier.ipynb)" in c7
    assert "<small>the paper: " in c7.split(" | ")[0]  # the paper's number under the claim
    c1 = next(line for line in lines if line.startswith("| **C1**"))
    cells = [cell.strip() for cell in c1.strip("| ").split(" | ")]
    assert len(cells) == 3 and ">not yet run</span>" in cells[1] and cells[2] == "—"  # no authors' verdict
    assert "first rule: <span" in cells[1] and ">reproduced</span>" in cells[1]  # C1's rule changed its verdict
    c5 = next(line for line in lines if line.startswith("| **C5**"))
    assert "first rule" not in c5  # a rule never changed: no first-rule note
    committed = front_page.scoreboard(DEFAULT_ROOT).splitlines()
    c2 = next(line for line in committed if line.startswith("| **C2**"))
    assert ">reproduced</span>" in c2 and "first rule" not in c2  # changed, the verdict the same: no note either
    assert front_page.readme_table(tmp_path).count("\n") == 1 + len(CLAIMS)


def test_hero_is_a_plotly_div_of_the_main_run():
    html = front_page.hero_html(DEFAULT_ROOT / "seed42" / "metrics.csv")
    payload = json.loads(re.search(r"var f = (\{.*?\});", html).group(1))
    assert [t["name"].split(" (")[0] for t in payload["data"]] == ["0-var train", "1-var train",
                                                                  "var-restricted pools, mean"]
    assert max(payload["data"][0]["x"]) <= paper.MAIN_STEPS.value and len(payload["data"][1]["y"]) > 100


def test_update_rewrites_between_markers_only_and_is_idempotent(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("before\n<!-- scoreboard:start -->\nold\n<!-- scoreboard:end -->\nafter\n")
    assert front_page.update(page, {front_page.SCOREBOARD: "new"})
    assert page.read_text() == "before\n<!-- scoreboard:start -->\nnew\n<!-- scoreboard:end -->\nafter\n"
    assert not front_page.update(page, {front_page.SCOREBOARD: "new"})
    with pytest.raises(ValueError, match="lacks the <!-- hero:start -->"):
        front_page.update(page, {front_page.HERO: "x"})


def test_chapter_times_are_kept_from_the_execution_that_changed_the_chapter(tmp_path):
    from assignadd_core.report import book
    times = tmp_path / "times.json"
    book.record_time("02_training_phases", 61.4, changed=True, path=times)
    book.record_time("02_training_phases", 75.0, changed=False, path=times)  # same bytes: the time stays
    assert json.loads(times.read_text()) == {"02_training_phases": 61}
    book.record_time("02_training_phases", 75.0, changed=True, path=times)
    book.record_time("01_task_and_model", 9.6, changed=False, path=times)  # a first time is always kept
    assert json.loads(times.read_text()) == {"01_task_and_model": 10, "02_training_phases": 75}


def test_a_tree_without_the_committed_runs_keeps_its_hero_figure(tmp_path, monkeypatch, capsys):
    """`book build` in a copy of the sources (no runs/): the scoreboard is rewritten, the hero left as it was."""
    from assignadd_core.report import book
    intro, readme = tmp_path / "intro.md", tmp_path / "README.md"
    intro.write_text(book.INTRO.read_text())
    readme.write_text(book.README.read_text())
    monkeypatch.setattr(book, "ROOT", tmp_path)
    monkeypatch.setattr(book, "INTRO", intro)
    monkeypatch.setattr(book, "README", readme)
    hero = front_page.HERO
    before = intro.read_text().split(hero[0])[1].split(hero[1])[0]
    book.update_front_page()
    assert intro.read_text().split(hero[0])[1].split(hero[1])[0] == before
    assert "hero figure is left as it was" in capsys.readouterr().out


def test_the_tally_counts_the_recorded_verdicts_and_the_authors_weights(tmp_path):
    claims.record_claim("C2", ours="10 of 10 seeds reproduce it", verdict="reproduced", root=tmp_path)
    claims.record_claim("C3", ours="3 of 5 composed seeds reproduce it; not in seed50 (fails: pool 0.93 (needs 0.95))",
                        verdict="partly", root=tmp_path)
    claims.record_authors("C2", "reproduced", "theirs", root=tmp_path)
    claims.record_authors("C3", "partly", "theirs", root=tmp_path)
    text = front_page.tally(tmp_path)
    assert "**1 reproduced**" in text and "**1 partly**" in text and "**8 not yet run**" in text
    assert "reproduce 1 of the 2 a final model can test" in text
    board = front_page.scoreboard(tmp_path)
    c3 = next(line for line in board.splitlines() if line.startswith("| **C3**"))
    assert "<small>3 of 5 composed seeds reproduce it; not in seed50 (fails: pool 0.93 (needs 0.95))</small>" in c3


def test_a_short_result_keeps_the_first_clause_and_the_reasons_and_folds_the_rest_of_a_long_clause():
    assert front_page.short_result("4 of 5 seeds; partly in seed51 (fails: gap 0.057); extra detail") == \
        ("4 of 5 seeds; partly in seed51 (fails: gap 0.057)", "")
    long = "logistic fit: r* = 0.177 (success 50 %), 95 % interval 0.024–0.313 over 5 seeds resampled (width 0.290, x)"
    lead, detail = front_page.short_result(long, limit=60)  # nothing cut: the rest is folded, not dropped
    assert (lead, detail) == ("logistic fit: r* = 0.177 (success 50 %)",
                              "95 % interval 0.024–0.313 over 5 seeds resampled (width 0.290, x)")
    # a "; " or ", " inside brackets ends no clause: an interval is never split
    assert front_page.short_result("5 of 10 (50%; 95 % interval 19%–81%) composed; 4 of 10 with all three") == \
        ("5 of 10 (50%; 95 % interval 19%–81%) composed", "")
    lead, detail = front_page.short_result("blocked in 3 of 3 seeds whose twin composed (seed 42: at 2,601; seed 44:"
                                           " at 3,201)", limit=20)  # no cut before the limit: the first after it
    assert lead == "blocked in 3 of 3 seeds whose twin composed" and detail == "(seed 42: at 2,601; seed 44: at 3,201)"
    assert front_page.short_result("") == ("", "")
    board = front_page.scoreboard(DEFAULT_ROOT)
    assert "…" not in board and "..." not in board and "<details><summary>more</summary>" in board


def test_the_hero_spans_the_whole_run_with_the_papers_windows():
    html = front_page.hero_html(DEFAULT_ROOT / "seed42" / "metrics.csv")
    payload = json.loads(re.search(r"var f = (\{.*?\});", html).group(1))
    assert max(payload["data"][0]["x"]) > 30_000
    rects = [s for s in payload["layout"]["shapes"] if s["type"] == "rect"]
    assert [(r["x0"], r["x1"]) for r in rects] == [(5300, 5400), (14500, 16000)]
    assert any(a["text"].startswith("our jump") for a in payload["layout"]["annotations"])


def test_the_columns_sentence_explains_every_column_of_the_scoreboard(tmp_path):
    header = front_page.scoreboard(tmp_path).splitlines()[1]
    sentence = front_page.columns_sentence()
    for name, _ in front_page.COLUMNS:
        assert f" {name} |" in header and f"*{name}*" in sentence
    assert "the verdict its first rule gave" in sentence  # the first rule's verdict, in the column ours
    assert "R1, R2 and R3 are this book's own findings" in sentence  # the findings, from the claims (not typed)
    assert front_page.tally(tmp_path).endswith(sentence)


def test_the_circuit_diagram_is_drawn_from_the_palette_and_the_task():
    from assignadd_core.report import diagram
    from assignadd_core.report.palette import PARTS
    assert [node.part for node in diagram.nodes()] == list(PARTS)  # tokens, copy, lookup, move, MLP, answer
    assert diagram.nodes()[-1].detail == ("(40 + 27) mod 59 = 8",)
    assert diagram.nodes(modulus=61)[-1].detail == ("(40 + 27) mod 61 = 6",)  # the words follow the task
    figure = diagram.circuit_html()
    assert "\n\n" not in figure  # one HTML block for Markdown
    assert figure.count("<svg") == 2 and 'class="circuit-wide"' in figure and 'class="circuit-tall"' in figure
    for colour in PARTS.values():
        assert f'stroke="{colour}"' in figure
    assert 'fill="currentColor"' in figure and "#000" not in figure  # text in the page's colour, light or dark


def test_the_intro_holds_the_current_circuit_diagram():
    from assignadd_core.report import book, diagram
    text = book.INTRO.read_text()
    start, end = front_page.CIRCUIT
    assert text.split(start)[1].split(end)[0].strip() == diagram.circuit_html(), "run the build"
    assert text.index(start) < text.index(front_page.TALLY[0])  # the diagram before the tally
