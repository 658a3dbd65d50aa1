"""Every verdict rule produces each of its outcomes on hand-made numbers, and the boundaries sit where the
rule text says."""
from __future__ import annotations

import pytest

from assignadd_core import verdicts as v
from assignadd_core.verdicts import NOT_REPRODUCED, NOT_YET_RUN, PARTLY, REPRODUCED


def phases(addition=500, jump=3600, refinement=9800, first=True):
    return {"addition": addition, "addition_first": first, "jump": jump, "refinement": refinement}


def test_rules_are_stated_for_every_claim():
    assert set(v.RULES) == {f"C{i}" for i in range(1, 11)} | {"R1"}
    assert all(len(text) > 40 for text in v.RULES.values())


def test_verdict_refuses_an_unknown_word():
    with pytest.raises(ValueError):
        v.Verdict("mostly", "")


@pytest.mark.parametrize("runs, expected", [
    ({"a": phases(), "b": phases(jump=3400, refinement=8000)}, REPRODUCED),
    ({"a": phases(), "b": phases(jump=None, refinement=None)}, REPRODUCED),  # b never composed: not C1's question
    ({"a": phases(), "b": phases(refinement=None)}, PARTLY),
    ({"a": phases(first=False), "b": phases(refinement=None)}, NOT_REPRODUCED),
    ({"a": phases(jump=9900)}, NOT_REPRODUCED),  # jump after the final rise
    ({"a": phases(addition=4000, jump=3600)}, NOT_REPRODUCED),  # addition after the jump
    ({"a": phases(jump=None, refinement=None)}, NOT_REPRODUCED),  # nothing composed
])
def test_c1(runs, expected):
    result = v.c1_phases(runs)
    assert result.verdict == expected
    assert f"{len(v.composed(runs))} of {len(runs)} runs" in result.text


@pytest.mark.parametrize("full, swap, expected", [
    ({"a": 0.99, "b": 0.985}, {"a": 0.97, "b": 0.95}, REPRODUCED),
    ({"a": 0.99, "b": 0.985}, {"a": 0.97, "b": 0.94}, PARTLY),  # commutativity could carry it
    ({"a": 0.99, "b": 0.983}, {"a": 0.99, "b": 0.99}, PARTLY),  # one run a hair under the paper minus a point
    ({"a": 0.5, "b": 0.89}, {"a": 0.99, "b": 0.99}, NOT_REPRODUCED),
])
def test_c2(full, swap, expected):
    assert v.c2_heldout(full, swap).verdict == expected


def test_c3_reads_only_runs_that_composed():
    pools = {"a": {"p1": 0.99, "p2": 0.96, "p3": 0.95}, "b": {"p1": 0.2, "p2": 0.1, "p3": 0.3},
             "c": {"p1": 0.99, "p2": 0.94, "p3": 0.99}}
    assert v.c3_positions(pools, ["a"]).verdict == REPRODUCED
    assert v.c3_positions(pools, ["a", "c"]).verdict == PARTLY
    assert v.c3_positions(pools, ["c"]).verdict == NOT_REPRODUCED
    assert v.c3_positions(pools, []).verdict == NOT_REPRODUCED


@pytest.mark.parametrize("args, expected", [
    ((1.0, 0.97, 0.3, 0.95), REPRODUCED),
    ((1.0, 0.97, 0.6, 0.95), PARTLY),  # the copy is not what lookup needs
    ((0.5, 0.97, 0.3, 0.95), PARTLY),
    ((1.0, 0.97, 0.3, 0.85), PARTLY),  # the ablation broke addition too: not isolated
    ((0.5, 0.5, 0.6, 0.95), NOT_REPRODUCED),
])
def test_c4(args, expected):
    assert v.c4_previous_token(*args).verdict == expected


@pytest.mark.parametrize("args, expected", [
    ((0.95, 0.92, 0.85, 0.81), REPRODUCED),
    ((0.95, 0.92, 0.85, 0.79), PARTLY),
    ((0.5, 0.92, 0.85, 0.85), PARTLY),
    ((0.5, 0.5, 0.5, 0.5), NOT_REPRODUCED),
])
def test_c5(args, expected):
    assert v.c5_identity(*args).verdict == expected


@pytest.mark.parametrize("matched, ceiling, baselines, patch, expected", [
    (0.97, 0.99, {"same sum": 0.3, "one operand": 0.6, "unrelated": 0.1}, 0.99, REPRODUCED),
    (0.97, 0.99, {"same sum": 0.3, "one operand": 0.8, "unrelated": 0.1}, 0.99, NOT_REPRODUCED),  # gap 0.17
    (0.97, 0.99, {"same sum": 0.3, "one operand": 0.6, "unrelated": 0.1}, 0.90, PARTLY),
    (0.92, 0.99, {"same sum": 0.3, "one operand": 0.6, "unrelated": 0.1}, 0.99, PARTLY),  # below the ceiling
])
def test_c6(matched, ceiling, baselines, patch, expected):
    result = v.c6_shared_addition(matched, ceiling, baselines, patch)
    assert result.verdict == expected
    assert max(baselines, key=baselines.get) in result.text  # names the hardest baseline


@pytest.mark.parametrize("args, expected", [
    ((5, 0.6, 0.93, 0.4), REPRODUCED),
    ((5, 0.5, 0.93, 0.4), PARTLY),  # exactly half is not "more than half"
    ((8, 0.9, 0.95, 0.4), NOT_REPRODUCED),  # too many key frequencies
    ((0, 0.9, 0.95, 0.4), NOT_REPRODUCED),
    ((5, 0.9, 0.40, 0.4), NOT_REPRODUCED),  # no better than the null
])
def test_c7(args, expected):
    assert v.c7_fourier(*args).verdict == expected


@pytest.mark.parametrize("n, grad, update, expected", [
    (10, (0.1, 0.5), (0.02, 0.3), REPRODUCED),
    (10, (0.1, 0.5), (-0.02, 0.3), PARTLY),
    (10, (-0.98, 1.12), (-0.5, 0.3), NOT_REPRODUCED),  # an interval that straddles the isotropic value
    (2, (0.1, 0.5), (0.1, 0.5), NOT_YET_RUN),
])
def test_c10(n, grad, update, expected):
    assert v.c10_gradient(n, grad, update).verdict == expected
