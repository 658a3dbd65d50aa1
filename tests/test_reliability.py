"""Phase statistics over seeds, on synthetic curves with known transitions."""
import pytest

from assignadd_core.analysis import reliability
from test_phases import synthetic


def test_phase_steps_and_statistics():
    runs = {"a": synthetic(jump=3000, refinement=9000), "b": synthetic(jump=5000, refinement=15000),
            "c": synthetic(jump=60000, refinement=80000)}  # never jumps within 40,000 steps
    steps = reliability.phase_steps(runs)
    assert steps["composed"].tolist() == [True, True, False]
    assert steps["all_three"].tolist() == [True, True, False]
    stats = reliability.step_statistics(steps)
    assert stats.loc["jump", "runs"] == 2
    assert abs(stats.loc["jump", "median"] - 4000) <= 200
    assert abs(stats.loc["jump", "min"] - 3000) <= 200 and abs(stats.loc["jump", "max"] - 5000) <= 200
    assert stats.loc["addition", "runs"] == 3


@pytest.mark.parametrize("k, n, low, high", [(9, 10, 0.555, 0.9975), (10, 10, 0.6915, 1.0), (0, 10, 0.0, 0.3085)])
def test_clopper_pearson_interval(k, n, low, high):
    rate = reliability.composition_rate(k, n)
    assert rate.value == k / n
    assert rate.low == pytest.approx(low, abs=1e-3) and rate.high == pytest.approx(high, abs=1e-3)
    assert f"{k} of {n}" in rate.describe()
