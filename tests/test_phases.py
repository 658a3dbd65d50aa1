"""The phase detector on synthetic training curves with known transitions."""
import numpy as np
import pandas as pd
import pytest

from assignadd_core.analysis.phases import detect_phases, phases_table
from assignadd_core.core.data import POOL_NAMES


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
    assert 800 <= phases["addition"] <= 1300  # the smoothed curve crosses up to two rows late
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


def two_stage(jump=3400, plateau=0.55, final_rise=7900, noise=0.0, seed=0):
    """A jump, a quick partial rise of the var-restricted pools to a plateau, then the final rise; pool noise
    as a 2,000-sequence pool shows while a rule forms (one pool swinging between 0.04 and 0.84)."""
    rng = np.random.default_rng(seed)
    steps = np.arange(1, 40001, 100)
    table = synthetic(jump=jump, refine=False)
    restricted = plateau * sigmoid(steps, jump + 200, 50) + (0.99 - plateau) * sigmoid(steps, final_rise, 60)
    for name in ("1var_var_restricted", "2var_var_restricted_1", "2var_var_restricted_2"):
        table[name] = np.clip(restricted + rng.normal(0, noise, len(steps)), 0, 1)
    swing = (steps > jump + 300) & (steps < final_rise - 500)
    table.loc[swing, "2var_var_restricted_2"] = np.where(np.arange(swing.sum()) % 2, 0.84, 0.04)
    return table


@pytest.mark.parametrize("seed", range(5))
def test_final_rise_not_the_quick_rise_after_the_jump(seed):
    """Like seed 44: the detector must put the refinement at the final rise (7,900), not in the noisy
    plateau right after the jump."""
    phases = detect_phases(two_stage(noise=0.03, seed=seed))
    assert abs(phases["jump"] - 3400) <= 200
    assert abs(phases["refinement"] - 7900) <= 300
    assert phases["refinement_start"] >= 5000 and phases["refinement_end"] <= 9000
    assert 0.35 <= phases["plateau"] <= 0.7


def test_one_noisy_spike_is_not_a_refinement():
    table = two_stage(final_rise=60000)  # never refines within the run
    table.loc[table["step"] == 20001, list(table.columns[table.columns.str.contains("var_restricted")])] = 1.0
    phases = detect_phases(table)
    assert phases["jump"] is not None and phases["refinement"] is None


def test_a_one_row_blip_is_not_the_jump():
    table = synthetic(refine=False)
    blip = table["step"] == 2001
    for name in ("1var_train", "2var_train", "m3_l2_var_identity_qk"):
        table.loc[blip, name] = 1.0
    assert abs(detect_phases(table)["jump"] - 5300) <= 200


def test_a_flicker_of_measure_3_moves_nothing():
    """Measure 3 is a 12-row argmax share: a one-row flicker (0.42 -> 0.75 -> 0.42, as in seed 51) or a dip over
    the jump (as in seed 49) must not move or hide the jump, which is read from the pool accuracies."""
    clean = detect_phases(synthetic())
    for flicker in (0.75, 0.0):
        table = synthetic()
        table.loc[table["step"].isin([10401, 5301, 5401]), "m3_l2_var_identity_qk"] = flicker
        assert detect_phases(table) == clean


def test_a_gradual_rise_composes_without_a_jump_and_nothing_later_is_one():
    """Like seed 51: 1-var train rises 0.49 -> 0.93 over 1,200 steps (never 0.1 in 100), then stays; a later rise
    of 2-var train alone (0.7 -> 0.9 by step 10,000) is after the composition step and is not a jump either."""
    steps = np.arange(1, 40001, 100)
    table = synthetic(refine=False)
    table["1var_train"] = np.clip(0.49 + (0.93 - 0.49) * (steps - 2900) / 1200, 0.49, 0.93)
    table["2var_train"] = np.clip(0.5 + 0.4 * (steps - 2900) / 7000, 0.5, 0.9)
    phases = detect_phases(table)
    assert phases["composition"] == 4101 and phases["jump"] is None
    assert phases["steepest"] <= 4101 and phases["steepest_rise"] < 0.1


@pytest.mark.parametrize("seed, jump, composition", [(49, (5601, 5701), 5701), (51, None, 4101)])
def test_regression_on_the_committed_seeds(seed, jump, composition):
    """Seed 49's jump at 5,601-5,701 (1-var train 0.778 -> 0.969), missed when measure 3 was read; seed 51's rise
    is done by 4,101 and nothing after it is a jump (it was put at 10,401, a flicker of measure 3)."""
    from assignadd_core.core.run_folder import DEFAULT_ROOT
    phases = detect_phases(pd.read_csv(DEFAULT_ROOT / f"seed{seed}" / "metrics.csv"))
    if jump is None:
        assert phases["jump"] is None and phases["composition"] <= composition
    else:
        assert jump[0] <= phases["jump"] <= jump[1] and phases["composition"] == composition


def test_a_jump_spread_over_300_steps_is_found():
    """Like seed 42: the variable pools rise from 0.5 to 0.95 within about 300 steps (largest one-interval
    rise about 0.2); smoothing must not hide it."""
    steps = np.arange(1, 40001, 100)
    table = synthetic(refine=False)
    var = 0.5 + 0.45 * sigmoid(steps, 2600, 60)
    for name in ("1var_train", "2var_train"):
        table[name] = var
    table["m3_l2_var_identity_qk"] = 0.17 + 0.66 * sigmoid(steps, 2600, 60)
    assert abs(detect_phases(table)["jump"] - 2600) <= 100


def steps_table(rows=120):
    """Clean step curves whose smoothed versions are known row by row. Eval rows at steps 1, 101, ...:
    0var_train 0 -> 1 at row 10; the jump signal 0.3 -> 0.7 at row 12 (with addition: not the jump) and
    0.7 -> 1 at row 40; the var-restricted pools 0.2, 0.5 from row 40, 0.96 from row 80, 1 over the
    last 10 rows, with a one-row drop to 0 at row 100."""
    index = np.arange(rows)
    table = {"step": 100 * index + 1, "loss": 1.0}
    var = np.where(index < 12, 0.3, np.where(index < 40, 0.7, 1.0))
    restricted = np.select([index < 40, index < 80, index < rows - 10], [0.2, 0.5, 0.96], 1.0)
    restricted[100] = 0.0
    for name in POOL_NAMES:
        table[name] = restricted if "var_restricted" in name else (
            np.where(index < 10, 0.0, 1.0) if name.startswith("0var") else var)
    table["m3_l2_var_identity_qk"] = var
    return pd.DataFrame(table)


def test_every_step_of_a_clean_table_by_hand():
    """The rolling median keeps a clean step where it is (and drops a one-row spike); the rolling mean
    over 5 rows then climbs in fifths over rows k-2 .. k+2 around a step at row k. So: addition where the
    smoothed 0var curve first reaches 0.95 (1.0 at row 12); the jump is the largest raw rise after that
    row (0.3 at row 40; the larger rise at row 12 is the addition row itself); the final level is the
    median of the last 10 rows (1.0); the final rise runs from the last row of the 0.5 plateau (row 77)
    through 0.776 at row 80 (first >= the halfway 0.75) to 0.96 at row 82 (the first within 0.05 of
    the final level to the end)."""
    phases = detect_phases(steps_table())
    assert phases == {"addition": 1201, "addition_first": True, "composition": 4001, "jump": 4001,
                      "jump_rise": pytest.approx(0.3), "steepest": 4001, "steepest_rise": pytest.approx(0.3),
                      "refinement_start": 7701, "refinement": 8001, "refinement_end": 8201,
                      "plateau": pytest.approx(0.5), "final_level": pytest.approx(1.0)}


def test_a_final_level_under_0_9_is_no_refinement():
    table = steps_table()
    for name in POOL_NAMES:
        if "var_restricted" in name:
            table[name] = np.where(table.index < 80, table[name], 0.85)
    phases = detect_phases(table)
    assert phases["jump"] == 4001 and phases["final_level"] == pytest.approx(0.85)
    assert phases["refinement"] is None and phases["plateau"] is None


def test_a_jump_that_falls_back_is_not_the_jump():
    """A rise of 0.7 that lasts two rows (smoothed away) is passed over for a later, smaller one that lasts."""
    table = steps_table()
    for name in ("1var_train", "2var_train", "m3_l2_var_identity_qk"):
        table[name] = 0.3
        table.loc[table.index.isin([20, 21]), name] = 1.0
        table.loc[table.index >= 60, name] = 0.95
    phases = detect_phases(table)
    assert phases["jump"] == 6001 and phases["jump_rise"] == pytest.approx(0.65)
    assert phases["steepest"] == 2001 and phases["composition"] == 6001


def test_a_jump_that_settles_lower_still_counts():
    """0.6 -> 1.0 in one interval, then 0.9 for good: 0.3 above the level before the rise, so it lasts
    (the level before is read ahead of the smoothing window, which already blends in the rise)."""
    table = steps_table()
    for name in ("1var_train", "2var_train", "m3_l2_var_identity_qk"):
        table[name] = np.where(table.index < 12, 0.3, np.where(table.index < 40, 0.6, 0.9))
        table.loc[40, name] = 1.0
    phases = detect_phases(table)
    assert phases["jump"] == 4001 and phases["jump_rise"] == pytest.approx(0.4)


@pytest.mark.parametrize("rows", [2, 3])
def test_a_dip_in_the_last_rows_still_ends_on_the_final_level(rows):
    """The var-restricted pools drop to 0.5 in the last 2 or 3 rows (a noisy pool at the end of a run): the
    smoothed curve's last rows sit more than 0.05 below the final level for fewer than SUSTAIN rows, which
    is passed over, so the final rise is the same as without the dip (it used to vanish)."""
    table = steps_table()
    for name in POOL_NAMES:
        if "var_restricted" in name:
            table.loc[table.index >= len(table) - rows, name] = 0.5
    phases = detect_phases(table)
    assert (phases["refinement_start"], phases["refinement"], phases["refinement_end"]) == (7701, 8001, 8201)


def test_a_drop_that_lasts_to_the_end_is_no_final_level():
    """Four rows at 0.6 at the end: the final level (median of the last 10 smoothed rows) falls under 0.9."""
    table = steps_table()
    for name in POOL_NAMES:
        if "var_restricted" in name:
            table.loc[table.index >= len(table) - 4, name] = 0.6
    phases = detect_phases(table)
    assert phases["final_level"] < 0.9 and phases["refinement"] is None


# ---------------------------------------------------------------------------- the pieces, on hand-made curves
from assignadd_core.analysis import phases as ph  # noqa: E402


def test_smooth_keeps_a_step_and_drops_a_spike_with_shorter_windows_at_the_ends():
    # median over 5 rows keeps the step at row 4; the mean over 5 rows (3 and 4 at the ends) then climbs in fifths
    step = ph.smooth(pd.Series([0.0, 0, 0, 0, 1, 1, 1, 1]))
    assert step.to_numpy() == pytest.approx([0, 0, 0.2, 0.4, 0.6, 0.8, 1, 1])
    assert ph.smooth(pd.Series([0.0, 0, 0, 1, 0, 0, 0])).to_numpy() == pytest.approx([0] * 7)  # one-row spike
    assert ph.smooth(pd.Series([0.7])).to_numpy() == pytest.approx([0.7])  # a one-row curve is its own window


def curve(*segments):
    """A curve from (value, rows) segments."""
    return pd.Series(np.concatenate([np.full(rows, value, dtype=float) for value, rows in segments]))


def test_final_rise_from_a_plateau_one_row_before_it():
    """0.5 for 15 rows, then 0.9 (the final level, exactly REFINED_LEVEL: still a final level): the plateau
    ends at row 14, halfway (0.7) and the end are both row 15."""
    assert ph.final_rise(curve((0.5, 15), (0.9, 25)), 0) == {
        "final_level": 0.9, "start": 14, "half": 15, "end": 15, "plateau": 0.5}


def test_no_final_rise_reports_every_key_as_none():
    none = {"start": None, "half": None, "end": None, "plateau": None}
    assert ph.final_rise(curve((0.5, 15), (0.85, 25)), 0) == {"final_level": 0.85, **none}  # under 0.9
    assert ph.final_rise(curve((1.0, 40)), 0) == {"final_level": 1.0, **none}  # refined at the jump already
    # the curve drops at the jump (row 36) and stays down to the end: no row after the jump is near the final level
    assert ph.final_rise(curve((1.0, 36), (0.5, 4)), 36) == {"final_level": 1.0, **none}
    # a rise of under 0.1 from where it starts (no plateau: 5 rows after the jump) is no final rise
    assert ph.final_rise(curve((0.93, 5), (1.0, 35)), 0) == {"final_level": 1.0, **none}


def test_final_rise_without_a_plateau_starts_at_the_jump():
    assert ph.final_rise(curve((0.5, 5), (1.0, 35)), 0) == {
        "final_level": 1.0, "start": 0, "half": 5, "end": 5, "plateau": 0.5}
    # 9 rows at 0.7 after the jump row: no plateau of PLATEAU_ROWS rows fits between the jump and the rise
    assert ph.final_rise(curve((0.5, 1), (0.7, 9), (1.0, 30)), 0)["start"] == 0


def test_final_rise_ending_in_the_last_rows():
    """Only the last 5 rows at the final level: the rise ends at row len-5 (the dip allowance at the end
    applies to rows below the final level, not to the rise itself)."""
    c = curve((0.5, 15), (0.85, 20), (1.0, 5))  # final level: median of 5 × 0.85 and 5 × 1.0 = 0.925
    assert ph.final_rise(c, 0)["end"] == 35


def test_final_rise_one_row_after_the_jump():
    assert ph.final_rise(curve((0.5, 11), (1.0, 29)), 10) == {
        "final_level": 1.0, "start": 10, "half": 11, "end": 11, "plateau": 0.5}


def test_the_plateau_is_the_nearest_full_window_before_the_rise():
    # 10 rows at 0.5 right from the jump: the window may start at the jump row itself
    assert ph.final_rise(curve((0.5, 10), (1.0, 30)), 0)["start"] == 9
    # a row at 0.7 between the plateau and the rise: the plateau ends one row earlier (13), not two
    assert ph.final_rise(curve((0.5, 14), (0.7, 1), (1.0, 25)), 0)["start"] == 13
    # exactly PLATEAU_ROWS flat rows after a lower start make a plateau; 9 do not
    assert ph.final_rise(curve((0.2, 5), (0.5, 10), (1.0, 25)), 0)["start"] == 14
    assert ph.final_rise(curve((0.2, 6), (0.5, 9), (1.0, 25)), 0)["start"] == 0
    # a window spanning exactly 2 × PLATEAU_BAND (0.19 - 0.11 is exactly 0.08) is within the band
    assert 0.19 - 0.11 == 2 * ph.PLATEAU_BAND
    wobbly = curve((0.0, 5), *[(v, 1) for v in (0.11, 0.19) * 5], (1.0, 25))
    assert ph.final_rise(wobbly, 0)["start"] == 14


def test_the_plateau_lies_after_the_jump():
    """Flat before the jump (row 12), no plateau between the jump and the rise: the rise starts at the jump."""
    c = curve((0.2, 12), *[(v, 1) for v in (0.3, 0.6, 0.4, 0.7, 0.5, 0.8, 0.6, 0.75, 0.65)], (1.0, 30))
    assert ph.final_rise(c, 12)["start"] == 12


def test_a_plateau_is_more_than_0_1_below_the_final_level():
    # 0.88 is a plateau below the final level 1.0; 0.92 is not (it is part of the final approach)
    assert ph.final_rise(curve((0.3, 5), (0.88, 10), (1.0, 25)), 0) == {
        "final_level": 1.0, "start": 14, "half": 15, "end": 15, "plateau": 0.88}
    assert ph.final_rise(curve((0.3, 5), (0.92, 10), (1.0, 25)), 0) == {
        "final_level": 1.0, "start": 0, "half": 5, "end": 15, "plateau": 0.3}


def test_halfway_is_searched_from_the_plateau_on_and_reaching_it_counts():
    # high right after the jump, then a plateau: halfway is on the final rise, not in the early spike
    assert ph.final_rise(curve((0.9, 3), (0.5, 12), (1.0, 25)), 0)["half"] == 15
    # a row exactly halfway (0.75 between 0.5 and 1.0) is where it crosses
    assert ph.final_rise(curve((0.5, 15), (0.75, 1), (1.0, 24)), 0) == {
        "final_level": 1.0, "start": 14, "half": 15, "end": 16, "plateau": 0.5}


def test_a_row_exactly_end_tolerance_below_the_final_level_is_near_it():
    assert 1.0 - ph.END_TOLERANCE == 0.95
    assert ph.final_rise(curve((0.5, 15), (0.95, 5), (1.0, 20)), 0)["end"] == 15


def with_signal(values, table=None):
    table = steps_table() if table is None else table
    for name in ("1var_train", "2var_train", "m3_l2_var_identity_qk"):
        table[name] = values
    return table


def test_the_missing_columns_are_named():
    with pytest.raises(ValueError, match=r"metrics table lacks column\(s\) 1var_train, 2var_train$"):
        detect_phases(steps_table().drop(columns=["2var_train", "1var_train"]))


def test_addition_at_exactly_the_level_and_variables_at_exactly_0_9_are_not_below_it():
    table = steps_table()
    table["0var_train"] = np.where(table.index < 10, 0.0, ph.ADDITION_LEVEL)  # "at or above 0.95"
    assert detect_phases(table)["addition"] == 1201
    table = steps_table()
    table.loc[12, ["1var_train", "2var_train"]] = ph.VARIABLE_LOW  # "still below 0.9": not at the addition row
    phases = detect_phases(table)
    assert phases["addition"] == 1201 and phases["addition_first"] is False


def test_a_rise_of_exactly_the_minimum_is_a_jump():
    """0.8 -> 0.9 is a rise of 0.1 written, 0.09999999999999998 in floating point: at least JUMP_MIN_RISE (up to
    rounding); 0.81 -> 0.9 is not."""
    index = np.arange(120)
    phases = detect_phases(with_signal(np.where(index < 40, 0.8, 0.9)))
    assert phases["jump"] == 4001 and phases["jump_rise"] == pytest.approx(0.1)
    assert detect_phases(with_signal(np.where(index < 40, 0.81, 0.9)))["jump"] is None


def test_a_jump_must_last_sustain_smoothed_rows():
    """A raw rise of 0.7 at row 40 that falls back after 4 rows: the smoothed curve stays 0.1 above its level
    before the rise for only 4 of the rows from 42 on: no jump. After 5 rows it is one."""
    index = np.arange(120)
    falls_back = with_signal(np.where((index >= 40) & (index < 44), 1.0, 0.3))
    falls_back["1var_train"] = np.where(index < 80, falls_back["1var_train"], 0.95)  # composes at row 80
    assert detect_phases(falls_back)["jump"] == 8001  # the 4-row rise is passed over for the one that lasts
    lasts = with_signal(np.where((index >= 40) & (index < 45), 1.0, 0.3))
    lasts["1var_train"] = np.where(index < 80, lasts["1var_train"], 0.95)
    assert detect_phases(lasts)["jump"] == 4001


def test_the_sustain_check_starts_where_the_smoothed_step_is_complete():
    """A clean step of 0.11: the smoothed curve reaches the new level two rows after the step (row 42); at row 41
    it is only 4/5 of the way (0.088 above), which must not count against the jump."""
    index = np.arange(120)
    assert detect_phases(with_signal(np.where(index < 40, 0.8, 0.91)))["jump"] == 4001


def test_a_jump_in_the_first_rows_compares_with_the_first_row():
    """No addition (0var at 0.5), a step of 0.12 at row 3: the level before is the smoothed first row (0.8)."""
    table = steps_table()
    table["0var_train"] = 0.5
    index = np.arange(len(table))
    phases = detect_phases(with_signal(np.where(index < 3, 0.8, 0.92), table))
    assert phases["addition"] is None and phases["jump"] == 301


def test_the_paper_row_gives_the_papers_steps():
    paper = phases_table({"a": steps_table()}).set_index("run").loc["paper"]
    (j0, j1), (r0, r1) = ph.PAPER_STEPS["jump"], ph.PAPER_STEPS["refinement"]
    assert paper["jump"] == f"{j0:,}–{j1:,}" and paper["refinement"] == f"~{r0:,}–{r1:,}"


def test_a_dip_just_before_the_last_row_is_passed_over():
    """A 2-row dip that ends one row before the end is passed over like one that reaches the end."""
    table = steps_table()
    for name in POOL_NAMES:
        if "var_restricted" in name:
            table.loc[[len(table) - 3, len(table) - 2], name] = 0.5
    assert detect_phases(table)["refinement_end"] == 8201


def test_jumps_grouped_by_step_and_the_longest_plateau():
    from assignadd_core.analysis.phases import jumps_by_step, longest_plateau
    metrics = {"early": synthetic(jump=3000, refinement=8000), "late": synthetic(jump=5300, refinement=30000),
               "same": synthetic(jump=3000, refinement=9000), "flat": synthetic(refine=False)}
    phases = {name: detect_phases(m) for name, m in metrics.items()}
    grouped = jumps_by_step(phases, ["late", "early", "same"])
    assert list(grouped) == sorted(grouped) and sorted(grouped[phases["early"]["jump"]]) == ["early", "same"]
    longest = longest_plateau(metrics, phases, ["early", "late", "same", "flat"])
    assert longest["run"] == "late"  # the one without a final rise has no plateau to time
    assert longest["wait"] == phases["late"]["refinement_start"] - phases["late"]["jump"]
    assert set(longest["levels"]) == {n for n in POOL_NAMES if "var_restricted" in n}
    assert all(0.2 < level < 0.6 for level in longest["levels"].values())  # the plateau, not the final level
    assert longest_plateau(metrics, phases, ["flat"]) is None
