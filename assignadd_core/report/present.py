"""How the chapters show their key results, rules, verdicts and per-seed tables: HTML for the book, plain text for
nbval.

Each object here renders as HTML in the book and as plain text wherever HTML is not shown (a terminal, nbval's
comparison of checked cells). The key-results box (`KeyResults`) opens every chapter: a chapter computes it with its
verdicts and glues it (`glue_key_results`); its first Markdown cell pastes it under the title (`KEY_RESULTS_PASTE`).
A rule is folded (its words and history a click away); a verdict stays open, its per-seed numbers folded.
"""
from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from .names import display_text, readable
from .palette import CHECK_COLORS, VERDICT_COLORS
from ..rules import verdicts
from ..rules.verdicts import REPRODUCED, RULE_CHANGES, VERDICTS, Verdict
from ..rules.paper import steps_text

assert set(VERDICT_COLORS) == set(VERDICTS)
KEY_RESULTS = "key_results"  # the glue name of a chapter's key-results box
KEY_RESULTS_PASTE = f"```{{glue}} {KEY_RESULTS}\n```"  # what a chapter's first Markdown cell holds under its title
PER_SEED = "; per seed: "  # where a verdict text (verdicts.over_seeds) starts listing every seed's numbers


def _changes_html(claim: str) -> str:
    changes = RULE_CHANGES.get(claim, ())
    if not changes:
        return ""
    items = "".join(f"<li><b>{html.escape(date)}</b>: {html.escape(text)}</li>" for date, text in changes)
    return f"<details><summary>How this rule changed</summary><ul>{items}</ul></details>"


class Rule:
    """The verdict rule of a claim, stated before its result."""

    def __init__(self, claim: str):
        if claim not in verdicts.RULES:
            raise KeyError(f"no rule for {claim!r}")
        self.claim = claim

    def __repr__(self) -> str:
        return f"{self.claim} rule: {verdicts.RULES[self.claim]}"

    def _repr_html_(self) -> str:  # folded: the verdict and the evidence are the reading path, the rule a click away
        return (f'<details class="rule-box"><summary>Rule for {self.claim} (fixed before the result)</summary>'
                f"<p>{html.escape(verdicts.RULES[self.claim])}</p>{_changes_html(self.claim)}</details>")


class Result:
    """A claim's verdict with the numbers that decided it (and, optionally, another rule's verdict beside it)."""

    def __init__(self, claim: str, verdict: Verdict, note: str = "", seeds_open: bool = False):
        """seeds_open: every seed's numbers shown, not folded (for a box that already sits inside a fold)."""
        self.claim, self.note, self.seeds_open = claim, note, seeds_open
        self.verdict = Verdict(verdict.verdict, display_text(verdict.text))  # display names, not code keys

    def __repr__(self) -> str:
        return f"{self.claim}: {self.verdict.verdict} — {self.verdict.text}" + (f" ({self.note})" if self.note else "")

    def _repr_html_(self) -> str:
        color = VERDICT_COLORS[self.verdict.verdict]
        note = f"<p><i>{html.escape(self.note)}</i></p>" if self.note else ""
        lead, _, seeds = self.verdict.text.partition(PER_SEED)  # every seed's numbers: in the table, or folded here
        folded = ("" if not seeds else f"<p>Per seed: {html.escape(seeds)}</p>" if self.seeds_open else
                  f"<details><summary>every seed's numbers</summary><p>{html.escape(seeds)}</p></details>")
        body = f"<div>{fold_failed_checks(lead)}</div>" if FAILED_CHECKS in lead else f"<p>{html.escape(lead)}</p>"
        return (f'<div class="admonition verdict-box" style="border-left-color:{color}">'
                f'<p class="admonition-title">{self.claim}: {chip(self.verdict.verdict)}'
                f"</p>{body}{folded}{note}</div>")


FAILED_CHECKS = " (not: "  # where a rule lists the cells that failed their checks, and why (C10's and R3's arms)


def fold_failed_checks(text: str) -> str:
    """`text` as HTML with each list of failed checks folded in place behind its count (a dozen cells run to a dozen
    lines); the lists nest parentheses, so each ends at the parenthesis that closes it."""
    out, rest = [], text
    while FAILED_CHECKS in rest:
        head, _, tail = rest.partition(FAILED_CHECKS)
        depth, end = 1, len(tail)
        for i, ch in enumerate(tail):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0:
                end = i
                break
        out += [html.escape(head), ' <details class="fold-inline"><summary>which not, and why</summary>',
                html.escape(tail[:end]), "</details>"]
        rest = tail[end + 1:]
    return "".join(out) + html.escape(rest)


SHORT_OF = "short of the rule"  # the column of `seed_verdicts(..., why_only=True)`


def seed_verdicts(rows: dict[str, Verdict], numbers: pd.DataFrame | None = None, why_only: bool = False) -> pd.DataFrame:
    """One row per seed: its deciding numbers (columns of `numbers`, if given), its verdict and the text. With
    `why_only`, the text is only what a seed fell short of ("–" for a seed that meets the rule): the numbers are in
    their own columns (or in a table beside it), not repeated as a run-on string."""
    def short_of(verdict: Verdict) -> str:  # the failed conditions; a verdict that names none says it all
        if "; fails: " in verdict.text:
            return display_text(verdict.text.split("; fails: ", 1)[1])
        return "–" if verdict.verdict == REPRODUCED else display_text(verdict.text)
    text = {k: short_of(v) if why_only else display_text(v.text) for k, v in rows.items()}
    table = pd.DataFrame({"verdict": {k: v.verdict for k, v in rows.items()},
                          SHORT_OF if why_only else "deciding numbers": text})
    if numbers is not None:
        table = readable(numbers).join(table, how="right")
    return table.rename_axis("seed")


# ------------------------------------------------------------------ the key-results box
def chip(word: str) -> str:
    """A verdict word (or a check word, CHECK_COLORS) as a coloured chip: white on the verdict's colour, which reads
    on the light and the dark theme alike."""
    colour = VERDICT_COLORS.get(word) or CHECK_COLORS[word]
    return f'<span class="verdict-chip" style="background:{colour}">{html.escape(word)}</span>'


@dataclass(frozen=True)
class Quote:
    """What the paper says, in its own numbers, and where it says it."""
    text: str
    where: str


@dataclass(frozen=True)
class Answer:
    """One line of our answer: the words with our number, its verdict (a verdict word, or a check word for a chapter
    that checks a setting rather than a claim) and the claim it answers."""
    text: str
    verdict: str
    claim: str = ""

    def __post_init__(self) -> None:
        if self.verdict not in VERDICT_COLORS and self.verdict not in CHECK_COLORS:
            raise ValueError(f"an answer's verdict is one of {(*VERDICTS, *CHECK_COLORS)}, got {self.verdict!r}")

    @classmethod
    def of(cls, claim: str, verdict: Verdict, text: str) -> "Answer":
        """The answer to a claim from its verdict object, in the chapter's words (`text`, written with `wording`)."""
        return cls(display_text(text), verdict.verdict, claim)


class KeyResults:
    """The box that opens a chapter, on its first screen: the question, the paper's answer (quoted, with where the
    paper says it), ours (each line with its number and a verdict chip) and one line on why."""

    def __init__(self, question: str, paper: Sequence[Quote] | Quote, ours: Sequence[Answer] | Answer,
                 why: str | Sequence[str]):
        """why: one line, or its phrases (empty ones left out), joined with semicolons into one sentence."""
        self.question, self.why = question, why if isinstance(why, str) else because(*why)
        self.paper = [paper] if isinstance(paper, Quote) else list(paper)
        self.ours = [ours] if isinstance(ours, Answer) else list(ours)
        if not self.ours:
            raise ValueError("a key-results box needs at least one answer of ours")

    def __repr__(self) -> str:
        lines = [f"Key results: {self.question}"]
        lines += [f"  the paper: {q.text} ({q.where})" for q in self.paper]
        lines += [f"  ours: [{a.verdict}] " + (f"{a.claim} " if a.claim else "") + a.text for a in self.ours]
        return "\n".join([*lines, f"  why: {self.why}"])

    def _repr_html_(self) -> str:
        def esc(text: str) -> str:  # escaped, with `code` as code
            return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))
        paper = "".join(f'<dd>“{esc(q.text)}” <span class="key-results-source">({esc(q.where)})</span></dd>'
                        for q in self.paper) or "<dd>no statement</dd>"
        ours = "".join(f"<dd>{chip(a.verdict)} " + (f"<b>{esc(a.claim)}</b> " if a.claim else "") + f"{esc(a.text)}</dd>"
                       for a in self.ours)
        return (f'<div class="key-results"><p class="key-results-question">{esc(self.question)}</p><dl>'
                f"<dt>The paper</dt>{paper}<dt>Ours</dt>{ours}<dt>Why</dt><dd>{esc(self.why)}</dd></dl></div>")


def because(*phrases: str) -> str:
    """Phrases as one sentence: the empty ones left out, the rest joined with semicolons, the first letter capitalised
    and a full stop at the end ('Only 5 of 10 seeds compose; seed 51 without a jump.')."""
    found = [p.strip() for p in phrases if p and p.strip()]
    text = "; ".join(found)
    return text[:1].upper() + text[1:] + ("" if not text or text.endswith(".") else ".")


class History:
    """A dated list (a rule's or a detector's history), folded under a title: the book shows its summary, a click opens
    it; a terminal reads every item."""

    def __init__(self, title: str, items: Sequence[tuple[str, str]]):
        self.title, self.items = title, list(items)

    def __repr__(self) -> str:
        return "\n".join([self.title, *(f"  {when}: {text}" for when, text in self.items)])

    def _repr_html_(self) -> str:
        items = "".join(f"<li><b>{html.escape(when)}</b>: {html.escape(text)}</li>" for when, text in self.items)
        return f'<details class="history"><summary>{html.escape(self.title)}</summary><ul>{items}</ul></details>'


def _glue(name: str, value) -> None:
    from myst_nb import glue  # a slow import, here; the book's glue: kept in the cell's outputs, shown where pasted
    glue(name, value, display=False)


def glue_key_results(box: KeyResults) -> KeyResults:
    """Glue the chapter's key-results box under KEY_RESULTS; its first Markdown cell pastes it (KEY_RESULTS_PASTE)."""
    _glue(KEY_RESULTS, box)
    return box


def glue_text(**texts: object) -> None:
    """Glue each value's text under its name, for the prose: {glue:text}`name`. Numbers are glued as the text the
    chapter chose for them (`wording`), never as a float for the page to format."""
    for name, text in texts.items():
        _glue(name, str(text))


NOT_HERE = "not run here"  # what a phrase reads where the runs it reads are not in this runs folder (a fork's)


def glue_text_when(ready: bool, names: str, phrases, otherwise: str = NOT_HERE) -> None:
    """Glue the phrases of a part of the prose that reads runs which may be missing: where `ready`, `phrases()` (a
    callable returning {name: phrase}, called only then, whose names must be exactly `names`, space-separated); else
    every one of `names` as `otherwise`, so that the page builds and says what is missing."""
    expected = names.split()
    if not ready:
        glue_text(**dict.fromkeys(expected, otherwise))
        return
    found = phrases()
    if sorted(found) != sorted(expected):
        raise ValueError(f"the phrases glued ({', '.join(sorted(found))}) are not the names stated"
                         f" ({', '.join(sorted(expected))})")
    glue_text(**found)


def glue_markdown(**texts: str) -> None:
    """Glue each Markdown text under its name, for the prose: {glue:md}`name` (a phrase with emphasis or a link)."""
    from IPython.display import Markdown  # here, not at the top: a slow import (IPython)
    for name, text in texts.items():
        _glue(name, Markdown(text))


def paper_number(number, text: str | None = None) -> str:
    """A number of the paper's (`paper.PaperNumber`) as the prose shows it: its text (default: the number, a window
    of steps as '5,300–5,400') marked with where the paper states it, which a reader sees on hovering."""
    value = number.value
    shown = text if text is not None else (steps_text(number) if isinstance(value, tuple) else f"{value:,}")
    return (f'<span class="paper-number" title="{html.escape("the paper: " + number.where, quote=True)}">'
            f"{html.escape(shown)}</span>")


def quote(number, text: str) -> Quote:
    """What the paper says (`text`, in its words and numbers) with where it says it, from a `paper.PaperNumber`: the
    place, without the note after its colon ('training-dynamics figure')."""
    where = number.where.split(":")[0]
    return Quote(text, where if where.startswith("the paper") else "the paper: " + where)
