"""How the chapters show rules, verdicts and per-seed tables: wrapped HTML for the book, plain text for nbval.

Each object here renders as HTML in the book (an admonition that wraps, with the rule's history in a collapsed
note) and as one plain-text line wherever HTML is not shown (a terminal, nbval's comparison of checked cells).
"""
from __future__ import annotations

import html

import pandas as pd

from .names import display_text, readable
from .palette import VERDICT_COLORS
from .verdicts import RULE_CHANGES, RULES, VERDICTS, Verdict

assert set(VERDICT_COLORS) == set(VERDICTS)


def _changes_html(claim: str) -> str:
    changes = RULE_CHANGES.get(claim, ())
    if not changes:
        return ""
    items = "".join(f"<li><b>{html.escape(date)}</b>: {html.escape(text)}</li>" for date, text in changes)
    return f"<details><summary>How this rule changed</summary><ul>{items}</ul></details>"


class Rule:
    """The verdict rule of a claim, stated before its result."""

    def __init__(self, claim: str):
        if claim not in RULES:
            raise KeyError(f"no rule for {claim!r}")
        self.claim = claim

    def __repr__(self) -> str:
        return f"{self.claim} rule: {RULES[self.claim]}"

    def _repr_html_(self) -> str:
        return (f'<div class="admonition note rule-box"><p class="admonition-title">Rule for {self.claim}'
                f" (fixed before the result)</p><p>{html.escape(RULES[self.claim])}</p>"
                f"{_changes_html(self.claim)}</div>")


class Result:
    """A claim's verdict with the numbers that decided it (and, optionally, another rule's verdict beside it)."""

    def __init__(self, claim: str, verdict: Verdict, note: str = ""):
        self.claim, self.note = claim, note
        self.verdict = Verdict(verdict.verdict, display_text(verdict.text))  # display names, not code keys

    def __repr__(self) -> str:
        return f"{self.claim}: {self.verdict.verdict} — {self.verdict.text}" + (f" ({self.note})" if self.note else "")

    def _repr_html_(self) -> str:
        color = VERDICT_COLORS[self.verdict.verdict]
        note = f"<p><i>{html.escape(self.note)}</i></p>" if self.note else ""
        return (f'<div class="admonition verdict-box" style="border-left-color:{color}">'
                f'<p class="admonition-title">{self.claim}: <span style="color:{color}">{self.verdict.verdict}</span>'
                f"</p><p>{html.escape(self.verdict.text)}</p>{note}</div>")


def seed_verdicts(rows: dict[str, Verdict], numbers: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per seed: its deciding numbers (columns of `numbers`, if given), its verdict and the text."""
    table = pd.DataFrame({"verdict": {k: v.verdict for k, v in rows.items()},
                          "deciding numbers": {k: display_text(v.text) for k, v in rows.items()}})
    if numbers is not None:
        table = readable(numbers).join(table, how="right")
    return table.rename_axis("seed")
