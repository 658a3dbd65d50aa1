"""R2's power: designs simulated from a crossed-model fit, each read by R2's own tests."""
from __future__ import annotations

import numpy as np
import pytest

from assignadd_core.analysis import odds, odds_power


def fake_fit(init: float, data: float, cell: float, intercept: float = 0.0, draws: int = 50) -> dict:
    """A fit's draws, all at the given values (what `power` reads of `odds.fit_crossed`)."""
    return {"sd": {"init": np.full(draws, init), "data": np.full(draws, data), "cell": np.full(draws, cell)},
            "intercept": np.full(draws, intercept), "mode": np.zeros(draws)}


def test_simulated_designs_have_the_design_s_shape_and_follow_the_intercept():
    rng = np.random.default_rng(0)
    zeros = {"init": 0.0, "data": 0.0, "cell": 0.0}
    assert odds_power.simulate_design(0.0, zeros, 0.0, 8, 6, rng).shape == (8, 6, len(odds_power.REPLICATE_KINDS))
    assert odds_power.simulate_design(30.0, zeros, 0.0, 8, 8, rng).min() == 1
    assert odds_power.simulate_design(-30.0, zeros, 0.0, 8, 8, rng).max() == 0
    # a cell effect makes a cell's replicates agree; none leaves them independent
    agree = [np.mean(o[:, :, 0] == o[:, :, 1]) for o in
             (odds_power.simulate_design(0.0, {**zeros, "cell": 20.0}, 0.0, 8, 8, rng),
              odds_power.simulate_design(0.0, zeros, 0.0, 8, 8, rng))]
    assert agree[0] > 0.9 and agree[1] < 0.75


def test_the_cell_test_has_power_against_a_strong_pair_and_none_without_one():
    strong = odds_power.design_power(fake_fit(0.0, 0.0, 20.0), 8, 8, sims=4, seed=1).set_index(["scenario", "test"])
    assert strong.loc[("as fitted", "cell"), "rejected"] == 4
    assert strong.loc[("no pair effect", "cell"), "rejected"] <= 1  # its size, at most one of four by chance
    assert set(strong.index.get_level_values("scenario")) == set(odds_power.SCENARIOS)
    row = strong.loc[("as fitted", "cell")]
    assert row["low"] <= row["rate"] <= row["high"] and row["sims"] == 4


def test_power_refuses_no_simulations():
    with pytest.raises(ValueError, match="sims must be at least 1"):
        odds_power.design_power(fake_fit(1.0, 1.0, 1.0), 8, 8, sims=0)


def test_the_level_is_r2_s():
    from assignadd_core.rules import verdicts
    assert odds_power.LEVEL == verdicts.ODDS_LEVEL and odds.FACTORS == ("init", "data", "cell")
