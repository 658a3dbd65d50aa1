"""The phase detector on synthetic training curves with known transitions."""
import numpy as np
import pandas as pd
import pytest

from assignadd_core.analysis.phases import detect_phases, phases_table
from assignadd_core.data import POOL_NAMES


def sigmoid(steps, center, width):
    return 1 / (1 + np.exp(-(steps - center) / width))


def synthetic(addition=800, jump=5300, refinement=15000, refine=True):
    steps = np.arange(1, 40001, 100)
    add = sigmoid(steps, addition, 100)
    var = 0.4 + 0.58 * sigmoid(steps, jump, 30)
    restricted = 0.3 + 0.3 * sigmoid(steps, jump, 30) - 0.2 * sigmoid(steps, jump + 500, 100)
    if refine:
        restricted = restricted + 0.58 * sigmoid(steps, refinement, 300)
    table = {"step": steps, "loss": 1.0}
    for name in POOL_NAMES:
        table[name] = restricted if "var_restricted" in name else (add if name.startswith("0var") else var)
    table["m3_l2_var_identity_qk"] = 0.1 + 0.9 * sigmoid(steps, jump, 30)
    return pd.DataFrame(table)


def test_finds_all_three_phases_where_they_were_put():
    phases = detect_phases(synthetic())
    assert phases["addition_first"] is True
    assert 800 <= phases["addition"] <= 1200
    assert abs(phases["jump"] - 5300) <= 100
    assert phases["refinement_start"] < phases["refinement"] < phases["refinement_end"]
    assert abs(phases["refinement"] - 15000) <= 200


def test_transitions_move_with_the_curves():
    early, late = detect_phases(synthetic(jump=3000)), detect_phases(synthetic(jump=9000))
    assert early["jump"] < 3200 and late["jump"] > 8800


def test_rise_while_addition_is_learned_is_not_the_jump():
    table = synthetic(addition=800, jump=12000)
    early = (np.arange(1, 40001, 100) < 900) & (np.arange(1, 40001, 100) > 500)
    table.loc[early, "1var_train"] = 0.9  # a spike during phase 1
    assert abs(detect_phases(table)["jump"] - 12000) <= 100


def test_missing_refinement_is_reported_as_none():
    phases = detect_phases(synthetic(refine=False))
    assert phases["jump"] is not None
    assert phases["refinement"] is None and phases["refinement_end"] is None


def test_flat_curves_have_no_jump():
    flat = synthetic()
    for name in ("1var_train", "2var_train", "m3_l2_var_identity_qk"):
        flat[name] = 0.5
    assert detect_phases(flat)["jump"] is None


def test_variables_learned_before_addition_is_flagged():
    table = synthetic(addition=9000, jump=3000)
    assert detect_phases(table)["addition_first"] is False


def test_missing_column_is_a_clear_error():
    with pytest.raises(ValueError, match="lacks column"):
        detect_phases(synthetic().drop(columns=["2var_train"]))


def test_table_has_paper_row():
    table = phases_table({"a": synthetic()})
    assert list(table["run"]) == ["a", "paper"]
