"""Phrases of the smaller chapters (the task, generalization, shared addition, Fourier, the authors' weights) that more
than a number and a `wording` call: each function takes the chapter's numbers and returns a phrase (or
{glue name: phrase}) for the sentences of its Markdown. The larger chapters have modules of their own
(`composition_words`, `circuit_words`)."""
from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from . import wording as w
from ..rules import verdicts


# ---------------------------------------------------------------------------- shared addition (C6)
C6_BASELINES = ["same_sum", "one_shared_operand", "unrelated"]


def c6_shortfalls(n: Mapping, hardest: float) -> list[str]:
    """What one seed's C6 numbers fall short of, each condition of the rule in words ('the matched cosine is 0.057
    below the ceiling (the rule allows 0.05)'); empty when it meets them all."""
    parts = []
    if n["matched"] < verdicts.MATCHED_LEVEL:
        parts.append(f"the matched cosine is {n['matched']:.3f} (the rule asks {verdicts.MATCHED_LEVEL})")
    if n["matched"] < n["ceiling"] - verdicts.CEILING_GAP:
        parts.append(f"the matched cosine is {n['ceiling'] - n['matched']:.3f} below the ceiling"
                     f" (the rule allows {verdicts.CEILING_GAP})")
    if n["matched"] - hardest < verdicts.BASELINE_GAP:
        parts.append(f"the matched cosine is only {n['matched'] - hardest:.3f} above the hardest baseline"
                     f" (the rule asks {verdicts.BASELINE_GAP})")
    if n["patch_kept"] < verdicts.PATCH_KEPT:
        parts.append(f"the attention patch keeps {n['patch_kept']:.1%} of the answers"
                     f" (the rule asks {verdicts.PATCH_KEPT:.0%})")
    return parts


def c6_answer(rows: Mapping, numbers: pd.DataFrame) -> str:
    """The key results' answer of C6: how many composed seeds meet every condition, with the ranges that decide it
    (the matched cosine, the hardest baseline, what the attention patch keeps)."""
    if not len(numbers):
        return "no composed seed"
    full = sum(v.verdict == verdicts.REPRODUCED for v in rows.values())
    hardest = numbers[C6_BASELINES].max(axis=1)
    return (f"{w.k_of_n(full, len(rows), 'composed seeds')} meet every condition: matched cosine"
            f" {w.span(numbers['matched'], 3)}, hardest baseline {w.span(hardest, 3)};"
            f" attention patch keeps {w.percents(numbers['patch_kept'])}")


def c6_why(rows: Mapping, numbers: pd.DataFrame) -> list[str]:
    """The key results' why of C6, as phrases: what each seed short of the rule falls short of, and how far every
    seed's matched cosine is above its hardest baseline when that holds for all."""
    if not rows:
        return ["no seed composed, so there is no variable route to compare"]
    short = [n for n, v in rows.items() if v.verdict != verdicts.REPRODUCED]
    if not short:
        return ["every composed seed's variable route reaches the literal route's MLP input and answer"]
    hardest = numbers[C6_BASELINES].max(axis=1)
    gaps = numbers["matched"] - hardest
    return [*(f"in {w.seeds([n])} " + w.listing(c6_shortfalls(numbers.loc[n], hardest[n]) or [rows[n].text])
              for n in short),
            w.which(gaps.min() >= verdicts.BASELINE_GAP, f"every composed seed's matched cosine is {gaps.min():.2f}"
                    f" or more above its hardest baseline (the rule asks {verdicts.BASELINE_GAP})", "")]


def twin_kind(kind: str) -> str:
    """A twin kind in words: '1var_left' -> 'one variable, left operand', '2var' -> 'two variables'."""
    return {"2var": "two variables"}.get(kind, kind.replace("1var_", "one variable, ") + " operand")


# ---------------------------------------------------------------------------- Fourier features (C7)
def c7_why(numbers: pd.DataFrame, old, verdict) -> list[str]:
    """The key results' why of C7: how far a typical active neuron is explained by one frequency, and what the rule's
    first version reads when it differs from the verdict."""
    if not len(numbers):
        return ["no seed composed"]
    typical = w.about(100 * float(numbers["median_r2"].median()), 2)
    if old.verdict == verdict.verdict:
        return ["every composed seed has a few key frequencies and single neurons explained above 90 %, far above"
                " the null"]
    return [f"a typical active neuron is explained to {typical} % by one frequency",
            f"only {w.percents(numbers['share_above_09'])} pass 0.9, so the rule's first version, which asked for most"
            f" neurons, reads {old.verdict}"]
