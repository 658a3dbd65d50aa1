"""Counts, intervals and exact tests: the one home of the book's statistics.

* `Rate`: k of n with its exact (Clopper-Pearson) interval, the one k-of-n type of the book;
* `bootstrap_mean_interval`, `t_interval`: intervals of a mean;
* `mcnemar_exact`, `fisher`, `sign_flip_exact`: exact tests of paired moves, of two rates and of paired differences;
* `sign_test_power`, `fisher_power`: what those exact tests can detect, at a stated alternative (exact, by enumeration).

Each test imports what it needs from scipy.stats inside its function: scipy.stats is a slow import, and the rules are
imported by every chapter and by the trainer's early stop.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def clopper_pearson(successes: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    """Exact binomial interval of successes / trials (NaN, NaN without trials)."""
    if trials == 0:
        return float("nan"), float("nan")
    from scipy.stats import binomtest
    ci = binomtest(successes, trials).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


@dataclass(frozen=True)
class Rate:
    """k of n, with its exact interval at `level`."""
    successes: int
    trials: int
    level: float = 0.95

    @property
    def interval(self) -> tuple[float, float]:
        return clopper_pearson(self.successes, self.trials, self.level)

    @property
    def low(self) -> float:
        return self.interval[0]

    @property
    def high(self) -> float:
        return self.interval[1]

    @property
    def value(self) -> float:
        return self.successes / self.trials if self.trials else float("nan")

    def describe(self) -> str:
        """'2 of 3 (67%; 95 % interval 9%–99%)', or 'no runs'."""
        low, high = self.interval
        return (f"{self.successes} of {self.trials} ({self.value:.0%}; {self.level:.0%} interval {low:.0%}–{high:.0%})"
                .replace("95%", "95 %") if self.trials else "no runs")

    def text(self) -> str:
        """'2 of 3 (95 % interval 9%–99%)' (a verdict's count), or '0 of 0'."""
        low, high = self.interval
        return f"{self.successes} of {self.trials} (95 % interval {low:.0%}–{high:.0%})" if self.trials else "0 of 0"


def rate(flags) -> Rate:
    """The Rate of a sequence of true/false outcomes."""
    flags = [bool(f) for f in flags]
    return Rate(sum(flags), len(flags))


def bootstrap_mean_interval(values, n_boot: int = 2000, level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `values` (resampled with replacement)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    means = v[rng.integers(0, v.size, (n_boot, v.size))].mean(1)
    tail = (1 - level) / 2
    return (float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail)))


def t_interval(values, level: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): Student's t interval of the mean of `values` (NaNs for fewer than 2)."""
    from scipy.stats import t as student_t
    v = np.asarray(values, dtype=np.float64)
    if v.size < 2:
        return (float(v.mean()) if v.size else float("nan"), float("nan"), float("nan"))
    half = student_t.ppf((1 + level) / 2, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size)
    return float(v.mean()), float(v.mean() - half), float(v.mean() + half)


def mcnemar_exact(up: int, down: int) -> float:
    """Two-sided exact McNemar test: are `up` and `down` (the seeds whose outcome moved each way) a fair coin's?"""
    if up + down == 0:
        return 1.0
    from scipy.stats import binomtest
    return float(binomtest(up, up + down, 0.5, alternative="two-sided").pvalue)


def sign_test_greater(up: int, down: int) -> float:
    """One-sided exact sign test: the probability of at least `up` of `up + down` paired differences going up when
    each goes either way with probability 1/2 (ties are left out before; 1 without pairs)."""
    if up + down == 0:
        return 1.0
    from scipy.stats import binomtest
    return float(binomtest(up, up + down, 0.5, alternative="greater").pvalue)


def sign_flip_exact(differences, unit: float = 0.25) -> float:
    """Exact two-sided sign-flip test of paired differences' mean (each a multiple of `unit`): the share of the 2^n
    sign patterns whose |sum| is at least the observed |sum|, counted by convolving the sums' distribution (1.0
    without a nonzero difference)."""
    steps = [abs(int(round(float(d) / unit))) for d in differences]
    if not any(steps):
        return 1.0
    if any(abs(float(d) / unit - round(float(d) / unit)) > 1e-9 for d in differences):
        raise ValueError(f"every difference must be a multiple of {unit}")
    counts = {0: 1}
    for a in steps:
        nxt: dict[int, int] = {}
        for total, ways in counts.items():
            for signed in ((a, -a) if a else (0, 0)):
                nxt[total + signed] = nxt.get(total + signed, 0) + ways
        counts = nxt
    observed = abs(sum(int(round(float(d) / unit)) for d in differences))
    return sum(w for total, w in counts.items() if abs(total) >= observed) / 2 ** len(steps)


def fisher(a: Rate, b: Rate) -> float:
    """Two-sided p-value of Fisher's exact test: do the two rates differ?"""
    from scipy.stats import fisher_exact
    table = [[a.successes, a.trials - a.successes], [b.successes, b.trials - b.successes]]
    return float(fisher_exact(table, alternative="two-sided").pvalue)


def sign_test_power(pairs: int, later: float, level: float) -> dict:
    """The one-sided exact sign test on `pairs` untied pairs: the fewest going up that reject (p < `level`; None when
    no count can) and the probability of rejecting when each pair goes up with probability `later`."""
    from scipy.stats import binom
    needed = next((k for k in range(pairs + 1) if sign_test_greater(k, pairs - k) < level), None)
    power = 0.0 if needed is None else float(binom.sf(needed - 1, pairs, later))
    return {"pairs": pairs, "needed": needed, "later": later, "power": power}


def t_interval_power(pairs: int, gain: float, sd: float, level: float = 0.95) -> float:
    """The probability that Student's t interval (`t_interval`) of `pairs` paired differences lies wholly above zero
    when they are normal with mean `gain` and standard deviation `sd`: the noncentral t's tail beyond the critical
    value (0 for fewer than 2 pairs, where no interval exists)."""
    from scipy.stats import nct, t as student_t
    if pairs < 2:
        return 0.0
    critical = student_t.ppf((1 + level) / 2, pairs - 1)
    return float(nct.sf(critical, pairs - 1, gain * np.sqrt(pairs) / sd))


def fisher_power(n_a: int, rate_a: float, n_b: int, rate_b: float, level: float) -> float:
    """The probability that Fisher's exact two-sided test rejects (p < `level`) when `n_a` trials succeed with
    probability `rate_a` and `n_b` with `rate_b`: every pair of counts, weighted by its binomial probability."""
    from scipy.stats import binom
    power = 0.0
    for k_a in range(n_a + 1):
        for k_b in range(n_b + 1):
            weight = binom.pmf(k_a, n_a, rate_a) * binom.pmf(k_b, n_b, rate_b)
            if weight > 1e-15 and fisher(Rate(k_a, n_a), Rate(k_b, n_b)) < level:
                power += weight
    return float(power)
