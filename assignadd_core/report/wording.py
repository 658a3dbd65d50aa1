"""Words chosen from numbers, for the sentences of the chapters.

A sentence that states a finding ("5 of 10 seeds", "by step 37,301", "not shown", "about 0.60") is written by one
of these functions from the numbers the chapter computed, never typed after the results: when the numbers change,
the words change with them ("all 10 seeds", "none of the 10 seeds", "shown"). The chapters glue the result into
their prose (`present.glue_text`) or write the sentence as Markdown from a code cell.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ..rules.verdicts import shown_words


def number(value: float | int, decimals: int | None = None) -> str:
    """An integer with thousands separators ('37,301'); a float with `decimals` places (default: as Python prints
    it). A whole float with decimals=None reads as an integer ('40,000')."""
    if isinstance(value, bool):
        raise TypeError("number() takes a number, not a bool")
    if decimals is None:
        if isinstance(value, int) or float(value).is_integer():
            return f"{int(value):,}"
        return f"{value:,}"
    return f"{value:,.{decimals}f}"


def _singular(noun: str) -> str:
    return noun[:-1] if noun.endswith("s") and not noun.endswith("ss") else noun


def k_of_n(k: int, n: int, noun: str = "seeds", one: str | None = None) -> str:
    """'3 of 10 seeds'; 'all 10 seeds' when every one, 'none of the 10 seeds' when none; with a single one read,
    'the one seed' or 'not the one seed'; 'no seeds' when none were read. `one` is the singular of `noun`."""
    if k < 0 or n < 0 or k > n:
        raise ValueError(f"k of n needs 0 <= k <= n, got {k} of {n}")
    one = one or _singular(noun)
    if n == 0:
        return f"no {noun}"
    if n == 1:
        return f"the one {one}" if k else f"not the one {one}"
    if k == n:
        return f"all {number(n)} {noun}"
    if k == 0:
        return f"none of the {number(n)} {noun}"
    return f"{number(k)} of {number(n)} {noun}"


def listing(items: Iterable, conjunction: str = "and") -> str:
    """'42, 44 and 49'; '42 and 44'; '42'; 'none' for no items (each item as str, or `number` for a number)."""
    words = [number(i) if isinstance(i, (int, float)) and not isinstance(i, bool) else str(i) for i in items]
    if not words:
        return "none"
    if len(words) == 1:
        return words[0]
    return f"{', '.join(words[:-1])} {conjunction} {words[-1]}"


def _runs_of_consecutive(values: Sequence[int]) -> list[str]:
    """[42, 43, 44, 46] -> ['42–44', '46']: three or more consecutive integers as a span."""
    parts, start = [], 0
    for i in range(1, len(values) + 1):
        if i == len(values) or values[i] != values[i - 1] + 1:
            run = values[start:i]
            parts += [f"{run[0]}–{run[-1]}"] if len(run) >= 3 else [str(v) for v in run]
            start = i
    return parts


def seeds(values: Iterable[int | str]) -> str:
    """'seed 42'; 'seeds 42, 44 and 49'; 'seeds 42–46 and 49' (three or more in a row as a span); 'no seed'. Run
    names such as 'seed42' are read as their seed; other run names (a profile's own, 'ci_tiny_1') as 'run NAME'."""
    texts = {str(v).removeprefix("seed") for v in values}
    found = sorted(int(t) for t in texts if t.lstrip("-").isdigit())
    named = sorted(t for t in texts if not t.lstrip("-").isdigit())
    if not found and not named:
        return "no seed"
    parts = ([f"seed {found[0]}"] if len(found) == 1 else [f"seeds {listing(_runs_of_consecutive(found))}"] if found
             else [])
    if named:
        parts.append(("run " if len(named) == 1 else "runs ") + listing(named))
    return " and ".join(parts)


def steps(values: Iterable[int]) -> str:
    """'2,701, 3,201 and 5,701' (in the order given)."""
    return listing([number(int(v)) for v in values])


def span(values: Iterable[float | int], decimals: int | None = None) -> str:
    """The range of some values as printed: '0.57–0.59', '2,701–5,701'; a single number when they print the same
    ('0.58'); 'none' without values."""
    found = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not found:
        return "none"
    low, high = number(min(found), decimals), number(max(found), decimals)
    return low if low == high else f"{low}–{high}"


def latest(values: Iterable[int | None]) -> int | None:
    """The latest of several steps (None where a run never got there); None when none did."""
    found = [int(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return max(found) if found else None


def by_step(values: Sequence[int | None], noun: str = "runs") -> str:
    """When several runs have done something: 'by step 37,301' (the latest of their steps, so that it holds for
    every one); 'by step 7,301 in 4 of 5 runs' when some never did; 'in none of the 5 runs' when none did."""
    done = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not done:
        return f"in {k_of_n(0, len(values), noun)}" if values else f"in no {noun}"
    when = f"by step {number(latest(done))}"
    return when if len(done) == len(values) else f"{when} in {k_of_n(len(done), len(values), noun)}"


def p_value(p: float) -> str:
    """'p = 0.34', 'p = 0.066', 'p = 0.0002' (two significant digits), 'p < 0.0001' below that. The cut reads the
    rounded value, as the verdicts' texts print it: a permutation test's smallest p, 1/10,001, is 'p = 0.0001' in both."""
    if not 0 <= p <= 1:
        raise ValueError(f"a p-value lies in [0, 1], got {p}")
    return "p < 0.0001" if float(f"{p:.2g}") < 1e-4 else f"p = {p:.2g}"


def shown(p: float, level: float, what: str) -> str:
    """A test's result in the words it allows: '<what>: shown (p = 0.01)' when p < level rejects the null,
    '<what>: not shown (p = 0.34)' otherwise; never 'no effect' for a test that did not reject."""
    return f"{shown_words(p < level, what)} ({p_value(p)})"


def about(value: float, significant: int = 2) -> str:
    """A number rounded to `significant` digits, with 'about' when rounding changed it: 'about 0.60' for 0.6013,
    'about 37,000' for 37,301, '0.50' for 0.5, '2,700' for 2,700."""
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = significant - 1 - magnitude
    rounded = round(value, decimals)
    if abs(rounded) >= 10 ** (magnitude + 1):  # 0.996 -> 1.0: one digit fewer after the point
        decimals -= 1
        rounded = round(value, decimals)
    text = number(int(rounded)) if decimals <= 0 else f"{rounded:,.{decimals}f}"
    return text if math.isclose(rounded, value, rel_tol=0, abs_tol=1e-12) else f"about {text}"


def share(k: int, n: int) -> str:
    """'50 %' of k in n (whole percent); 'no share' without n."""
    return f"{round(100 * k / n)} %" if n else "no share"


def side_of(values: Iterable[float], low: float, high: float) -> str:
    """Where some values fall against a window [low, high]: 'within', 'before', 'after', 'on both sides of' (some
    before and some after), or 'around' (some within and some outside)."""
    found = list(values)
    if not found:
        raise ValueError("side_of needs at least one value")
    before, after = any(v < low for v in found), any(v > high for v in found)
    inside = any(low <= v <= high for v in found)
    if inside:
        return "around" if before or after else "within"
    return "on both sides of" if before and after else "before" if before else "after"


def capital(text: str) -> str:
    """The text with its first letter capitalised (a sentence that starts with a chosen word: 'All 10 seeds ...')."""
    return text[:1].upper() + text[1:]


def verb(count: int, one: str, many: str) -> str:
    """The verb that agrees with a count: verb(1, 'composes', 'compose') -> 'composes'."""
    return one if count == 1 else many


# ------------------------------------------------------------------ phrases for the prose in Markdown
# A chapter writes its sentences in Markdown and glues these phrases into them (`present.glue_text`): each one is a
# phrase whose words follow the numbers ("below" or "above", "rising" or "falling", "shown" or "not shown").
def against(value: float, level: float, decimals: int | None = None, below: str = "below", at: str = "at",
            above: str = "above") -> str:
    """Where a value stands against a level, as both are printed: 'below', 'at' or 'above' (with `decimals`, a
    value that prints as the level reads 'at')."""
    if decimals is not None and number(value, decimals) == number(level, decimals):
        return at
    return below if value < level else above if value > level else at


def bracket(below: float | None, value: float | None, decimals: int = 3) -> str:
    """Where a threshold lies between two grid values, as a half-open bracket: '(0.257, 0.306]'; '(–, 0.113]' when
    nothing below the crossing was under the level; 'no crossing' without one."""
    if value is None:
        return "no crossing"
    return f"({'–' if below is None else number(below, decimals)}, {number(value, decimals)}]"


def percent(value: float, decimals: int = 1) -> str:
    """A share as a percentage: '98.9 %' for 0.9891."""
    return f"{100 * value:.{decimals}f} %"


def percents(values: Iterable[float], decimals: int = 1) -> str:
    """The range of some shares as percentages: '98.9–100.0 %'; one number when they print the same; 'none'."""
    found = [100 * v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return f"{span(found, decimals)} %" if found else "none"


def signed(value: float, decimals: int = 2) -> str:
    """A number with its sign: '+0.60', '-0.36', '+0.00'."""
    return f"{value:+.{decimals}f}"


def estimate(value: float, low: float, high: float, decimals: int = 2) -> str:
    """An estimate with its interval: '0.67 (0.35–0.91)'."""
    return f"{value:.{decimals}f} ({low:.{decimals}f}–{high:.{decimals}f})"


def interval(low: float, high: float, decimals: int = 2, unit: str = "") -> str:
    """An interval: '0.35–0.91'; with unit '%', shares as percentages ('47–81 %')."""
    if unit == "%":
        return f"{100 * low:.{decimals}f}–{100 * high:.{decimals}f} %"
    return f"{low:.{decimals}f}–{high:.{decimals}f}"


def tested(p: float, level: float) -> str:
    """A test's result in the words it allows, for a sentence that names the effect itself: 'shown (p = 0.0001)'
    when p < level, 'not shown (p = 0.34)' otherwise (never 'no effect')."""
    return f"{'shown' if p < level else 'not shown'} ({p_value(p)})"


def trend(first: float, last: float, rising: str = "rising", falling: str = "falling", flat: str = "flat") -> str:
    """The direction from a first value to a last one: 'rising', 'falling' or 'flat'."""
    return rising if last > first else falling if last < first else flat


def count(n: int, noun: str = "seeds", one: str | None = None) -> str:
    """'5 seeds', '1 seed', 'no seeds'."""
    one = one or _singular(noun)
    return f"no {noun}" if n == 0 else f"1 {one}" if n == 1 else f"{number(n)} {noun}"


def others(k: int, noun: str = "seeds", one: str | None = None) -> str:
    """The rest of a group, after some were named: 'the other 5 seeds', 'the other seed', 'no other seed'."""
    one = one or _singular(noun)
    return f"no other {one}" if k == 0 else f"the other {one}" if k == 1 else f"the other {number(k)} {noun}"


def who(values: Iterable[int | str], one: str, many: str) -> str:
    """Some seeds with the verb that agrees with them: 'seed 51 composes', 'seeds 49 and 51 compose', 'no seed
    composes'."""
    found = list(values)
    return f"{seeds(found)} {one if len(found) <= 1 else many}"


def which(condition: bool, yes: str, no: str) -> str:
    """The words a condition computed from the numbers calls for: `yes` when it holds, `no` otherwise (each a
    phrase typed beside the condition, so that a sentence never states what its numbers do not)."""
    return yes if condition else no


def within_noise(z: float, limit: float = 3.0, within: str = "within", beyond: str = "by more than") -> str:
    """Whether a gap of `z` standard errors is sampling noise: 'within' when |z| < limit, 'by more than' otherwise."""
    return within if abs(z) < limit else beyond


def exponent(value: float) -> str:
    """A small relative size as the design states it: '1e-7' for 1e-07, '3e-3'."""
    return f"{value:.0e}".replace("e-0", "e-").replace("e+0", "e")
