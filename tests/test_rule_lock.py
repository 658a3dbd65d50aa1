"""The rule lock: a rule's words, code or levels cannot change without a dated record of what, why and the verdicts
before and after."""
from __future__ import annotations

import json

import pytest

from assignadd_core.report import rule_lock, rule_reach
from assignadd_core.rules import paper, verdicts
from assignadd_core.analysis import generality, odds, thresholds
from assignadd_core.cli import main


def test_every_rule_is_registered_as_it_is():
    """Fails on any unrecorded change of a rule: record it with `python -m assignadd_core rules record CLAIM --what
    ... --why ... --before ... --after ...` (the verdicts under the old and the new rule)."""
    assert rule_lock.unrecorded() == [], "rules changed without a record"
    lock = rule_lock.read_lock()
    assert set(lock) == set(verdicts.RULES) == set(rule_lock.PARTS)
    for claim, entry in lock.items():
        assert entry["first_verdict"] and entry["first_basis"]
        for change in entry["history"]:
            assert all(str(change[k]).strip() for k in rule_lock.REQUIRED), (claim, change)


@pytest.mark.parametrize("claim, module, level, value", [
    ("C9", verdicts, "C9_RESAMPLES", 1000), ("C2", verdicts, "HELDOUT_MARGIN", 0.02),
    ("R2", verdicts, "ODDS_LEVEL", 0.1)])
def test_changing_one_level_is_caught(monkeypatch, claim, module, level, value):
    monkeypatch.setattr(module, level, value)
    assert claim in rule_lock.unrecorded()


def test_changing_a_level_the_study_sets_is_caught(monkeypatch):
    """C10's design and the paper's numbers are read from the study profile: another value there is another rule."""
    profile = verdicts.study_profile()
    changed = {**profile, "c10": {**profile["c10"], "onset": {**profile["c10"]["onset"], "window": 1234}}}
    monkeypatch.setattr(verdicts, "study_profile", lambda: changed)
    assert rule_lock.unrecorded() == ["C10", "R3"]  # R3's double hold reads C10's window
    monkeypatch.undo()
    monkeypatch.setattr(paper.PaperNumber, "value", property(lambda self: 0.5))
    assert {"C2", "C8", "C9"} <= set(rule_lock.unrecorded())


def test_changing_a_rule_s_words_or_code_is_caught(monkeypatch):
    monkeypatch.setattr(verdicts, "RULES", {**verdicts.RULES, "C3": verdicts.RULES["C3"] + " (and something else)"})
    assert rule_lock.unrecorded() == ["C3"]
    monkeypatch.undo()
    real = rule_lock.components

    def edited(claim):
        parts = real(claim)
        if claim == "C5":
            parts["functions"]["verdicts.c5_identity"] += "    # a changed line\n"
        return parts
    monkeypatch.setattr(rule_lock, "components", edited)
    assert rule_lock.unrecorded() == ["C5"]


def test_a_change_is_recorded_with_what_why_and_both_verdicts(tmp_path, monkeypatch, capsys):
    path = tmp_path / "rules.lock.json"
    path.write_text(rule_lock.LOCK_PATH.read_text())
    recorded = len(json.loads(path.read_text())["C3"]["history"])
    monkeypatch.setattr(rule_lock, "LOCK_PATH", path)
    monkeypatch.setattr(verdicts, "POOL_LEVEL", 0.97)
    assert main(["rules"]) == 1 and "C3" in capsys.readouterr().out
    assert main(["rules", "record", "C3", "--what", "pool level 0.95 -> 0.97"]) == 2  # why and verdicts missing
    assert "needs why" in capsys.readouterr().err
    args = ["rules", "record", "C3", "--what", "pool level 0.95 -> 0.97", "--why", "a test", "--before", "partly",
            "--after", "not reproduced"]
    assert main(args) == 0 and main(["rules"]) == 0
    history = json.loads(path.read_text())["C3"]["history"]
    assert history[-1]["verdict_after"] == "not reproduced" and len(history) == recorded + 1
    assert history[-1]["decision_changed"]
    assert rule_lock.first_verdict("C3", json.loads(path.read_text()))[0] == "reproduced"  # the first rule's


def test_unchanged_rules_show_no_first_rule_verdict():
    assert rule_lock.first_verdict("C5") is None  # never changed
    assert rule_lock.first_verdict("C9")[0] == "not reproduced"


# ---------------------------------------------------------------------------- no holes: every verdict input is locked
def test_every_function_and_constant_a_verdict_reads_is_in_its_parts():
    """Follows each verdict's calls from its entry points (`rule_reach.READS`) and fails naming every function or
    constant reached that the claim's fingerprint does not hold: add it to `rule_lock.PARTS` and record the claim."""
    assert set(rule_reach.READS) == set(rule_lock.PARTS)
    holes = {claim: rule_reach.missing(claim) for claim in rule_lock.PARTS}
    assert not any(holes.values()), "verdict inputs missing from the rule lock:\n" + "\n".join(
        f"  {claim}: {part} ({path})" for claim, found in holes.items() for part, path in found.items())


def test_a_part_taken_out_of_the_lock_is_named_with_the_calls_that_reach_it(monkeypatch, capsys):
    functions, *levels = rule_lock.PARTS["C8"]
    kept = tuple(f for f in functions if f is not thresholds.seed_crossings)
    levels = [(module, tuple(n for n in names if n != "LEARNED_LEVEL")) for module, names in levels]
    monkeypatch.setitem(rule_lock.PARTS, "C8", (kept, *levels))
    holes = rule_reach.missing("C8")
    assert set(holes) == {"thresholds.seed_crossings", "verdicts.LEARNED_LEVEL"}  # an entry point, a level it reads
    assert holes["verdicts.LEARNED_LEVEL"].endswith("verdicts.composed -> verdicts.LEARNED_LEVEL")
    monkeypatch.setattr(rule_lock, "unrecorded", lambda: [])  # the fingerprint changed too: here only the holes
    assert main(["rules"]) == 1
    out = capsys.readouterr().out
    assert "reads thresholds.seed_crossings (thresholds.seed_crossings), not in its parts" in out


@pytest.mark.parametrize("claim, module, level", [
    ("R2", odds, "SD_PRIOR_SCALE"),  # a default argument (fit_crossed's prior scale)
    ("C9", verdicts, "C9_RESAMPLES"),  # imported inside the function (logistic_threshold)
    ("G2", generality, "M6")])  # reached from a part only (found_roles), not from an entry point
def test_levels_read_as_defaults_or_local_imports_are_found(monkeypatch, claim, module, level):
    functions, *groups = rule_lock.PARTS[claim]
    groups = [(m, tuple(n for n in names if not (m is module and n == level))) for m, names in groups]
    monkeypatch.setitem(rule_lock.PARTS, claim, (functions, *groups))
    assert f"{module.__name__.rsplit('.', 1)[-1]}.{level}" in rule_reach.missing(claim)


def test_the_follower_stays_on_the_claim_s_branch_and_inside_the_boundary():
    reached = rule_reach.reached("C4")
    assert "verdicts.c4_previous_token" in reached and "per_seed.values_of" in reached
    assert "verdicts.c5_identity" not in reached  # per_seed.rule's C5 branch is not C4's
    assert not [part for part in reached if part.split(".")[0] in ("series", "quantities", "measures", "model")]
    assert "verdicts.REPRODUCED" not in reached and "verdicts.Verdict" not in reached  # OUTSIDE: words, container
    for claim, entries in rule_reach.READS.items():
        assert all(not rule_reach._outside_module(f.__module__) for f in entries), claim


def test_a_fingerprint_holds_no_memory_address_or_path():
    for claim in rule_lock.PARTS:
        text = json.dumps(rule_lock.components(claim))
        assert " at 0x" not in text and "/runs/" not in text, claim
