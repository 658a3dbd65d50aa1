"""The rule lock: a rule's words, code or levels cannot change without a dated record of what, why and the verdicts
before and after."""
from __future__ import annotations

import json

import pytest

from assignadd_core import rule_lock, verdicts
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
    ("C9", verdicts, "C9_INCONCLUSIVE_WIDTH", 0.3), ("C2", verdicts, "HELDOUT_MARGIN", 0.02),
    ("R2", verdicts, "ODDS_LEVEL", 0.1)])
def test_changing_one_level_is_caught(monkeypatch, claim, module, level, value):
    monkeypatch.setattr(module, level, value)
    assert claim in rule_lock.unrecorded()


def test_changing_a_rule_s_words_or_code_is_caught(monkeypatch):
    monkeypatch.setitem(verdicts.RULES, "C3", verdicts.RULES["C3"] + " (and something else)")
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
