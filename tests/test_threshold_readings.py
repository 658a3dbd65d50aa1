"""Chapter 10's readings (`report.threshold_readings`) on synthetic sweeps whose thresholds are known: which runs
each claim reads, what its record holds, and the checks read beside C9's rule (the fit against its data, the fit
with each seed left out)."""
import numpy as np
import pandas as pd
import pytest

from assignadd_core.report import threshold_readings as tr
from assignadd_core.experiments.sweep.grid import F_GRID, R_GRID
from assignadd_core.rules import verdicts

VAR_POOLS = list(tr.VAR_POOLS)


def _runs(field, grid, thresholds, seeds, stuck=(), extra=None):
    """Finished runs, one per seed and grid value: success (value 0.97) from the seed's threshold on, else 0.5;
    (seed, value) pairs in `stuck` never composed (1-var train 0.5, value 0.4)."""
    rows = []
    for seed, threshold in zip(seeds, thresholds):
        for x in grid:
            composed = (seed, x) not in stuck
            ok = x >= threshold
            rows.append({"seed": seed, field: float(x), "status": "done", "1var_train": 1.0 if composed else 0.5,
                         "value": (0.97 if ok else 0.5) if composed else 0.4, "wall_time_s": 600.0, "device": "cpu",
                         "threads": 1, "device_name": "", tr.HELDOUT_POOL: 0.95 if x >= grid[1] else 0.6,
                         **{p: 0.95 if ok else 0.5 for p in VAR_POOLS}, **(extra(seed, x) if extra else {})})
    columns = ["seed", field, "status", "1var_train", "value", "wall_time_s", "device", "threads", "device_name",
               tr.HELDOUT_POOL, *VAR_POOLS]
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=columns)


def _status(done, field):
    return done[["seed", field, "status", "value"]].assign(reason=None)


def _sweeps(f_done, r_done, added, ablation=None):
    from assignadd_core.analysis.thresholds import threshold_summary
    done = {"f_sweep": f_done, "r_sweep": r_done, tr.ADDED: added,
            tr.ABLATION: ablation if ablation is not None else r_done.iloc[:0]}
    status = {name: _status(frame, tr.F_FIELD if name == "f_sweep" else tr.R_FIELD) for name, frame in done.items()}
    summary = {"f_sweep": threshold_summary(status["f_sweep"], tr.F_FIELD, 0.25),
               "r_sweep": threshold_summary(status["r_sweep"], tr.R_FIELD, 0.2)}
    return tr.Sweeps(status, done, summary, verdicts.THRESHOLD_LEVEL)


@pytest.fixture
def few_resamples(monkeypatch):
    """C9's estimator with 100 seed resamples instead of 2,000 (the same function)."""
    monkeypatch.setattr(verdicts, "C9_RESAMPLES", 100)


def test_c8_reads_composed_runs_per_seed_and_records_them():
    stuck = {(43, F_GRID[8])}  # a run that never composed, above the threshold: not read
    f_done = _runs(tr.F_FIELD, F_GRID, [0.26, 0.26, 0.22], [42, 43, 44], stuck=stuck)
    sweeps = _sweeps(f_done, _runs(tr.R_FIELD, R_GRID, [0.2], [42]), _runs(tr.R_FIELD, R_GRID[:13], [], []))
    c8 = tr.read_c8(sweeps)
    assert c8["verdict"].verdict == verdicts.REPRODUCED
    assert {c.seed: (round(c.below, 3), round(c.value, 3)) for c in c8["crossings"]} == {
        42: (0.257, 0.306), 43: (0.257, 0.306), 44: (0.208, 0.257)}
    assert [c.runs for c in c8["crossings"]] == [20, 19, 20]  # the stuck run is not read
    ours, verdict, details = tr.c8_record(sweeps, c8)
    assert verdict == verdicts.REPRODUCED and ours == c8["verdict"].text
    assert list(details["per_seed"]) == [tr.C8_LABEL] and details["compute_hours"] == 60 * 600 / 3600  # every finished run, composed or not
    assert details["rule_before_2026_12"]["verdict"] == sweeps.summary["f_sweep"]["verdict"]
    assert tr.brackets_by_seed(c8["crossings"]) == {"(0.208, 0.257]": [44], "(0.257, 0.306]": [42, 43]}
    assert tr.bracket_distance(c8["median"], 0.25) == pytest.approx(0.257053 - 0.25, abs=1e-6)
    assert tr.bracket_distance(c8["median"], 0.3) == 0  # inside the bracket
    assert [round(f, 3) for f, _ in tr.around(f_done, tr.F_FIELD, 2, 6)] == [0.159, 0.208, 0.257, 0.306, 0.355]


def test_c9_reads_the_added_seeds_with_the_r_sweeps_and_records_every_seeds_crossing(few_resamples):
    r_done = _runs(tr.R_FIELD, R_GRID, [0.17, 0.22, 0.2], [42, 43, 44])
    added = _runs(tr.R_FIELD, R_GRID[:13], [0.19, 0.21], [47, 48])
    sweeps = _sweeps(_runs(tr.F_FIELD, F_GRID, [0.26], [42]), r_done, added)
    c9 = tr.read_c9(sweeps)
    assert c9["all_in"] and c9["fit"]["seeds"] == 5 and len(c9["rows"]) == len(r_done) + len(added)
    assert c9["verdict"].verdict == verdicts.REPRODUCED
    assert c9["alone_fit"]["seeds"] == 3  # the reading before the added seeds: the r sweep's own
    _, _, details = tr.c9_record(sweeps, c9)
    assert [c["seed"] for c in details["per_seed"][tr.C9_LABEL]] == [42, 43, 44, 47, 48]  # every seed the rule reads
    assert [c["seed"] for c in details["per_seed"][tr.C9_POOL_LABEL]] == [42, 43, 44, 47, 48]
    assert "fit_check" not in details
    waiting = tr.read_c9(tr.Sweeps(sweeps.status, {**sweeps.done, tr.ADDED: added.iloc[:5]}, sweeps.summary,
                                   sweeps.level))  # 5 of the added seeds' 26 planned runs finished
    assert not waiting["all_in"] and waiting["verdict"].verdict == verdicts.NOT_YET_RUN  # it waits for every run


def _low_end_misfit(seeds=range(42, 50)):
    """Composed runs whose success jumps at r = 0.113 after none at 0.01, then falls back: a logistic cannot follow."""
    def success(seed, r):
        if r < 0.05:
            return False
        if r < 0.15:
            return (seed % 8) < 7  # 7 of 8 seeds succeed at 0.062 and 0.113
        if r < 0.3:
            return (seed % 8) < 3
        return True
    rows = [{"seed": s, tr.R_FIELD: float(r), "1var_train": 1.0, "value": 0.97 if success(s, r) else 0.5,
             "status": "done", "device": "cpu", "wall_time_s": 600.0, tr.HELDOUT_POOL: 0.95}
            for s in seeds for r in R_GRID[:13]]
    return pd.DataFrame(rows)


def test_the_fit_check_names_the_low_end_and_says_whether_the_fit_misses_it(few_resamples):
    clean = tr.c9_fit_check(_runs(tr.R_FIELD, R_GRID[:13], [0.12, 0.2, 0.22, 0.25, 0.28], range(42, 47)),
                            resamples=50)
    assert not clean["misses"]  # a clean threshold: the fit stays within every share's interval at the low end
    assert clean["named"][0][tr.R_FIELD] == R_GRID[0] and clean["named"][0]["succeeded"] == 0
    assert list(clean["left_out"]["left_out"]) == [42, 43, 44, 45, 46]
    assert (clean["left_out"]["width"] == clean["left_out"]["high"] - clean["left_out"]["low"]).all()
    assert set(clean["wide"]["left_out"]) == set(clean["left_out"][clean["left_out"]["width"] > clean["limit"]]
                                                 ["left_out"])
    bad = tr.c9_fit_check(_low_end_misfit(), resamples=50)
    assert bad["misses"]  # the fit lies outside the observed share's interval below its midpoint
    named = [round(r[tr.R_FIELD], 3) for r in bad["named"]]
    assert named[0] == 0.01 and len(named) == 2  # the first value, and the one where the fit misses most
    outside = set(np.round(bad["outside"][tr.R_FIELD], 3))
    assert outside and outside <= set(np.round(bad["table"][tr.R_FIELD], 3))
    table = tr.fit_check_table(bad)
    assert table.loc["0.010", "composed runs that succeed"] == "0 of 8" and len(table) == 13
    empty = tr.c9_fit_check(_low_end_misfit().iloc[:0])
    assert not empty["misses"] and empty["named"] == [] and not len(empty["left_out"])


def test_the_fit_check_goes_into_c9s_record_beside_the_rules_words(few_resamples):
    rows = _low_end_misfit()
    sweeps = _sweeps(_runs(tr.F_FIELD, F_GRID, [0.26], [42]), rows, rows.iloc[:0])
    c9 = tr.read_c9(sweeps)
    check = tr.c9_fit_check(c9["rows"], resamples=50)
    ours, verdict, details = tr.c9_record(sweeps, c9, check)
    assert ours.startswith(c9["verdict"].text) and verdict == c9["verdict"].verdict  # the rule's words come first
    assert "beside the rule: " in ours and f"at r = 0.010 0 of 8 composed runs succeed" in ours
    found = details["fit_check"]
    assert found["width_limit"] == check["limit"] and len(found["width_with_each_seed_left_out"]) == 8
    assert [r["r"] for r in found["low_end"]] == [round(r[tr.R_FIELD], 6) for r in check["named"]]


def test_late_and_uncomposed_runs_and_the_reach_of_each_seed():
    rows = _runs(tr.R_FIELD, R_GRID[:13], [0.2, 0.3], [42, 43], stuck={(43, R_GRID[5])})
    rows.loc[(rows["seed"] == 42) & (rows[tr.R_FIELD] > 0.5), "value"] = 0.6  # composed, union under the level
    late = tr.late_runs(rows)
    assert set(late["seed"]) == {42, 43} and (late["2-var union"] < 0.9).all()
    assert len(late) == int(((rows["1var_train"] >= 0.9) & (rows["value"] < 0.9)).sum())
    assert list(tr.uncomposed_runs(rows).index) == [43]
    reach = tr.seeds_reach(pd.concat([rows, _runs(tr.R_FIELD, R_GRID, [0.2], [44])]))
    assert reach["top"] == [44] and reach["others_stop"] == pytest.approx(R_GRID[12])
    assert tr.seeds_reach(rows.iloc[:0])["top"] == []


def test_the_swap_control_is_read_on_composed_runs_per_seed():
    def swap(seed, f):
        seen = f >= 0.3
        return {"swap_heldout": 0.97 if seen else (0.0 if f < 0.2 else 0.3), "swap_in_training": 1.0,
                "n_swap_heldout": 100, "n_swap_in_training": 50}
    done = _runs(tr.F_FIELD, F_GRID, [0.3, 0.3], [42, 43], extra=swap, stuck={(42, F_GRID[10])})
    found = tr.swap_reading(done)
    assert (round(found["neither"]["below"], 3), round(found["neither"]["crossing"], 3)) == (0.257, 0.306)
    assert found["neither"]["crossing"] == found["all"]["crossing"]
    assert found["lookup_only"] == pytest.approx(F_GRID[2])  # the largest f where only the trained swaps are answered
    assert found["near_paper"][0] == pytest.approx(F_GRID[13]) and found["near_paper"][1] == pytest.approx(1 / 3)
    assert int(found["by_f"].loc[found["by_f"][tr.F_FIELD] == F_GRID[10], "seeds"].iloc[0]) == 1  # the stuck run
    none = tr.swap_reading(done.drop(columns=["swap_heldout"]))
    assert none["by_f"] is None and none["neither"]["n"] == 0


def test_crossings_tables_power_tables_and_fixed_decimals():
    crossings = [verdicts.SeedCrossing(42, 0.3, 0.25, 10), verdicts.SeedCrossing(43, None, None, 8)]
    table = tr.crossings_table({"union": crossings, "pool": [verdicts.SeedCrossing(42, 0.1, None, 10)]})
    assert table.loc[42, "union"] == "(0.250, 0.300]" and table.loc[43, "union"] == "no crossing"
    assert table.loc[42, "pool"] == "(–, 0.100]" and table.loc[43, "composed runs"] == 8
    power = {"width": 0.2, "chosen": 15, "power": [{"seeds": 5, "p_narrow": 0.3, "low": 0.23, "high": 0.36},
                                                   {"seeds": 15, "p_narrow": 0.81, "low": 0.75, "high": 0.86}],
             "from_r": 0.2, "composed": 44, "succeeded": 37, "with_metrics": 21, "repaired": [6001.0, 29001.0],
             "last_third": 1, "not_repaired": 5}
    rows, budget = tr.power_tables(power)
    assert rows.loc[15, "chosen"] == "yes" and rows.loc[5, "interval no wider than 0.2"] == "30 % (23–36 %)"
    assert budget.iloc[0]["at steps"] == "6,001–29,001"
    shown = tr.fixed(pd.DataFrame({"a": [0.7995, float("nan")], "b": ["x", "y"]}))
    assert list(shown["a"]) == ["0.799", "—"] and list(shown["b"]) == ["x", "y"]  # as the prose prints 0.7995


def test_protocol_facts_are_the_papers_split():
    facts = tr.protocol_facts()
    assert facts["modulus"] == 59 and facts["labels"] == 10 and facts["f_grid"] == list(F_GRID)
    assert facts["covered_low"] < facts["covered_mid"] <= facts["train_pairs"]
    assert 0 < facts["mix_low"] < facts["mix_every_row"] < 1
    assert tr.covered_share(1.0) == 1.0 and 0 < tr.covered_share(R_GRID[0]) < 0.2
